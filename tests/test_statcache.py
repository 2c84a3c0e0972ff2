"""Digests of unchanged files trusted by their stat, with git's care for racy ones."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from trueup.fs import (
    FileTooLargeError,
    ReadOnlyFS,
    sha256_bytes,
)
from trueup.statcache import RACY_WINDOW_NS, StatCache, racy


def age(path: Path, seconds: float) -> None:
    past = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(past, past))


def test_unchanged_old_file_is_recognised_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"hello")
    age(path, 10)
    fs = ReadOnlyFS(StatCache())
    assert fs.digest_file(path) == sha256_bytes(b"hello")
    os.chmod(path, 0)  # unreadable now: a cache hit must not read it
    try:
        assert fs.digest_file(path) == sha256_bytes(b"hello")
    finally:
        os.chmod(path, 0o644)


def test_racy_entry_is_rehashed(tmp_path: Path) -> None:
    """A file modified in the same timestamp tick as its recording keeps size and mtime."""
    path = tmp_path / "f"
    path.write_bytes(b"aaaa")
    st = os.lstat(path)
    cache = StatCache()
    cache.record(str(path), st, sha256_bytes(b"aaaa"))
    path.write_bytes(b"bbbb")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    fs = ReadOnlyFS(cache)
    if os.lstat(path).st_ctime_ns == st.st_ctime_ns:  # coarse clocks: only racy-ness protects us
        assert cache.lookup(str(path), os.lstat(path)) is None
    assert fs.digest_file(path) == sha256_bytes(b"bbbb")


def test_the_cache_vouches_for_a_digest_only_under_the_stat_it_was_recorded_with(
    tmp_path: Path,
) -> None:
    """What a copy trusts instead of hashing a source again (``StatCache.vouching``)."""
    old, fresh = tmp_path / "old", tmp_path / "fresh"
    for path in (old, fresh):
        path.write_bytes(b"planned")
    age(old, 10)
    cache = StatCache()
    planned = sha256_bytes(b"planned")
    for path in (old, fresh):
        cache.record(str(path), os.lstat(path), planned)
    st = os.lstat(old)
    assert cache.vouching(str(old), planned) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
        st.st_ctime_ns,
    )
    assert cache.vouching(str(old), sha256_bytes(b"other")) is None
    assert cache.vouching(str(fresh), planned) is None, "too new for its stat to vouch for it"
    assert cache.vouching(str(tmp_path / "unknown"), planned) is None


SECOND = 1_000_000_000


def test_a_recent_whole_second_ctime_is_racy_as_a_coarse_clock_would_be() -> None:
    """On whole-second file systems a rewrite with its mtime set back keeps the ctime."""
    now = 1_700_000_000 * SECOND + 300_000_000
    old = now - 60 * SECOND
    coarse_recent = (now // SECOND) * SECOND
    assert racy(old, coarse_recent, now)
    assert not racy(old, coarse_recent + 7, now), "a nanosecond clock tells rewrites apart"
    assert not racy(old, old, now), "a change long before the recording is safe"
    assert racy(now - SECOND, old, now), "git's rule on the mtime holds as before"


def test_a_stat_with_a_recent_whole_second_ctime_is_neither_kept_nor_trusted() -> None:
    now = time.time_ns()
    old = now - 60 * SECOND
    coarse_recent = (now // SECOND) * SECOND
    cache = StatCache()
    cache.learn("/x", (4, old, 1, coarse_recent), "d", None, now)
    assert cache.entries == {}
    cache.entries["/x"] = ((4, old, 1, coarse_recent), "d", now)
    assert cache.known("/x", (4, old, 1, coarse_recent)) is None
    cache.entries["/x"] = ((4, old, 1, old), "d", now)
    assert cache.known("/x", (4, old, 1, old)) == "d"


def test_a_file_too_new_to_trust_is_not_recorded(tmp_path: Path) -> None:
    """Storing it would only add a row every lookup ignores (a first apply writes 10,000)."""
    path = tmp_path / "f"
    path.write_bytes(b"fresh")
    cache = StatCache()
    cache.record(str(path), os.lstat(path), sha256_bytes(b"fresh"))
    assert cache.dirty == {} and cache.entries == {}
    age(path, RACY_WINDOW_NS / 1e9 + 5)
    cache.record(str(path), os.lstat(path), sha256_bytes(b"fresh"))
    assert list(cache.dirty) == [str(path)]


def test_new_or_large_files_are_never_remembered(tmp_path: Path) -> None:
    fresh, big = tmp_path / "fresh", tmp_path / "big"
    fresh.write_bytes(b"just written")
    big.write_bytes(b"x" * 4096)
    age(big, 10)
    cache = StatCache(contents_budget=1024)
    fs = ReadOnlyFS(cache)
    fs.digest_file(fresh)
    fs.digest_file(big)
    assert cache.contents == {}


def test_entry_recorded_long_after_mtime_is_trusted(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    age(path, RACY_WINDOW_NS / 1e9 + 5)
    cache = StatCache()
    cache.record(str(path), os.lstat(path), "d")
    assert cache.lookup(str(path), os.lstat(path)) == "d"


def test_a_known_digest_does_not_lift_the_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    age(path, 10)
    cache = StatCache()
    ReadOnlyFS(cache).digest_file(path)  # known to the cache now
    with pytest.raises(FileTooLargeError):
        ReadOnlyFS(cache, max_file_bytes=10).digest_file(path)


def test_cache_fetches_only_the_folders_a_run_touches(tmp_path: Path) -> None:
    asked: list[str] = []
    old = tmp_path / "a" / "f"
    old.parent.mkdir()
    old.write_bytes(b"x")
    age(old, 10)
    st = os.lstat(old)
    entry = ((st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns), "d", time.time_ns())

    def loader(folder: str) -> dict[str, tuple[tuple[int, int, int, int], str, int]]:
        asked.append(folder)
        return {str(old): entry} if str(old).startswith(folder + "/") else {}

    cache = StatCache(loader=loader)
    assert cache.lookup(str(old), st) == "d"
    assert cache.lookup(str(old), st) == "d"
    other = tmp_path / "a" / "sub" / "g"
    other.parent.mkdir()
    other.write_bytes(b"y")
    assert cache.lookup(str(other), os.lstat(other)) is None
    assert asked == [str(old.parent)], "a loaded folder covers its whole subtree"
