"""The read-only view of the file system that observation is handed.

It has no method that writes: a dry run cannot mutate by construction.
Reads have a size limit and go through the stat cache; once ``confine``d to
a root, every path below it is reached through folder descriptors opened
from the root down (anchor.py), so what it reads there is inside the root
whatever link is put in the way meanwhile.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from trueup.anchor import ANCHORED, O_DIR, O_NOFOLLOW, Anchor, named
from trueup.errors import ConflictError, UsageError
from trueup.fsops import DEFAULT_MAX_FILE_BYTES, O_CLOEXEC, parent_of
from trueup.statcache import StatCache, Witness, stat_key, witness_of

TEMP_MARK = ".trueup-tmp-"
#: The digest of a live file over the size limit (``walk(big=True)``): never a sha256.
OVERSIZED_DIGEST = "over-the-size-limit:"
#: What a path holds when nothing is there (``held_at``).
ABSENT_OUTCOME = "absent"
_MAX_LINKS = 40  # as the kernel's own limit on a chain of symlinks
# O_NONBLOCK: a file swapped for a pipe since its lstat reads empty, not forever.
_O_READ = os.O_RDONLY | os.O_NONBLOCK | O_CLOEXEC
#: Folders deeper than this are refused, not walked (a tree, not a path: see paths.py).
MAX_TREE_DEPTH = 256


class FileTooLargeError(UsageError):
    """A file over the configured size limit; trueup will not load it."""


class Entry(NamedTuple):
    """One node of an observed tree (never following symlinks).

    A named tuple: a tree of 10,000 files builds 10,000 of them per walk.
    """

    state: str  # file | symlink | directory | special | blocked (a parent is not a folder)
    digest: str | None = None
    executable: bool = False
    link: str | None = None


def source_changed(path: str) -> ConflictError:
    return ConflictError(
        f"source {path} changed after the plan was computed", hint="compute the plan again"
    )


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_executable(mode: int) -> bool:
    return bool(mode & stat.S_IXUSR)


class ReadOnlyFS:
    """Reads with a size limit and a stat cache; offers nothing that writes.

    With ``witness`` (a dict), every path it looks at is recorded with its
    ``witness_of`` stat, so a caller knows exactly what a result was computed
    from (plan/memo.py).

    Once ``confine``d to a root, every path below it is reached through
    descriptors opened from the root down (anchor.py): what it reads there is
    what is inside the root, whatever link is put in the way meanwhile.
    """

    def __init__(
        self,
        cache: StatCache | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        witness: dict[str, Witness] | None = None,
        observes_only: bool = True,
    ) -> None:
        #: Whether this view only observes, in one pass: a folder seen missing then
        #: stays so for it (the writes of a writer wrapping it would make that untrue).
        self.observes_only = observes_only
        self.cache = cache if cache is not None else StatCache()
        self.max_file_bytes = max_file_bytes
        self.witness = witness
        # Folders seen missing (and seen there) while observing: only a file system
        # that never writes may trust them for the rest of its life (see entry).
        self._missing_folders: set[str] = set()
        self._present_folders: set[str] = set()
        self.anchor: Anchor | None = None

    def confine(self, root: Path | str) -> None:
        """Reach every path below ``root`` from the root down from now on.

        One file system serves one root: observing a second one with it would
        mix what each holds.
        """
        real = os.path.realpath(root)
        if self.anchor is None:
            if ANCHORED:
                self.anchor = Anchor(real)
        elif self.anchor.root != real:
            raise ValueError(f"a file system confined to {self.anchor.root} asked for {real}")

    def allow(self, folder: str) -> bool:
        """Reach ``folder`` (real), outside the root, from itself down too (a resource's
        ``follow_links``); False where this view cannot (not confined to a root, where
        the platform has folder descriptors), True where every path goes by name."""
        if self.anchor is not None:
            self.anchor.allow(folder)
            return True
        return not ANCHORED

    def allowed(self) -> list[str]:
        """The folders outside the root ``allow``ed so far."""
        return self.anchor.allowed if self.anchor is not None else []

    def close(self) -> None:
        """Close the descriptors held below the root; it is reopened when used again."""
        if self.anchor is not None:
            self.anchor.close()

    def at(self, path: str) -> tuple[int | None, str]:
        """``path`` as a folder descriptor and a name when it is below the root, else as
        it is (a source, the profile); raises as ``lstat`` of a missing parent would."""
        if self.anchor is not None:
            found = self.anchor.at(path)
            if found is not None:
                return found
        return None, path

    def lstat_strict(self, path: str, at: tuple[int | None, str] | None = None) -> os.stat_result:
        """``os.lstat`` of ``path``, reached as ``at`` says (already looked up) or afresh."""
        folder, name = self.at(path) if at is None else at
        try:
            return os.lstat(name, dir_fd=folder)
        except OSError as exc:
            raise named(exc, path) from None

    def lstat(self, path: Path | str) -> os.stat_result | None:
        key = os.fspath(path)
        try:
            st: os.stat_result | None = self.lstat_strict(key)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        if self.witness is not None:
            self.witness[key] = witness_of(st)
        return st

    def follow(self, path: Path | str, absolute: bool = False) -> tuple[str, os.stat_result | None]:
        """Where ``path`` leads and its stat, with every symlink on the way witnessed.

        What is read through a link depends on the link and on what it points
        at: witnessing only the real file would miss the link being pointed
        elsewhere, and witnessing only the link would miss an edit of its
        target. Links in the middle of the path are covered by the witness of
        the path itself, whose stat is that of what they lead to.
        """
        current = os.fspath(path) if absolute else os.path.abspath(path)
        for hops in range(_MAX_LINKS):
            st = self.lstat(current)
            if st is None or not stat.S_ISLNK(st.st_mode):
                if hops == 0:
                    return current, st
                # Spelt as the kernel resolves it (a ".." after a linked folder).
                real = os.path.realpath(current)
                return real, self.lstat(real)
            current = os.path.join(os.path.dirname(current), self.readlink(current))
        raise UsageError(f"{path}: too many levels of symbolic links")

    def _seen(self, path: Path | str, st: os.stat_result) -> None:
        if self.witness is not None:
            self.witness[os.fspath(path)] = witness_of(st)

    def read_bytes(self, path: Path | str, st: os.stat_result | None = None) -> bytes:
        key = os.fspath(path)
        if st is None:
            st = self.lstat_strict(key)
        self._seen(key, st)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            # A pipe would block the read until somebody writes to it: never opened.
            raise ConflictError(
                f"{key} is a pipe, socket or device, not a file; trueup neither reads nor "
                "replaces it",
                hint="move it out of the way, then plan again",
            )
        hit = self.cache.contents.get(key)
        if hit is not None and hit[0] == stat_key(st):
            return hit[2]
        # A link is read through (a config file kept elsewhere by a dotfiles tool).
        return self._read(key, st.st_size, follow=stat.S_ISLNK(st.st_mode))

    def _read(
        self, key: str, size: int, follow: bool = False, at: tuple[int | None, str] | None = None
    ) -> bytes:
        # Plain os calls: open() costs a buffered file object per file
        # (bench/README.md). Ask for the size stat gave (+1 to
        # notice growth), not the limit, which would allocate 16 MiB a file.
        self.check_size(key, size)
        folder, name = self.at(key) if at is None else at
        # O_NONBLOCK: a file swapped for a pipe since its lstat reads empty, not forever;
        # O_NOFOLLOW: nor is one swapped for a link read through.
        flags = _O_READ if follow else _O_READ | O_NOFOLLOW
        try:
            fd = os.open(name, flags, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP and not follow:
                raise ConflictError(
                    f"{key} became a symlink while trueup read it; it was not read",
                    hint="compute the plan again",
                ) from None
            raise named(exc, key) from None
        try:
            data = os.read(fd, size + 1)
            while len(data) <= self.max_file_bytes and len(data) > size:
                more = os.read(fd, self.max_file_bytes + 1 - len(data))
                if not more:
                    break
                data += more
        finally:
            os.close(fd)
        if len(data) > size:
            self.check_size(key, len(data))
        return data

    def check_size(self, path: Path | str, size: int) -> None:
        if size > self.max_file_bytes:
            raise FileTooLargeError(
                f"{path} is {size} bytes, over the file-size limit of {self.max_file_bytes} bytes",
                hint="raise the limit with --max-file-bytes if trueup should read files this big "
                "(a source, or a target it compares), or leave this one out of the profile",
            )

    def digest_file(
        self,
        path: Path | str,
        st: os.stat_result | None = None,
        at: tuple[int | None, str] | None = None,
    ) -> str:
        """The sha256 of a regular file, from the stat cache when it is safe to.

        ``at``: the folder descriptor and name to read it by, when the caller
        holds them (a walk). Run once per file of every tree, so the stat key,
        the witness and the clock are each taken once here rather than in helpers.
        """
        key = os.fspath(path)
        if st is None:
            st = self.lstat_strict(key)
        size = st.st_size
        skey = (size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        if self.witness is not None:
            self.witness[key] = (st.st_mode, *skey)
        self.check_size(key, size)  # a known digest does not lift the limit
        cache = self.cache
        cached = cache.known(key, skey)
        if cached is not None:
            return cached
        data = self._read(key, size, at=at)
        digest = hashlib.sha256(data).hexdigest()
        cache.learn(key, skey, digest, data, time.time_ns())
        return digest

    def read_expected(self, path: Path | str, digest: str) -> bytes:
        """The bytes a plan was computed from, refused if ``path`` no longer holds them.

        Bytes remembered with that digest earlier in the run (same stat) are
        not read or hashed again, and a file the stat cache knows by that digest
        (the rule the plan itself trusted) is read but not hashed again; either
        way the written target is hashed once more when it is verified.
        """
        key = os.fspath(path)
        at = self.at(key)
        st = self.lstat_strict(key, at)
        if self.witness is not None:
            self.witness[key] = witness_of(st)
        skey = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        hit = self.cache.contents.get(key)
        if hit is not None and hit[0] == skey and hit[1] == digest:
            return hit[2]
        data = self._read(key, st.st_size, stat.S_ISLNK(st.st_mode), at)
        if self.cache.known(key, skey) != digest and sha256_bytes(data) != digest:
            raise source_changed(key)
        return data

    def readlink(self, path: Path | str) -> str:
        folder, name = self.at(os.fspath(path))
        return os.readlink(name, dir_fd=folder)

    def held_at(self, path: str) -> str:
        """What ``path`` holds now, spelt as ``WritableFS.outcomes`` spells it."""
        try:
            st = self.lstat_strict(path)
        except (FileNotFoundError, NotADirectoryError):
            return ABSENT_OUTCOME
        if stat.S_ISLNK(st.st_mode):
            return "link:" + self.readlink(path)
        if stat.S_ISREG(st.st_mode):
            return "file:" + sha256_bytes(self._read(path, st.st_size))
        return "other"

    def entry(self, path: Path | str, st: os.stat_result | None = None) -> Entry | None:
        """Observe one path without following a symlink; ``None`` when absent."""
        key = os.fspath(path)
        if st is None:
            if self._missing_folders and parent_of(key) in self._missing_folders:
                return self._absent(key, blocked=False)
            try:
                st = self.lstat_strict(key)
            except (FileNotFoundError, NotADirectoryError) as missing:
                if self.observes_only:
                    self._note_missing(os.path.dirname(key))
                # A file where a folder of the path should be: nothing can go there.
                return self._absent(key, blocked=isinstance(missing, NotADirectoryError))
        mode = st.st_mode
        if stat.S_ISREG(mode):  # digest_file is its witness
            return Entry("file", self.digest_file(key, st), is_executable(mode))
        self._seen(key, st)
        if stat.S_ISLNK(mode):
            return Entry("symlink", link=self.readlink(key))
        if stat.S_ISDIR(mode):
            return Entry("directory")
        return Entry("special")

    def _absent(self, path: str, blocked: bool) -> Entry | None:
        if self.witness is not None:
            self.witness[path] = None
        return Entry("blocked") if blocked else None

    def _note_missing(self, folder: str) -> None:
        """Remember ``folder`` as missing, if it is (not merely under a file: that is
        "blocked"), so the other paths of a tree planned into an empty root are
        known absent without a failed lstat each."""
        if folder in self._missing_folders or folder in self._present_folders:
            return
        try:
            self.lstat_strict(folder)
        except FileNotFoundError:
            self._missing_folders.add(folder)
            return
        except OSError:
            pass
        self._present_folders.add(folder)

    def _folders(self, root: str) -> Iterator[tuple[int, str, str, list[os.DirEntry[str]]]]:
        """Every folder from ``root`` down, depth first: its descriptor (open until the
        next folder is asked for), its path, its path relative to ``root`` (``a/b/``)
        and its entries, temp files left out.

        Each folder is opened from its parent's descriptor without following a
        link, and only the folders on the way down are held open, so a tree
        of any width costs as many descriptors as it is deep; deeper than
        ``MAX_TREE_DEPTH`` is refused rather than walked.
        """
        try:
            if self.anchor is not None and self.anchor.holds(root):
                top = os.dup(self.anchor.folder(root))
            else:
                top = os.open(root, O_DIR)
        except (FileNotFoundError, NotADirectoryError):
            return
        # Each open folder: its descriptor, path, relative path, subfolders left.
        stack: list[tuple[int, str, str, Iterator[str]]] = []
        try:
            fd, path, rel = top, root, ""
            while True:
                with os.scandir(fd) as scan:
                    entries = [e for e in scan if TEMP_MARK not in e.name]
                yield fd, path, rel, entries
                subdirs = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
                stack.append((fd, path, rel, iter(subdirs)))
                fd = -1
                while stack:
                    parent, ppath, prel, todo = stack[-1]
                    name = next(todo, None)
                    if name is None:
                        os.close(stack.pop()[0])
                        continue
                    if len(stack) >= MAX_TREE_DEPTH:
                        raise UsageError(
                            f"{ppath}: folders nested over {MAX_TREE_DEPTH} deep; trueup does "
                            "not walk a tree that deep",
                            hint="move the deep part out of the tree, or declare a folder "
                            "inside it",
                        )
                    try:
                        fd = os.open(name, O_DIR | O_NOFOLLOW, dir_fd=parent)
                    except (FileNotFoundError, NotADirectoryError):
                        continue  # gone, or swapped for a file or a link, since the scan
                    except OSError as exc:
                        if exc.errno == errno.ELOOP:
                            continue
                        raise
                    path, rel = f"{ppath}/{name}", f"{prel}{name}/"
                    break
                if fd < 0:
                    return
        finally:
            for held, *_ in stack:
                os.close(held)

    def names(self, folder: str) -> list[str]:
        """The names in ``folder``, temp files too (a sweep looks for them)."""
        if self.anchor is not None and self.anchor.holds(folder):
            fd = os.dup(self.anchor.folder(folder))
        else:
            fd = os.open(folder, O_DIR)
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    def listing(self, root: Path | str, most: int) -> list[str] | None:
        """Relative paths of everything below ``root``, folders too, read from names
        only; ``None`` past ``most`` entries (or where a folder cannot be read)."""
        found: list[str] = []
        base = os.fspath(root)
        self.lstat(base)  # a folder's stat changes when entries come or go: a witness
        try:
            for _, path, rel, entries in self._folders(base):
                if path != base:
                    self.lstat(path)
                for item in entries:
                    found.append(rel + item.name)
                    if len(found) > most:
                        return None
        except PermissionError:
            return None
        return sorted(found)

    def walk(self, root: Path | str, big: bool = False) -> dict[str, Entry]:
        """Every entry below ``root`` by relative POSIX path, one scandir per folder.

        ``big``: a file over the size limit is not read but named by its size
        and time (``OVERSIZED``...): a live tree may hold a big file trueup has
        nothing to do with, while a source must be read whole, so it raises.
        """
        found: dict[str, Entry] = {}
        base = os.fspath(root)
        self.lstat(base)  # a folder's stat changes when entries come or go: a witness
        for fd, path, rel, entries in self._folders(base):
            for item in entries:
                name = item.name
                child = f"{path}/{name}"
                if not name.isascii():
                    _recordable(child)
                st = item.stat(follow_symlinks=False)
                mode = st.st_mode
                if not stat.S_ISREG(mode):
                    node = self.entry(child, st)
                    if node is not None:
                        found[rel + name] = node
                elif big and st.st_size > self.max_file_bytes:
                    self._seen(child, st)
                    found[rel + name] = Entry(
                        "file",
                        f"{OVERSIZED_DIGEST}{st.st_size}:{st.st_mtime_ns}",
                        is_executable(mode),
                    )
                else:  # read by the folder's own descriptor, opened on the way down
                    digest = self.digest_file(child, st, (fd, name))
                    found[rel + name] = Entry("file", digest, is_executable(mode))
        return found


def _recordable(path: str) -> None:
    """Refuse a name that is not UTF-8: it could be neither recorded nor shown as it is."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise UsageError(
            f"{shown}: a file name that is not UTF-8; trueup can neither record nor show it",
            hint="rename it (for example with convmv), or move it out of the tree",
        ) from None
