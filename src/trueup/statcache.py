"""Digests of unchanged files, recognised by their stat, as git's index does.

A file's digest is trusted again when its size, mtime, inode and ctime are
what they were when it was hashed, unless the stat is "racy": recorded so
soon after the file's last change that a rewrite in the same tick would not
show (git's rule). Witnesses (``witness_of``) are the same stat with the
file's type: what a plan was computed from (plan/memo.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from trueup.fsops import parent_of, witness

# A recorded stat is trusted only when the file's mtime is older than the
# recording by more than the coarsest timestamp granularity in common use
# (FAT: 2 s); a newer file might have been rewritten within the same tick.
RACY_WINDOW_NS = 2_000_000_000

StatKey = tuple[int, int, int, int]
Witness = tuple[int, int, int, int, int] | None


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
        folder = parent_of(path)  # once per file looked up: os.path.dirname is slower
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


def witness_of(st: os.stat_result | None) -> Witness:
    """What a path looked like: its type and stat key, or ``None`` when absent."""
    return None if st is None else witness(st)
