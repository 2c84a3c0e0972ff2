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

import collections
import functools
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from trueup.errors import ConflictError, UsageError
from trueup.execute.crashpoints import reach
from trueup.fsops import (
    DEFAULT_MAX_FILE_BYTES,
    O_CLOEXEC,
    POSIX_PATHS,
    SYNCFS_BATCH,
    create_temp,
    file_systems,
    rename_exclusive,
    sync_dirs,
    sync_paths,
    witness,
)
from trueup.partner import (
    APPEARED,
    BACKLOG,
    CHANGED,
    HAND_FILES,
    START_AFTER,
    Content,
    Failure,
    Partner,
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
        try:
            st: os.stat_result | None = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        if self.witness is not None:
            self.witness[os.fspath(path)] = witness_of(st)
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
            current = os.path.join(os.path.dirname(current), os.readlink(current))
        raise UsageError(f"{path}: too many levels of symbolic links")

    def _seen(self, path: Path | str, st: os.stat_result) -> None:
        if self.witness is not None:
            self.witness[os.fspath(path)] = witness_of(st)

    def read_bytes(self, path: Path | str, st: os.stat_result | None = None) -> bytes:
        key = os.fspath(path)
        if st is None:
            st = os.lstat(key)
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
        return self._read(key, st.st_size)

    def _read(self, key: str, size: int) -> bytes:
        # Plain os calls: open() costs a buffered file object (~10 us a file,
        # a tenth of a second per 10,000). Ask for the size stat gave (+1 to
        # notice growth), not the limit, which would allocate 16 MiB a file.
        self._check_size(key, size)
        # O_NONBLOCK: a file swapped for a pipe since its lstat reads empty, not forever.
        fd = os.open(key, os.O_RDONLY | os.O_NONBLOCK | O_CLOEXEC)
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
            st = os.lstat(key)
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
        st = os.lstat(key)
        self._seen(key, st)
        skey = stat_key(st)
        hit = self.cache.contents.get(key)
        if hit is None and self._caught_up(key):
            hit = self.cache.contents.get(key)
        if hit is not None and hit[0] == skey and hit[1] == digest:
            return hit[2]
        data = self._read(key, st.st_size)
        if self.cache.known(key, skey) != digest and sha256_bytes(data) != digest:
            raise source_changed(key)
        return data

    def readlink(self, path: Path | str) -> str:
        return os.readlink(path)

    def entry(self, path: Path | str, st: os.stat_result | None = None) -> Entry | None:
        """Observe one path without following a symlink; ``None`` when absent."""
        if st is None:
            if self._missing_folders and os.path.dirname(path) in self._missing_folders:
                return self._absent(path, blocked=False)
            try:
                st = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError) as missing:
                if self.observes_only:
                    self._note_missing(os.path.dirname(path))
                # A file where a folder of the path should be: nothing can go there.
                return self._absent(path, blocked=isinstance(missing, NotADirectoryError))
        mode = st.st_mode
        if stat.S_ISREG(mode):  # digest_file is its witness
            return Entry("file", self.digest_file(path, st), is_executable(mode))
        self._seen(path, st)
        if stat.S_ISLNK(mode):
            return Entry("symlink", link=os.readlink(path))
        if stat.S_ISDIR(mode):
            return Entry("directory")
        return Entry("special")

    def _absent(self, path: Path | str, blocked: bool) -> Entry | None:
        if self.witness is not None:
            self.witness[os.fspath(path)] = None
        return Entry("blocked") if blocked else None

    def _note_missing(self, folder: str) -> None:
        """Remember ``folder`` as missing, if it is (not merely under a file: that is
        "blocked"), so the other paths of a tree planned into an empty root are
        known absent without a failed lstat each."""
        if folder in self._missing_folders or folder in self._present_folders:
            return
        try:
            os.lstat(folder)
        except FileNotFoundError:
            self._missing_folders.add(folder)
            return
        except OSError:
            pass
        self._present_folders.add(folder)

    def listing(self, root: Path | str, most: int) -> list[str] | None:
        """Relative paths of everything below ``root``, folders too, read from names
        only; ``None`` past ``most`` entries (or where a folder cannot be read)."""
        found: list[str] = []
        folders = [(os.fspath(root), "")]
        while folders:
            base, prefix = folders.pop()
            self.lstat(base)  # a folder's stat changes when entries come or go: a witness
            try:
                scan = os.scandir(base)
            except OSError:
                return None
            with scan as entries:
                for item in entries:
                    if TEMP_MARK in item.name:
                        continue
                    found.append(prefix + item.name)
                    if len(found) > most:
                        return None
                    if item.is_dir(follow_symlinks=False):
                        folders.append((item.path, prefix + item.name + "/"))
        return sorted(found)

    def walk(self, root: Path | str, big: bool = False) -> dict[str, Entry]:
        """Every entry below ``root`` by relative POSIX path, one scandir per folder.

        ``big``: a file over the size limit is not read but named by its size
        and time (``OVERSIZED``...): a live tree may hold a big file trueup has
        nothing to do with, while a source must be read whole, so it raises.
        """
        found: dict[str, Entry] = {}
        self.lstat(root)  # a folder's stat changes when entries come or go: a witness
        self._walk(os.fspath(root), "", found, big)
        return found

    def _walk(self, base: str, prefix: str, found: dict[str, Entry], big: bool) -> None:
        try:
            iterator = os.scandir(base)
        except (FileNotFoundError, NotADirectoryError):
            return
        with iterator as entries:
            subdirs = []
            for item in entries:
                if TEMP_MARK in item.name:
                    continue
                if not item.name.isascii():
                    _recordable(item.path)
                rel = prefix + item.name
                st = item.stat(follow_symlinks=False)
                if big and stat.S_ISREG(st.st_mode) and st.st_size > self.max_file_bytes:
                    self._seen(item.path, st)
                    found[rel] = Entry(
                        "file",
                        f"{OVERSIZED_DIGEST}{st.st_size}:{st.st_mtime_ns}",
                        is_executable(st.st_mode),
                    )
                    continue
                node = self.entry(item.path, st)
                if node is None:
                    continue
                found[rel] = node
                if node.state == "directory":
                    subdirs.append((item.path, rel + "/"))
        for path, rel in subdirs:
            self._walk(path, rel, found, big)


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
    """Writes staged beside their targets and committed durably in batches."""

    observes_only = False

    def __init__(
        self,
        cache: StatCache | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        tag: str = "",
        partner: bool = False,
    ) -> None:
        super().__init__(cache, max_file_bytes)
        self.tag = tag or str(os.getpid())
        # A second process sharing the kernel's work of big batches (partner.py):
        # asked for by the executor, started once this many files are staged.
        self._partner_after = START_AFTER if partner else None
        self._partner: Partner | None = None
        self._staged_files = 0
        # Temp files to hand to the partner in its next request, and their bytes.
        self._handing: list[tuple[bytes, Content, int, tuple[int, int] | None]] = []
        self._handing_bytes = 0
        # What the partner read back after the last commit: witness and digest by path.
        self._read_back: dict[str, tuple[Witness, str]] = {}
        self._awaited: set[str] = set()
        # What the partner is flushing, oldest first: each flush's own way of doing it
        # here instead, should the partner find no syncfs (or stop).
        self._flushing: collections.deque[Callable[[], None]] = collections.deque()
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
        if os.path.isdir(parent):
            self._present.add(parent)
            return _Place(parent)
        missing = []
        current = parent
        while making is None and not os.path.isdir(current):
            if os.path.lexists(current):
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
            os.mkdir(inside)
            self._making[folder] = inside
            self._own(inside, os.path.dirname(inside))
        return _Place(self._making[parent], IN_NEW_FOLDER)

    def _new_folder(self, final: str) -> str:
        """Make the folder ``final`` under a temp name beside it; renamed in at commit."""
        temp = self.temp_path(final)
        # Staged before it exists, as a temp file is.
        self._new_folders.append((temp, final))
        os.mkdir(temp)
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
                os.chown(folder, *owner)

    def _make_deferred(self) -> None:
        """Make the folders deferred staged files wait for, now that what was in their
        way is removed (they are renamed into them from where they wait)."""
        for staged in self._staged:
            parent = os.path.dirname(staged.final)
            if staged.how != DEFERRED or parent in self._present:
                continue
            missing = []
            current = parent
            while not os.path.isdir(current):
                missing.append(current)
                current = os.path.dirname(current)
            for folder in reversed(missing):  # outermost first
                os.mkdir(folder)
                self._own(folder, os.path.dirname(folder))
                self._dirs.add(os.path.dirname(folder))
            self._present.update(missing)

    def _rename_new_folders(self) -> None:
        """Put the folders this batch made in place, whole; never over anything there."""
        for temp, final in self._new_folders:
            _rename_exclusive(temp, final)
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
        the rule the plan itself trusted, so 10,000 sources are not hashed twice).

        A partner reads and checks them itself: the bytes of a big first apply
        then never pass through this process (10,000 sources are 20 MB).
        """
        self._stage_file(
            os.fspath(path),
            (os.fsencode(source), digest, self.max_file_bytes, self.cache.vouching(source, digest)),
            digest,
            executable,
            mode,
            exclusive,
        )

    def _stage_file(
        self,
        final: str,
        content: Content,
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
        self._create(os.fsencode(temp), content, mode, owner)
        self._outcomes[final] = "file:" + digest

    def _staged_name(self, final: str, place: _Place) -> str:
        if place.how == IN_NEW_FOLDER:  # its own name: the folder is the temp
            return place.folder + os.sep + os.path.basename(final)
        return self.temp_path(final, place.folder if place.how else None)

    def _create(
        self, temp: bytes, content: Content, mode: int, owner: tuple[int, int] | None
    ) -> None:
        """Create a staged temp file now, or have the partner create it meanwhile."""
        partner = self._started_partner()
        if partner is None:
            create_temp(temp, self._bytes(content), mode, owner)
            return
        self._handing.append((temp, content, mode, owner))
        if isinstance(content, bytes):
            self._handing_bytes += len(content)
        if len(self._handing) >= HAND_FILES or self._handing_bytes >= partner.request_bytes:
            if partner.backlog() < BACKLOG:
                self._hand_over(partner)
            else:  # it is behind (a slow disk): this process creates these itself
                handing, self._handing, self._handing_bytes = self._handing, [], 0
                for name, held, bits, whose in handing:
                    create_temp(name, self._bytes(held), bits, whose)

    def _bytes(self, content: Content) -> bytes:
        """A temp file's bytes, read here when they are a source's (see ``copy``)."""
        if isinstance(content, bytes):
            return content
        source, digest, _limit, _vouched = content
        return self.read_expected(os.fsdecode(source), digest)

    def expect(self, writes: int) -> None:
        """At least ``writes`` files are coming: a big run starts its partner at once, so
        it is up by the first write instead of some way into the first batch."""
        if self._partner_after is not None and writes >= self._partner_after:
            self._start_partner()

    def _start_partner(self) -> Partner | None:
        self._partner_after = None  # one try per run
        self._partner = Partner.start()
        return self._partner

    def _started_partner(self) -> Partner | None:
        """The partner, once it is up; started when a batch turns out big."""
        self._staged_files += 1
        partner = self._partner
        if partner is None:
            if self._partner_after is None or self._staged_files < self._partner_after:
                return None
            partner = self._start_partner()
            if partner is None:
                return None
        return partner if partner.ready() else None

    def _hand_over(self, partner: Partner) -> None:
        if self._handing:
            handing, self._handing, self._handing_bytes = self._handing, [], 0
            partner.submit("create", handing)

    def _working_partner(self) -> Partner | None:
        """The partner, if it is up: nothing is handed to one still starting."""
        return self._partner if self._partner is not None and self._partner.up else None

    def _settle(self, until: str | None = None) -> None:
        """Take every answer the partner owes (``until``: see ``Partner.answers``);
        raise the first failure it reports.

        Read-back digests are kept for ``digest_file``.
        """
        partner = self._working_partner()
        if partner is None:  # one still starting owes nothing
            return
        self._hand_over(partner)
        failure: Failure = None
        for op, answer in partner.answers(until):
            if op == "digest":
                self._read_back.update(
                    (os.fsdecode(path), (tuple(seen), dig)) for path, seen, dig in answer
                )
                self._awaited.clear()
            elif op == "syncfs":
                instead = self._flushing.popleft()
                if answer is not None:  # no syncfs there after all: this process flushes
                    instead()
            elif failure is None:
                failure = answer
        if failure is not None:
            number, message, path, why = failure
            if why == APPEARED:
                raise TargetAppeared(os.fsdecode(path))
            if why == CHANGED:
                raise source_changed(os.fsdecode(path))
            raise OSError(number, message, os.fsdecode(path))

    def _stop_partner(self) -> None:
        """Stop the partner mid-work; nothing it was asked happens after this."""
        partner, self._partner = self._partner, None
        self._handing, self._handing_bytes = [], 0
        self._awaited.clear()
        if partner is not None:
            partner.abort()
        while self._flushing:  # what it was flushing, if anything: flushed here
            self._flushing.popleft()()

    @property
    def partnered(self) -> bool:
        """Whether a partner process is sharing this file system's work now."""
        return self._partner is not None and self._partner.ready()

    def close(self) -> None:
        """End the partner, if one was started: the run is done with this file system."""
        self._stop_partner()
        self._read_back.clear()

    def digest_file(self, path: Path | str, st: os.stat_result | None = None) -> str:
        """As ``ReadOnlyFS.digest_file``; a file the partner read back since it was
        committed, and unchanged since (the same witness), is not read again."""
        key = os.fspath(path)
        if key in self._awaited:
            self._settle(until="digest")
        back = self._read_back.pop(key, None)
        if back is not None:
            if st is None:
                st = os.lstat(key)
            if back[0] == witness_of(st):
                self._seen(key, st)
                return back[1]
        return super().digest_file(key, st)

    def symlink(self, path: Path | str, link: str, exclusive: bool = False) -> None:
        """Stage a symlink at ``path``; ``exclusive`` as for ``write``."""
        final = os.fspath(path)
        place = self._place(final)
        current = None if place.how else self.lstat(final)
        temp = self._staged_name(final, place)
        # Staged before it exists, as in write.
        self._staged.append(_Staged(temp, final, _is_dir(current), exclusive, place.how))
        os.symlink(link, temp)
        owner = self._owner(final, current, place.folder)
        if owner is not None:
            os.lchown(temp, *owner)
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
            st = os.stat(folder)
            found = self._owners[folder] = (st.st_uid, st.st_gid)
        return found

    def outcomes(self) -> dict[str, str]:
        """What each staged path will hold once committed (``held_at`` spelling).

        Kept with the rollback material before commit, so a recovery can tell
        a path this run wrote from one somebody changed after it stopped.
        """
        return dict(self._outcomes)

    def commit(
        self, durable_later: bool = False, meanwhile: Callable[[], None] | None = None
    ) -> None:
        """Make every staged change durable and visible, in a crash-safe order.

        Temp contents reach the disk before any rename makes them visible, and
        the renames reach the disk before the caller journals success: at once,
        or, with ``durable_later``, by the partner while the caller verifies,
        and then the caller calls ``durable`` before it journals.

        ``meanwhile`` is work of the caller's done while the temp files flush
        (by the partner, when one is up): on a disk, the longest wait of a batch.
        """
        if self._staged:
            self._settle()  # every temp file exists, the partner's too
            self._flush_staged(meanwhile)
            reach("temp-written")
        elif meanwhile is not None:
            meanwhile()
        self._read_back.clear()
        self._unchanged()  # after the sync, the longest wait
        # Removals first: what a removed file or folder leaves free may be where a
        # renamed file goes (a tree restructured: x/ becomes x, or x becomes x/).
        for path in self._removals:
            remove_any(path)
            self._dirs.add(os.path.dirname(path))
        for folder, stop in sorted(self._prunes, reverse=True):
            self.remove_empty_dirs(folder, stop)
        self._make_deferred()
        self._rename_new_folders()
        halves = self._halves()
        self._rename_all(halves)
        self._read_back_later(halves[1])  # first: verification waits for it, not the flush
        partner = self._working_partner()
        if durable_later and partner is not None and len(self._dirs) >= SYNCFS_BATCH:
            folders = sorted(self._dirs)
            self._flush_by(partner, folders, functools.partial(sync_dirs, folders))
        else:
            sync_dirs(self._dirs)
        self._end_batch()

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

    def durable(self) -> None:
        """Wait until what the last commit made visible is on disk (``commit``)."""
        if self._flushing:
            self._settle()

    def _flush_staged(self, meanwhile: Callable[[], None] | None) -> None:
        """Flush the staged temp files; ``meanwhile`` runs as they flush."""
        temps = [s.temp for s in self._staged]
        # The entries of the folders made whole too, before they are renamed into place.
        made = list(self._making.values())

        def flush() -> None:
            sync_paths(temps, made)

        partner = self._working_partner()
        if meanwhile is None or partner is None or len(temps) < SYNCFS_BATCH:
            if meanwhile is not None:
                meanwhile()
            flush()
            return
        self._flush_by(partner, {os.path.dirname(t) for t in temps}, flush)
        meanwhile()
        self._settle()  # nothing else is asked of it by now: the flush is all it owes

    def _flush_by(
        self, partner: Partner, folders: Iterable[str], instead: Callable[[], None]
    ) -> None:
        """Have the partner syncfs the file systems of ``folders`` (``instead``: how this
        process flushes the same, should it have to)."""
        self._flushing.append(instead)
        partner.submit("syncfs", [os.fsencode(f) for f in file_systems(folders)])

    def _halves(self) -> tuple[list[_Staged], list[_Staged]]:
        """This process's share of the renames and the partner's (none without one).

        A file replacing a folder stays here: the folder goes first.
        """
        staged = self._staged
        if self._working_partner() is None or len(staged) < HAND_FILES:
            return staged, []
        half = len(staged) // 2
        theirs = [s for s in staged[half:] if not s.replaces_dir]
        return staged[:half] + [s for s in staged[half:] if s.replaces_dir], theirs

    def _rename_all(self, halves: tuple[list[_Staged], list[_Staged]]) -> None:
        # Files in a new folder are in place with it (``_rename_new_folders``).
        mine = [s for s in halves[0] if s.how != IN_NEW_FOLDER]
        theirs = [s for s in halves[1] if s.how != IN_NEW_FOLDER]
        try:
            if theirs:
                assert self._partner is not None
                self._partner.submit(
                    "rename",
                    [(os.fsencode(s.temp), os.fsencode(s.final), s.exclusive) for s in theirs],
                )
            for staged in mine:
                if staged.exclusive:
                    _rename_exclusive(staged.temp, staged.final)
                else:
                    if staged.replaces_dir:
                        _remove_tree(staged.final)
                    os.replace(staged.temp, staged.final)
        except BaseException:
            self._stop_partner()  # its renames are over before anything is restored
            raise
        self._settle()  # every staged path's folder is in _dirs since make_parents

    def _read_back_later(self, theirs: list[_Staged]) -> None:
        """Have the partner read back and hash its share of the files just committed,
        while this process verifies its own (``digest_file`` takes the answer)."""
        finals = [s.final for s in theirs if self._outcomes.get(s.final, "").startswith("file:")]
        if finals and self._partner is not None:
            self._partner.submit("digest", ([os.fsencode(f) for f in finals], self.max_file_bytes))
            self._awaited.update(finals)

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

    def discard(self) -> None:
        """Drop staged temp files (used when a batch fails before commit)."""
        # It may be creating or renaming temp files: it stops first, busy or not as
        # far as this process knows (a signal may have cut a request short).
        self._stop_partner()
        for staged in self._staged:
            remove_any(staged.temp)
        for temp, _ in self._new_folders:
            remove_any(temp)
        self._end_batch()

    def remove_empty_dirs(self, folder: Path | str, stop: Path | str) -> None:
        """Remove ``folder`` and its parents while empty, down to and including ``stop``."""
        current = Path(folder)
        stop_path = Path(stop)
        while current == stop_path or stop_path in current.parents:
            try:
                current.rmdir()
            except OSError:
                return
            self._dirs.add(os.fspath(current.parent))
            current = current.parent


ABSENT_OUTCOME = "absent"


def held_at(path: str) -> str:
    """What ``path`` holds now, spelt as ``WritableFS.outcomes`` spells it."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT_OUTCOME
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(path)
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as handle:
            return "file:" + hashlib.file_digest(handle, "sha256").hexdigest()
    return "other"


def _is_dir(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISDIR(st.st_mode)


def _rename_exclusive(temp: str, final: str) -> None:
    try:
        rename_exclusive(temp, final)
    except FileExistsError:
        raise TargetAppeared(final) from None


def remove_any(path: str) -> None:
    """Remove whatever is at ``path`` (a folder with all it holds); nothing there is fine."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISDIR(st.st_mode):
        _remove_tree(path)
    else:
        os.unlink(path)


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path)
