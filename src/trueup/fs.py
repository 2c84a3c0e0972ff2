"""All file-system effects go through these two classes.

Observation is handed a ``ReadOnlyFS``, which has no method that writes: a dry
run cannot mutate by construction. Apply gets a ``WritableFS``, whose writes
are staged as temp files beside their targets and made durable in batches
(one sync of the file system, then the renames, then one fsync per touched
directory), which is as safe as fsync-per-file and much faster for big trees.

A folder that does not exist yet is staged whole: made under a temp name beside
where it goes, its files written in it under their own names, flushed with the
rest, and renamed into place (never over anything that appeared there) at
commit. Its files appear all at once with it, as complete as after their own
renames, and a first apply of 10,000 files in 100 new folders renames 100
folders instead of 10,000 files. A killed run's temp folder is swept by
recover or abandon like a temp file (``RollbackStore.sweep_temp_files``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from trueup.anchor import ANCHORED, O_DIR, O_NOFOLLOW, Anchor, OutsideRoot, named
from trueup.crashpoints import reach
from trueup.errors import ConflictError, UsageError
from trueup.fsops import (
    DEFAULT_MAX_FILE_BYTES,
    O_CLOEXEC,
    POSIX_PATHS,
    SYNCFS_BATCH,
    create_temp,
    rename_exclusive,
    syncfs_all,
    syncfs_fd,
    witness,
)

if TYPE_CHECKING:
    from trueup.readahead import ReadAhead

TEMP_MARK = ".trueup-tmp-"
#: The digest of a live file over the size limit (``walk(big=True)``): never a sha256.
OVERSIZED_DIGEST = "over-the-size-limit:"
# A recorded stat is trusted only when the file's mtime is older than the
# recording by more than the coarsest timestamp granularity in common use
# (FAT: 2 s); a newer file might have been rewritten within the same tick.
RACY_WINDOW_NS = 2_000_000_000

StatKey = tuple[int, int, int, int]
Witness = tuple[int, int, int, int, int] | None
_EUID = os.geteuid() if hasattr(os, "geteuid") else -1
_MAX_LINKS = 40  # as the kernel's own limit on a chain of symlinks
# O_NONBLOCK: a file swapped for a pipe since its lstat reads empty, not forever.
_O_READ = os.O_RDONLY | os.O_NONBLOCK | O_CLOEXEC
_O_DIR = O_DIR
#: Folders deeper than this are refused, not walked (a tree, not a path: see paths.py).
MAX_TREE_DEPTH = 256
# A temp name adds ".", the mark, the run id and a counter (~50 bytes) to the target's.
_LONG_NAME = 160


class FileTooLargeError(UsageError):
    """A file over the configured size limit; trueup will not load it."""


def racy(mtime_ns: int, ctime_ns: int, recorded_ns: int) -> bool:
    """Whether a stat taken at ``recorded_ns`` could miss a later same-size rewrite.

    git's rule: an mtime within the window of the recording may be shared by
    a rewrite in the same tick. On a file system with whole-second change
    times (FAT, some network mounts), a rewrite whose mtime was set back keeps
    a recent ctime too, so a recent whole-second ctime is racy as well; on
    nanosecond file systems a ctime of exactly 0 ns past a second is a one in
    a billion chance, which costs a rehash, nothing more.
    """
    trusted_before = recorded_ns - RACY_WINDOW_NS
    return mtime_ns >= trusted_before or (
        ctime_ns % 1_000_000_000 == 0 and ctime_ns >= trusted_before
    )


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


CacheEntry = tuple[StatKey, str, int]
# Remembered file contents: small files only, 64 MiB in all (10,000 files of
# a few KB fit; a tree of large files is read twice instead).
CONTENTS_MAX_FILE = 1024 * 1024
CONTENTS_BUDGET = 64 * 1024 * 1024
#: The read-ahead skips the first 1/AHEAD_SHARE of the paths (ReadOnlyFS.read_ahead).
AHEAD_SHARE = 3


@dataclass
class StatCache:
    """Digests of unchanged files, recognised by their stat, as git's index does.

    With a ``loader``, entries are fetched folder by folder (its whole subtree
    in one query) the first time a path there is looked up, so memory follows
    what a run touches, not everything this host ever hashed.
    """

    entries: dict[str, CacheEntry] = field(default_factory=dict)
    dirty: dict[str, CacheEntry] = field(default_factory=dict)
    loader: Callable[[str], dict[str, CacheEntry]] | None = None
    loaded: set[str] = field(default_factory=set)
    #: Bytes of small files hashed this run, trusted by the same rule as the
    #: digests: a source read to plan is not read again to write it.
    contents: dict[str, tuple[StatKey, str, bytes]] = field(default_factory=dict)
    contents_budget: int = CONTENTS_BUDGET
    #: Sources being read by a second process (readahead.py): learned on the
    #: first miss, by whichever file system of the run has it.
    ahead: ReadAhead | None = None

    def lookup(self, path: str, st: os.stat_result) -> str | None:
        return self.known(path, stat_key(st))

    def known(self, path: str, key: StatKey) -> str | None:
        """The digest recorded for ``path`` if ``key`` is its stat and not racy."""
        hit = self.entries.get(path)
        if hit is None and self.loader is not None:
            if racy(key[1], key[3], time.time_ns()):
                # Too new for any record to vouch for (a file just written, when
                # verified): no need to fetch its folder's records.
                return None
            self._load_around(path)
            hit = self.entries.get(path)
        if hit is None or hit[0] != key or racy(key[1], key[3], hit[2]):
            return None
        return hit[1]

    def vouching(self, path: str, digest: str) -> StatKey | None:
        """The stat under which ``path`` is known to hash to ``digest`` (not racy), if any:
        a file found with that stat holds those bytes, by the rule ``known`` follows."""
        hit = self.entries.get(path)
        if hit is None or hit[1] != digest or racy(hit[0][1], hit[0][3], hit[2]):
            return None
        return hit[0]

    def _load_around(self, path: str) -> None:
        folder = os.path.dirname(path)
        ancestor = folder
        while ancestor not in self.loaded:
            parent = os.path.dirname(ancestor)
            if parent == ancestor:
                break
            ancestor = parent
        else:
            return
        assert self.loader is not None
        for key, entry in self.loader(folder).items():
            self.entries.setdefault(key, entry)
        self.loaded.add(folder)

    def record(self, path: str, st: os.stat_result, digest: str) -> None:
        """Remember a digest, unless the file is too new to be trusted by its stat.

        A racy entry would be ignored by every lookup until re-recorded, so
        storing one (10,000 rows after a first apply) buys nothing.
        """
        self.learn(path, stat_key(st), digest, None, time.time_ns())

    def learn(self, path: str, key: StatKey, digest: str, data: bytes | None, now_ns: int) -> None:
        """Record ``digest`` (and keep ``data``, when given) for a file hashed at ``now_ns``.

        Both only for a file older than the racy window: a racy entry would
        be ignored by every lookup until re-recorded, so storing one (10,000
        rows after a first apply) buys nothing, and racy bytes are not trusted.
        """
        if racy(key[1], key[3], now_ns):
            return
        old = self.entries.get(path)
        if old is None or old[0] != key or old[1] != digest or racy(key[1], key[3], old[2]):
            entry = (key, digest, now_ns)
            self.entries[path] = entry
            self.dirty[path] = entry
        if data is not None and len(data) <= min(CONTENTS_MAX_FILE, self.contents_budget):
            self.contents[path] = (key, digest, data)
            self.contents_budget -= len(data)


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


def witness_of(st: os.stat_result | None) -> Witness:
    """What a path looked like: its type and stat key, or ``None`` when absent."""
    return None if st is None else witness(st)


class ReadOnlyFS:
    """Reads with a size limit and a stat cache; offers nothing that writes.

    With ``witness`` (a dict), every path it looks at is recorded with its
    ``witness_of`` stat, so a caller knows exactly what a result was computed
    from (plan/memo.py).

    Once ``confine``d to a root, every path below it is reached through
    descriptors opened from the root down (anchor.py): what it reads there is
    what is inside the root, whatever link is put in the way meanwhile.
    """

    #: Whether this file system only observes, in one pass: a folder seen missing
    #: then stays so for it (a write of its own would make that untrue).
    observes_only = True

    def __init__(
        self,
        cache: StatCache | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        witness: dict[str, Witness] | None = None,
    ) -> None:
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

    def close(self) -> None:
        """Close the descriptors held below the root; it is reopened when used again."""
        if self.anchor is not None:
            self.anchor.close()

    def _at(self, path: str) -> tuple[int | None, str]:
        """``path`` as a folder descriptor and a name when it is below the root, else as
        it is (a source, the profile); raises as ``lstat`` of a missing parent would."""
        anchor = self.anchor
        if anchor is not None and anchor.covers(path):
            return anchor.parent(path)
        return None, path

    def _lstat(self, path: str) -> os.stat_result:
        folder, name = self._at(path)
        try:
            return os.lstat(name, dir_fd=folder)
        except OSError as exc:
            raise named(exc, path) from None

    def read_ahead(self, profile: str, sources: Callable[[], list[str]]) -> None:
        """Have the ``sources`` that ``profile`` declares hashed by a second process
        meanwhile (readahead.py).

        The one the command started early for this profile reads them all; one
        started now takes the last two thirds, and this process, which goes
        through them in order, reads the first third itself meanwhile. Only
        digests come back: whatever is written from a source is read again by
        whoever writes it (``WritableFS.copy``).
        """
        from trueup.readahead import ReadAhead, take_early

        ahead = take_early(profile)
        self.stop_read_ahead()
        if ahead is None:
            paths = sources()
            ahead = ReadAhead.start(paths[len(paths) // AHEAD_SHARE :], self.max_file_bytes)
        self.cache.ahead = ahead

    def stop_read_ahead(self) -> None:
        """Stop a read-ahead whose results are not needed (any more), and any started
        early for a profile this command did not load."""
        from trueup.readahead import stop_early

        ahead, self.cache.ahead = self.cache.ahead, None
        if ahead is not None:
            ahead.close()
        stop_early()

    def _caught_up(self, path: str) -> bool:
        """Learn what the read-ahead read, on a miss of a path it was asked for once it
        has read them all (once: it is spent then); whether it did. Until then this
        process reads for itself rather than wait."""
        ahead = self.cache.ahead
        if ahead is None or not ahead.wanted(path) or not ahead.ready():
            return False
        self.cache.ahead = None
        ahead.drain(self.cache)
        return True

    def lstat(self, path: Path | str) -> os.stat_result | None:
        key = os.fspath(path)
        try:
            st: os.stat_result | None = self._lstat(key)
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
            st = self._lstat(key)
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

    def _read(self, key: str, size: int, follow: bool = False) -> bytes:
        # Plain os calls: open() costs a buffered file object (~10 us a file,
        # a tenth of a second per 10,000). Ask for the size stat gave (+1 to
        # notice growth), not the limit, which would allocate 16 MiB a file.
        self._check_size(key, size)
        folder, name = self._at(key)
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
            self._check_size(key, len(data))
        return data

    def _check_size(self, path: Path | str, size: int) -> None:
        if size > self.max_file_bytes:
            raise FileTooLargeError(
                f"{path} is {size} bytes, over the file-size limit of {self.max_file_bytes} bytes",
                hint="raise the limit with --max-file-bytes if trueup should read files this big "
                "(a source, or a target it compares), or leave this one out of the profile",
            )

    def digest_file(self, path: Path | str, st: os.stat_result | None = None) -> str:
        """The sha256 of a regular file, from the stat cache when it is safe to.

        Run once per file of every tree, so the stat key, the witness and the
        clock are each taken once here rather than in helpers.
        """
        key = os.fspath(path)
        if st is None:
            st = self._lstat(key)
        skey = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        if self.witness is not None:
            self.witness[key] = (st.st_mode, *skey)
        self._check_size(key, st.st_size)  # a known digest does not lift the limit
        cache = self.cache
        cached = cache.known(key, skey)
        if cached is None and self._caught_up(key):
            cached = cache.known(key, skey)
        if cached is not None:
            return cached
        data = self._read(key, st.st_size)
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
        st = self._lstat(key)
        self._seen(key, st)
        skey = stat_key(st)
        hit = self.cache.contents.get(key)
        if hit is None and self._caught_up(key):
            hit = self.cache.contents.get(key)
        if hit is not None and hit[0] == skey and hit[1] == digest:
            return hit[2]
        data = self._read(key, st.st_size, follow=stat.S_ISLNK(st.st_mode))
        if self.cache.known(key, skey) != digest and sha256_bytes(data) != digest:
            raise source_changed(key)
        return data

    def readlink(self, path: Path | str) -> str:
        folder, name = self._at(os.fspath(path))
        return os.readlink(name, dir_fd=folder)

    def held_at(self, path: str) -> str:
        """What ``path`` holds now, spelt as ``WritableFS.outcomes`` spells it."""
        try:
            st = self._lstat(path)
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
            if self._missing_folders and os.path.dirname(key) in self._missing_folders:
                return self._absent(key, blocked=False)
            try:
                st = self._lstat(key)
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
            self._lstat(folder)
        except FileNotFoundError:
            self._missing_folders.add(folder)
            return
        except OSError:
            pass
        self._present_folders.add(folder)

    def _folders(self, root: str) -> Iterator[tuple[str, str, list[os.DirEntry[str]]]]:
        """Every folder from ``root`` down, depth first: its path, its path relative to
        ``root`` (``a/b/``) and its entries, temp files left out.

        Each folder is opened from its parent's descriptor without following a
        link, and only the folders on the way down are held open, so a tree
        of any width costs as many descriptors as it is deep; deeper than
        ``MAX_TREE_DEPTH`` is refused rather than walked.
        """
        try:
            if self.anchor is not None and self.anchor.holds(root):
                top = os.dup(self.anchor.folder(root))
            else:
                top = os.open(root, _O_DIR)
        except (FileNotFoundError, NotADirectoryError):
            return
        # Each open folder: its descriptor, path, relative path, subfolders left.
        stack: list[tuple[int, str, str, Iterator[str]]] = []
        try:
            fd, path, rel = top, root, ""
            while True:
                with os.scandir(fd) as scan:
                    entries = [e for e in scan if TEMP_MARK not in e.name]
                yield path, rel, entries
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
                        fd = os.open(name, _O_DIR | O_NOFOLLOW, dir_fd=parent)
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
            fd = os.open(folder, _O_DIR)
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
            for path, rel, entries in self._folders(base):
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
        for path, rel, entries in self._folders(base):
            for item in entries:
                if not item.name.isascii():
                    _recordable(f"{path}/{item.name}")
                st = item.stat(follow_symlinks=False)
                child = f"{path}/{item.name}"
                if big and stat.S_ISREG(st.st_mode) and st.st_size > self.max_file_bytes:
                    self._seen(child, st)
                    found[rel + item.name] = Entry(
                        "file",
                        f"{OVERSIZED_DIGEST}{st.st_size}:{st.st_mtime_ns}",
                        is_executable(st.st_mode),
                    )
                    continue
                node = self.entry(child, st)
                if node is not None:
                    found[rel + item.name] = node
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


@dataclass(slots=True)
class _Staged:
    temp: str
    final: str
    #: A real folder (not a link to one) is where the file goes: removed at commit.
    replaces_dir: bool = False
    #: The target was absent when planned: the rename refuses to replace anything.
    exclusive: bool = False
    #: Where it waits: beside its target (""), in the nearest folder there is until
    #: its own is made at commit (DEFERRED), or under its own name in a folder this
    #: batch makes whole and renames into place at commit (IN_NEW_FOLDER).
    how: str = ""
    #: A regular file (flushed before its rename), not a link.
    is_file: bool = True


#: A staged file whose folder is made at commit, once the file in its way, removed
#: by the same batch, is gone.
DEFERRED = "deferred"
#: A staged file in a folder that did not exist: made under a temp name, with the
#: files in it under their own names, and renamed into place whole at commit.
IN_NEW_FOLDER = "in-new-folder"


class _Place(NamedTuple):
    """Where a staged file or link is made: ``folder``, and ``how`` (``_Staged.how``)."""

    folder: str
    how: str = ""


class TargetAppeared(ConflictError):
    """Something appeared at a target planned absent; nothing was put over it."""

    def __init__(self, path: str, what: str = "appeared") -> None:
        super().__init__(
            f"{path} {what} after the plan was computed; it was left as it is",
            hint="compute the plan again and review it",
        )
        self.path = path


class WritableFS(ReadOnlyFS):
    """Writes staged beside their targets and committed durably in batches.

    Below its root every effect (create, write, rename, unlink, mkdir, chmod,
    chown, read-back) is made relative to a folder descriptor reached from the
    root down; the folders a batch used are checked again right before its
    renames and forgotten after them, so a folder swapped for a link while the
    run is under way fails the run (``OutsideRoot``) instead of redirecting it.
    """

    observes_only = False

    def __init__(
        self,
        cache: StatCache | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        tag: str = "",
    ) -> None:
        super().__init__(cache, max_file_bytes)
        self.tag = tag or str(os.getpid())
        self._staged: list[_Staged] = []
        # Paths to remove at commit, in order (a dict: looked up by ``_place`` too).
        self._removals: dict[str, None] = {}
        # What each staged path will hold after commit (see ``outcomes``).
        self._outcomes: dict[str, str] = {}
        self._prunes: list[tuple[str, str]] = []
        self._dirs: set[str] = set()
        # Folders seen to exist: a tree of 10,000 files has 100 parents to check.
        self._present: set[str] = set()
        # Folders this batch creates, by where they are made until commit: the
        # outermost of each under a temp name (``_new_folders``), renamed into place.
        self._making: dict[str, str] = {}
        self._new_folders: list[tuple[str, str]] = []  # (temp, final)
        # How each path kept for a restore looked then (``kept_as``): a replacement or
        # a removal is only committed over what the run kept.
        self._kept: dict[str, Witness] = {}
        # Who owns each folder written into (only looked up when running as root).
        self._owners: dict[str, tuple[int, int]] = {}
        self._counter = 0
        self._temp_mark = f"{TEMP_MARK}{self.tag}-"

    def temp_path(self, final: str, beside: str | None = None) -> str:
        """A fresh temp name for ``final``, in its folder (or in ``beside``)."""
        self._counter += 1
        if POSIX_PATHS:  # os.path.split, without its normalising of the folder
            folder, _, name = final.rpartition("/")
        else:
            folder, name = os.path.split(final)
        folder = folder if beside is None else beside
        # The temp name must fit NAME_MAX (255) too; a character is at most 4 bytes,
        # so most names need no encoding to know.
        if len(name) * 4 > _LONG_NAME and len(name.encode()) > _LONG_NAME:
            name = hashlib.sha256(name.encode()).hexdigest()[:32]
        return f"{folder}{os.sep}.{name}{self._temp_mark}{self._counter}"

    def _isdir(self, path: str) -> bool:
        try:
            return stat.S_ISDIR(self._lstat(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def _leads_to_folder(self, path: str) -> bool:
        """Whether ``path`` is a folder, or a link to one inside the root (as
        ``os.path.isdir``, the link followed by the anchor: one leading out raises
        ``OutsideRoot``). A folder to write into may be reached through such a link."""
        anchor = self.anchor
        if anchor is None or not anchor.holds(path):
            return os.path.isdir(path)
        try:
            anchor.folder(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return False
            raise
        return True

    def _exists(self, path: str) -> bool:
        try:
            self._lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def _mkdir(self, path: str) -> None:
        folder, name = self._at(path)
        with _naming(path):
            os.mkdir(name, dir_fd=folder)

    def _place(self, final: str) -> _Place:
        """Where to stage ``final``: beside it when its folder exists; else in the folder
        this batch makes for it, under a temp name until commit (the files in it need no
        temp names of their own, nor a rename each); else, where a file this batch
        removes is in the way of its folder, in the nearest folder there is."""
        parent = os.path.dirname(final)
        self._dirs.add(parent)
        if parent in self._present:
            return _Place(parent)
        making = self._making.get(parent)
        if making is not None:
            return _Place(making, IN_NEW_FOLDER)
        if self._leads_to_folder(parent):
            self._present.add(parent)
            return _Place(parent)
        missing = []
        current = parent
        while making is None and not self._leads_to_folder(current):
            if self._exists(current):
                if current in self._removals:
                    # A file becoming a folder (a restructured tree): it goes first, at commit.
                    return _Place(os.path.dirname(current), DEFERRED)
                # Planned as a folder to create; something else took the place since.
                raise ConflictError(
                    f"{current}: something that is not a folder is where trueup must create "
                    "one; it was left as it is",
                    hint="compute the plan again and review it",
                )
            missing.append(current)
            current = os.path.dirname(current)
            making = self._making.get(current)
        if making is None:  # ``current`` exists: the outermost missing folder is new
            outermost = missing.pop()
            making = self._new_folder(outermost)
            current = outermost
        for folder in reversed(missing):  # outermost first
            inside = making + folder[len(current) :]
            self._mkdir(inside)
            self._making[folder] = inside
            self._own(inside, os.path.dirname(inside))
        return _Place(self._making[parent], IN_NEW_FOLDER)

    def _new_folder(self, final: str) -> str:
        """Make the folder ``final`` under a temp name beside it; renamed in at commit."""
        temp = self.temp_path(final)
        # Staged before it exists, as a temp file is.
        self._new_folders.append((temp, final))
        self._mkdir(temp)
        self._making[final] = temp
        self._dirs.add(os.path.dirname(final))
        self._own(temp, os.path.dirname(final))
        return temp

    def _own(self, folder: str, parent: str) -> None:
        """A folder made for a person is theirs, as the files in it (when run as root)."""
        if _EUID == 0:
            owner = self._folder_owner(parent)
            self._owners[folder] = owner
            if owner != (0, 0):
                at, name = self._at(folder)
                os.chown(name, *owner, dir_fd=at, follow_symlinks=False)

    def _make_deferred(self) -> None:
        """Make the folders deferred staged files wait for, now that what was in their
        way is removed (they are renamed into them from where they wait)."""
        for staged in self._staged:
            parent = os.path.dirname(staged.final)
            if staged.how != DEFERRED or parent in self._present:
                continue
            missing = []
            current = parent
            while not self._leads_to_folder(current):
                missing.append(current)
                current = os.path.dirname(current)
            for folder in reversed(missing):  # outermost first
                self._mkdir(folder)
                self._own(folder, os.path.dirname(folder))
                self._dirs.add(os.path.dirname(folder))
            self._present.update(missing)

    def _rename_new_folders(self) -> None:
        """Put the folders this batch made in place, whole; never over anything there."""
        for temp, final in self._new_folders:
            self._rename_exclusive(temp, final)
            self._forget(temp)
        self._present.update(self._making)
        self._new_folders.clear()  # in place: nothing of them is for discard() to remove
        self._making.clear()

    def write(
        self,
        path: Path | str,
        data: bytes,
        executable: bool = False,
        mode: int | None = None,
        digest: str | None = None,
        exclusive: bool = False,
    ) -> None:
        """Stage ``data`` for ``path``; ``mode`` (exact bits) wins over ``executable``.

        ``digest``: the sha256 of ``data`` when the caller knows it already.
        ``exclusive``: ``path`` was planned absent, and commit refuses (with
        ``TargetAppeared``) to put the file over anything found there then.
        """
        final = os.fspath(path)
        self._check_size(final, len(data))
        digest = digest or hashlib.sha256(data).hexdigest()
        self._stage_file(final, data, digest, executable, mode, exclusive)

    def copy(
        self,
        path: Path | str,
        source: str,
        digest: str,
        executable: bool = False,
        mode: int | None = None,
        exclusive: bool = False,
    ) -> None:
        """Stage the bytes of ``source`` for ``path``, as ``write`` would stage them,
        refused (``ConflictError``) unless they hash to ``digest``, the planned content
        (or the source still has the stat under which the stat cache knows that digest:
        the rule the plan itself trusted, so 10,000 sources are not hashed twice)."""
        data = self.read_expected(source, digest)
        self._stage_file(os.fspath(path), data, digest, executable, mode, exclusive)

    def _stage_file(
        self,
        final: str,
        data: bytes,
        digest: str,
        executable: bool,
        mode: int | None,
        exclusive: bool,
    ) -> None:
        place = self._place(final)
        # Nothing to look at where the plan saw nothing (the exclusive rename refuses
        # whatever came since), or in a folder this batch makes.
        fresh = exclusive or bool(place.how)
        current = None if fresh else self.lstat(final)
        if mode is None:
            # Keep the read/write bits a regular file already has; anything else
            # (new, or a link whose bits are always 0777) gives 0644.
            if current is not None and stat.S_ISREG(current.st_mode):
                base = stat.S_IMODE(current.st_mode) & 0o666
            else:
                base = 0o644
            mode = base | 0o111 if executable else base
        temp = self._staged_name(final, place)
        # Staged before it exists: a signal is handled between any two steps, and
        # one right after the file is created must still leave discard() its name.
        self._staged.append(_Staged(temp, final, _is_dir(current), exclusive, place.how))
        owner = self._owner(final, current, place.folder)
        folder, name = self._at(temp)
        with _naming(temp):
            create_temp(name, data, mode, owner, dir_fd=folder)
        reach("temp-created")
        self._outcomes[final] = "file:" + digest

    def _staged_name(self, final: str, place: _Place) -> str:
        if place.how == IN_NEW_FOLDER:  # its own name: the folder is the temp
            return place.folder + os.sep + os.path.basename(final)
        return self.temp_path(final, place.folder if place.how else None)

    def symlink(self, path: Path | str, link: str, exclusive: bool = False) -> None:
        """Stage a symlink at ``path``; ``exclusive`` as for ``write``."""
        final = os.fspath(path)
        place = self._place(final)
        current = None if place.how else self.lstat(final)
        temp = self._staged_name(final, place)
        # Staged before it exists, as in write.
        self._staged.append(
            _Staged(temp, final, _is_dir(current), exclusive, place.how, is_file=False)
        )
        folder, name = self._at(temp)
        with _naming(temp):
            os.symlink(link, name, dir_fd=folder)
        owner = self._owner(final, current, place.folder)
        if owner is not None:
            os.chown(name, *owner, dir_fd=folder, follow_symlinks=False)
        self._outcomes[final] = "link:" + link

    def remove(self, path: Path | str, prune_up_to: Path | str | None = None) -> None:
        """Stage a removal; with ``prune_up_to``, empty parents below it go too."""
        self._removals[os.fspath(path)] = None
        self._outcomes[os.fspath(path)] = ABSENT_OUTCOME
        if prune_up_to is not None:
            self.prune(os.path.dirname(os.fspath(path)), prune_up_to)

    def prune(self, folder: Path | str, stop: Path | str) -> None:
        """Stage removing ``folder`` and its parents, while empty, up to and including ``stop``."""
        self._prunes.append((os.fspath(folder), os.fspath(stop)))

    def make_folder(self, path: str) -> None:
        """Make the folder ``path`` now, and any missing above it (a restore puts a
        folder back where the run had put a file or a link)."""
        if self._isdir(path):
            return
        parent = os.path.dirname(path)
        if parent != path and not self._leads_to_folder(parent):
            self.make_folder(parent)
        if self._exists(path):
            self.unlink(path)
        self._mkdir(path)

    def unlink(self, path: str) -> None:
        """Remove the file or link at ``path`` now."""
        folder, name = self._at(path)
        with _naming(path):
            os.unlink(name, dir_fd=folder)

    def rmdir(self, path: str) -> None:
        """Remove the empty folder ``path`` now."""
        folder, name = self._at(path)
        with _naming(path):
            os.rmdir(name, dir_fd=folder)
        self._forget(path)

    def chmod_folder(self, path: str, mode: int) -> None:
        """Give the folder at ``path`` (never what a link there leads to) ``mode`` now."""
        at, name = self._at(path)
        fd = os.open(name, _O_DIR | O_NOFOLLOW, dir_fd=at)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)

    def remove_any(self, path: str) -> None:
        """Remove whatever is at ``path`` (a folder with all it holds); nothing there is fine."""
        try:
            st = self._lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        folder, name = self._at(path)
        if stat.S_ISDIR(st.st_mode):
            import shutil

            shutil.rmtree(name, dir_fd=folder)
            self._forget(path)
        else:
            os.unlink(name, dir_fd=folder)

    def _forget(self, folder: str) -> None:
        if self.anchor is not None:
            self.anchor.forget(folder)

    def _rename_exclusive(self, temp: str, final: str) -> None:
        src, src_name = self._at(temp)
        dst, dst_name = self._at(final)
        try:
            with _naming(final):
                rename_exclusive(src_name, dst_name, src, dst)
        except FileExistsError:
            raise TargetAppeared(final) from None

    def _owner(
        self, final: str, current: os.stat_result | None, folder: str | None = None
    ) -> tuple[int, int] | None:
        """Whose the written file is to be, when trueup runs as root (sudo, a worker
        applying into a person's home): the replaced file's owner, else the owner of
        the folder it goes in (``folder``: the nearest there is, when that one is made
        at commit). ``None`` when there is nothing to change."""
        if _EUID != 0:
            return None  # nobody else's files can be written as anybody else's
        if current is not None and not stat.S_ISDIR(current.st_mode):
            owner = (current.st_uid, current.st_gid)
        else:
            owner = self._folder_owner(folder or os.path.dirname(final))
        return None if owner == (0, 0) else owner

    def _folder_owner(self, folder: str) -> tuple[int, int]:
        found = self._owners.get(folder)
        if found is None:
            if self.anchor is not None and self.anchor.holds(folder):
                st = os.fstat(self.anchor.folder(folder))
            else:
                st = os.stat(folder)
            found = self._owners[folder] = (st.st_uid, st.st_gid)
        return found

    def outcomes(self) -> dict[str, str]:
        """What each staged path will hold once committed (``held_at`` spelling).

        Kept with the rollback material before commit, so a recovery can tell
        a path this run wrote from one somebody changed after it stopped.
        """
        return dict(self._outcomes)

    def commit(self, meanwhile: Callable[[], None] | None = None) -> None:
        """Make every staged change durable and visible, in a crash-safe order.

        Temp contents reach the disk before any rename makes them visible, and
        the renames reach the disk before this returns. ``meanwhile`` is work of
        the caller's done first (journaling the batch before).
        """
        if meanwhile is not None:
            meanwhile()
        if self.anchor is not None:
            # The folders the batch wrote into are still the ones under the root.
            self.anchor.recheck()
        if self._staged:
            self._flush_staged()
            reach("temp-written")
        self._unchanged()  # after the sync, the longest wait
        # Removals first: what a removed file or folder leaves free may be where a
        # renamed file goes (a tree restructured: x/ becomes x, or x becomes x/).
        for path in self._removals:
            self.remove_any(path)
            self._dirs.add(os.path.dirname(path))
        for folder, stop in sorted(self._prunes, reverse=True):
            self.remove_empty_dirs(folder, stop)
        self._make_deferred()
        self._rename_new_folders()
        self._rename_all()
        self._sync_dirs(self._dirs)
        self._end_batch()
        # What is read or written next (verification, the next batch) is reached from
        # the root afresh. A commit that failed keeps the folders it had for discard,
        # which removes the temp files where they are, even in a folder moved away.
        self._forget_all()

    def _forget_all(self) -> None:
        if self.anchor is not None:
            self.anchor.forget()

    def _end_batch(self) -> None:
        """Forget what the batch staged, once it is committed or discarded."""
        self._staged.clear()
        self._new_folders.clear()
        self._making.clear()
        self._removals.clear()
        self._prunes.clear()
        self._dirs.clear()
        self._outcomes.clear()
        self._kept.clear()
        self._present.clear()

    def _flush_staged(self) -> None:
        """Flush the staged temp files, and the folders made whole that name them."""
        files = [s.temp for s in self._staged if s.is_file and s.how != IN_NEW_FOLDER]
        inside = [s.temp for s in self._staged if s.is_file and s.how == IN_NEW_FOLDER]
        made = list(self._making.values())
        everything = files + inside
        if len(everything) >= SYNCFS_BATCH and self._syncfs(
            {os.path.dirname(p) for p in everything}
        ):
            return
        for path in everything:
            self._fsync(path, _O_READ | O_NOFOLLOW)
        for path in made:
            self._fsync(path, _O_DIR | O_NOFOLLOW)

    def _sync_dirs(self, folders: Iterable[str]) -> None:
        """Flush folder entries: one syncfs per file system for many, fsync each for a few."""
        folders = sorted(set(folders))
        if len(folders) >= SYNCFS_BATCH and self._syncfs(folders):
            return
        for folder in folders:
            with contextlib.suppress(OSError):
                self._fsync(folder, _O_DIR | O_NOFOLLOW)

    def _fsync(self, path: str, flags: int) -> None:
        at, name = self._at(path)
        fd = os.open(name, flags, dir_fd=at)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _syncfs(self, folders: Iterable[str]) -> bool:
        """syncfs(2) on the file systems the root's ``folders`` are on; False where there
        is none. Each is looked up by descriptor; the root's own one covers the rest."""
        if self.anchor is None:
            return syncfs_all(folders)
        devices: dict[int, int] = {}
        for folder in folders:
            try:
                fd = self.anchor.folder(folder)
            except OSError:
                continue
            devices.setdefault(os.fstat(fd).st_dev, fd)
        return all(syncfs_fd(fd) for fd in devices.values())

    def kept_as(self, path: str, st: os.stat_result | None) -> None:
        """``path`` was kept for a restore as ``st`` shows it: commit holds it to that."""
        self._kept.setdefault(path, witness_of(st))

    def _unchanged(self) -> None:
        """Refuse to replace or remove a path that changed since it was kept for a restore.

        An edit made while the batch was being prepared would otherwise be written
        over (and a restore would then take it for the run's own write).
        """
        kept = self._kept
        for final in [*(s.final for s in self._staged if not s.exclusive), *self._removals]:
            if final in kept and witness_of(self.lstat(final)) != kept[final]:
                raise TargetAppeared(final, "changed")

    def _rename_all(self) -> None:
        # Files in a new folder are in place with it (``_rename_new_folders``).
        for staged in self._staged:
            if staged.how == IN_NEW_FOLDER:
                continue
            if staged.exclusive:
                self._rename_exclusive(staged.temp, staged.final)
                continue
            if staged.replaces_dir:
                self.remove_any(staged.final)
            src, src_name = self._at(staged.temp)
            dst, dst_name = self._at(staged.final)
            with _naming(staged.final):
                os.replace(src_name, dst_name, src_dir_fd=src, dst_dir_fd=dst)

    def discard(self) -> None:
        """Drop staged temp files (used when a batch fails before commit)."""
        try:
            for staged in self._staged:
                with contextlib.suppress(OutsideRoot):
                    self.remove_any(staged.temp)
            for temp, _ in self._new_folders:
                with contextlib.suppress(OutsideRoot):
                    self.remove_any(temp)
        finally:
            self._end_batch()
            self._forget_all()

    def remove_empty_dirs(self, folder: Path | str, stop: Path | str) -> None:
        """Remove ``folder`` and its parents while empty, down to and including ``stop``."""
        current = os.fspath(folder)
        top = os.fspath(stop)
        while current == top or current.startswith(top + os.sep):
            try:
                self.rmdir(current)
            except OSError:
                return
            current = os.path.dirname(current)
            self._dirs.add(current)


ABSENT_OUTCOME = "absent"


@contextlib.contextmanager
def _naming(path: str) -> Iterator[None]:
    """An error of the calls inside names ``path`` whole (``anchor.named``)."""
    try:
        yield
    except OSError as exc:
        raise named(exc, path) from None


def _is_dir(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISDIR(st.st_mode)
