"""The file system layer: a stat cache that is never fooled, writes that are atomic."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

from trueup.errors import ConflictError
from trueup.fs import (
    RACY_WINDOW_NS,
    TEMP_MARK,
    Entry,
    FileTooLargeError,
    ReadOnlyFS,
    StatCache,
    TargetAppeared,
    WritableFS,
    racy,
    sha256_bytes,
)
from trueup.fsops import file_systems
from trueup.partner import HAND_FILES, START_AFTER, PartnerGone


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


def test_a_source_hashed_to_plan_is_not_read_again_to_write_it(tmp_path: Path) -> None:
    path = tmp_path / "source"
    path.write_bytes(b"declared")
    age(path, 10)
    cache = StatCache()
    ReadOnlyFS(cache).digest_file(path)
    os.chmod(path, 0)  # unreadable: only the remembered bytes can answer
    try:
        assert WritableFS(cache).read_bytes(path) == b"declared"
    finally:
        os.chmod(path, 0o644)
    path.write_bytes(b"edited!!")  # same size, new mtime and ctime
    assert WritableFS(cache).read_bytes(path) == b"edited!!"


def test_planned_bytes_are_refused_once_the_source_changed(tmp_path: Path) -> None:
    path = tmp_path / "source"
    path.write_bytes(b"planned")
    age(path, 10)
    cache = StatCache()
    planned = ReadOnlyFS(cache).digest_file(path)
    assert WritableFS(cache).read_expected(path, planned) == b"planned"
    path.write_bytes(b"edited!")  # same size, new stat: read again, and refused
    with pytest.raises(ConflictError, match="changed after the plan was computed"):
        WritableFS(cache).read_expected(path, planned)
    with pytest.raises(ConflictError):
        WritableFS(StatCache()).read_expected(path, planned)


def test_a_copy_stages_the_planned_bytes_of_its_source(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"planned")
    fs = WritableFS()
    fs.copy(tmp_path / "a.txt", str(source), sha256_bytes(b"planned"), executable=True)
    assert not (tmp_path / "a.txt").exists()
    assert fs.outcomes() == {str(tmp_path / "a.txt"): "file:" + sha256_bytes(b"planned")}
    fs.commit()
    assert (tmp_path / "a.txt").read_bytes() == b"planned"
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o755


def test_a_copy_of_a_source_edited_since_the_plan_is_refused_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"edited!")
    fs = WritableFS()
    with pytest.raises(ConflictError, match="changed after the plan was computed"):
        fs.copy(tmp_path / "a.txt", str(source), sha256_bytes(b"planned"))
    fs.discard()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source"]


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


def test_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 100)
    with pytest.raises(FileTooLargeError, match="over the file-size limit of 10 bytes"):
        ReadOnlyFS(max_file_bytes=10).read_bytes(path)


def test_a_known_digest_does_not_lift_the_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    age(path, 10)
    cache = StatCache()
    ReadOnlyFS(cache).digest_file(path)  # known to the cache now
    with pytest.raises(FileTooLargeError):
        ReadOnlyFS(cache, max_file_bytes=10).digest_file(path)


def test_a_file_written_over_a_symlink_gets_a_private_mode(tmp_path: Path) -> None:
    os.umask(0o022)
    (tmp_path / "f").symlink_to(tmp_path / "nowhere")  # a link's own bits are 0777
    fs = WritableFS(tag="t")
    fs.write(tmp_path / "f", b"new")
    fs.commit()
    assert not (tmp_path / "f").is_symlink()
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o644


def test_a_rewritten_file_keeps_its_own_mode(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"old")
    os.chmod(tmp_path / "f", 0o600)
    fs = WritableFS(tag="t")
    fs.write(tmp_path / "f", b"new")
    fs.commit()
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o600


def test_staged_writes_are_invisible_until_commit(tmp_path: Path) -> None:
    fs = WritableFS(tag="t")
    target = tmp_path / "a" / "b" / "f"
    fs.write(target, b"new", executable=True)
    assert not target.exists()
    fs.commit()
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o111
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]


def test_discard_leaves_no_temp_file(tmp_path: Path) -> None:
    fs = WritableFS(tag="t")
    (tmp_path / "f").write_bytes(b"old")
    fs.write(tmp_path / "f", b"new")
    fs.discard()
    assert (tmp_path / "f").read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


@pytest.mark.parametrize("appears", ["file", "symlink", "folder"])
def test_an_exclusive_create_never_replaces_what_appeared_after_staging(
    tmp_path: Path, appears: str
) -> None:
    fs = WritableFS(tag="t")
    target = tmp_path / "f"
    fs.write(target, b"declared", exclusive=True)
    if appears == "file":
        target.write_bytes(b"a person's")
    elif appears == "symlink":
        target.symlink_to("elsewhere")
    else:
        target.mkdir()
    with pytest.raises(TargetAppeared) as raised:
        fs.commit()
    assert raised.value.path == str(target)
    assert str(target) in raised.value.message
    if appears == "file":
        assert target.read_bytes() == b"a person's"
    elif appears == "symlink":
        assert os.readlink(target) == "elsewhere"
    else:
        assert target.is_dir()
    fs.discard()
    assert [p.name for p in tmp_path.iterdir()] == ["f"], "no temp file left"


def test_an_exclusive_symlink_never_replaces_what_appeared(tmp_path: Path) -> None:
    fs = WritableFS(tag="t")
    fs.symlink(tmp_path / "l", "declared", exclusive=True)
    (tmp_path / "l").write_bytes(b"a person's")
    with pytest.raises(TargetAppeared):
        fs.commit()
    assert (tmp_path / "l").read_bytes() == b"a person's"


def test_an_exclusive_create_of_an_absent_target_lands(tmp_path: Path) -> None:
    fs = WritableFS(tag="t")
    fs.write(tmp_path / "d" / "f", b"declared", exclusive=True)
    fs.commit()
    assert (tmp_path / "d" / "f").read_bytes() == b"declared"
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["f"]


def test_walk_never_follows_symlinks(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    found = ReadOnlyFS().walk(tmp_path)
    assert found["link"].state == "symlink"
    assert "link/x" not in found


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


def test_a_target_with_the_longest_legal_name_can_be_written(tmp_path: Path) -> None:
    target = tmp_path / ("m" * 251 + ".txt")  # 255 bytes: NAME_MAX on ext4
    fs = WritableFS(tag="20261203T083405-8efc7892")
    fs.write(target, b"x")
    fs.commit()
    assert target.read_bytes() == b"x"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_write_cut_short_leaves_no_temp_file_after_discard(tmp_path: Path) -> None:
    fs = WritableFS(tag="t")
    with pytest.raises(TypeError):  # fails after the temp file exists, as a signal would
        fs.write(tmp_path / "f", "not bytes")  # type: ignore[arg-type]
    fs.discard()
    assert list(tmp_path.iterdir()) == []


def test_a_file_where_a_folder_must_be_created_is_a_conflict_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "d").write_bytes(b"a person's file")
    fs = WritableFS(tag="t")
    with pytest.raises(ConflictError, match="not a folder"):
        fs.write(tmp_path / "d" / "e" / "f", b"declared", exclusive=True)
    assert (tmp_path / "d").read_bytes() == b"a person's file"


def test_a_flush_reaches_every_file_system_a_tree_crosses(tmp_path: Path) -> None:
    # One syncfs of the first path's file system would leave writes under a
    # mount point (here /proc stands for any other file system) in memory.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert file_systems([str(tmp_path / "a"), str(tmp_path / "b")]) == [str(tmp_path / "a")]
    other = file_systems([str(tmp_path / "a"), "/proc", str(tmp_path / "b")])
    assert other == [str(tmp_path / "a"), "/proc"]


def test_a_folder_gone_before_its_flush_is_skipped(tmp_path: Path) -> None:
    assert file_systems([str(tmp_path / "gone"), str(tmp_path)]) == [str(tmp_path)]


def test_a_signal_right_after_a_temp_file_is_created_leaves_discard_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python handles a signal between any two steps; the likeliest moment is
    # right after the slowest one, the open() that creates the temp file.
    real_open = os.open

    def open_then_interrupted(path: str, flags: int, mode: int = 0o777) -> int:
        fd = real_open(path, flags, mode)
        if TEMP_MARK in os.fsdecode(path):
            os.close(fd)
            raise KeyboardInterrupt
        return fd

    fs = WritableFS()
    monkeypatch.setattr(os, "open", open_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        fs.write(tmp_path / "a.txt", b"x")
    monkeypatch.undo()
    fs.discard()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="files are given to another owner only as root")
def test_as_root_a_written_file_stays_its_owners_and_new_ones_are_the_folders(
    tmp_path: Path,
) -> None:
    """sudo, or a worker applying into a person's home: what trueup writes stays theirs."""
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 1234, 2345)
    mine = home / "mine.toml"
    mine.write_text("a = 1\n")
    os.chown(mine, 1234, 2345)
    fs = WritableFS(tag="t")
    fs.write(mine, b"a = 2\n", mode=0o600)
    fs.write(home / "new" / "deeper" / "f.txt", b"x")
    fs.symlink(home / "link", "mine.toml")
    fs.commit()
    for path in (mine, home / "new", home / "new" / "deeper", home / "new" / "deeper" / "f.txt"):
        st = os.stat(path)
        assert (st.st_uid, st.st_gid) == (1234, 2345), path
    link = os.lstat(home / "link")
    assert (link.st_uid, link.st_gid) == (1234, 2345)
    assert mine.read_text() == "a = 2\n"


def test_a_pipe_is_refused_by_name_and_never_opened(tmp_path: Path) -> None:
    """Opening a pipe to read it waits for a writer: it would hang a run."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    with pytest.raises(ConflictError, match="is a pipe, socket or device"):
        ReadOnlyFS().read_bytes(pipe)


# -- a partner process sharing big batches (partner.py) ------------------------
needs_two_cores = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="a partner is only started with two cores"
)
MANY = START_AFTER + 4 * HAND_FILES


def partnered(tmp_path: Path, exclusive: bool = True) -> tuple[WritableFS, list[Path]]:
    """A file system whose partner is up, with MANY files staged under ``tmp_path``, each
    beside its target (their folders exist: see the tests of new folders for the rest)."""
    fs = WritableFS(tag="run", partner=True)
    targets = [tmp_path / f"d{i % 3}" / f"f{i}.txt" for i in range(MANY)]
    for target in targets[:3]:
        target.parent.mkdir(parents=True, exist_ok=True)
    for i, target in enumerate(targets[:START_AFTER]):
        fs.write(target, f"file {i}\n".encode(), exclusive=exclusive)
    deadline = time.monotonic() + 10
    while not fs.partnered:
        assert time.monotonic() < deadline, "the partner never started"
        time.sleep(0.01)
    for i, target in enumerate(targets[START_AFTER:], START_AFTER):
        fs.write(target, f"file {i}\n".encode(), executable=i % 2 == 0, exclusive=exclusive)
    return fs, targets


@needs_two_cores
@pytest.mark.parametrize("exclusive", [True, False])
def test_a_big_batch_shared_with_a_partner_lands_whole(tmp_path: Path, exclusive: bool) -> None:
    fs, targets = partnered(tmp_path, exclusive)
    assert not any(t.exists() for t in targets), "nothing is visible before commit"
    fs.commit()
    for i, target in enumerate(targets):
        assert target.read_bytes() == f"file {i}\n".encode()
        want = 0o755 if i >= START_AFTER and i % 2 == 0 else 0o644
        assert stat.S_IMODE(target.stat().st_mode) == want, target
        assert fs.digest_file(target) == sha256_bytes(f"file {i}\n".encode())
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]
    fs.close()
    assert not fs.partnered


def copied(tmp_path: Path, count: int = 2 * HAND_FILES) -> tuple[list[Path], list[Path]]:
    """``count`` sources, and the targets ``copy`` is to give their bytes."""
    sources, targets = [], []
    for i in range(count):
        source = tmp_path / "src" / f"s{i}.txt"
        source.parent.mkdir(exist_ok=True)
        source.write_bytes(f"source {i}\n".encode())
        sources.append(source)
        targets.append(tmp_path / "copies" / f"c{i}.txt")
    return sources, targets


@needs_two_cores
def test_a_partner_copies_sources_itself_and_the_batch_lands_whole(tmp_path: Path) -> None:
    fs, written = partnered(tmp_path / "written")
    sources, targets = copied(tmp_path)
    for source, target in zip(sources, targets, strict=True):
        fs.copy(target, str(source), sha256_bytes(source.read_bytes()), exclusive=True)
    fs.commit()
    for source, target in zip(sources, targets, strict=True):
        assert target.read_bytes() == source.read_bytes()
    assert all(t.exists() for t in written)
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]
    fs.close()


@needs_two_cores
def test_a_source_the_partner_finds_edited_since_the_plan_fails_the_batch_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    fs, written = partnered(tmp_path / "written")
    sources, targets = copied(tmp_path)
    planned = [sha256_bytes(s.read_bytes()) for s in sources]
    sources[-3].write_bytes(b"edited after the plan\n")
    with pytest.raises(ConflictError, match=f"source {sources[-3]} changed after the plan"):
        for source, target, digest in zip(sources, targets, planned, strict=True):
            fs.copy(target, str(source), digest, exclusive=True)
        fs.commit()
    fs.discard()
    assert not any(t.exists() for t in [*written, *targets])
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]


@needs_two_cores
def test_work_meanwhile_runs_while_the_partner_flushes_the_temp_files_before_any_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trueup.fs

    flushed_here: list[list[str]] = []
    real_sync_paths = trueup.fs.sync_paths
    monkeypatch.setattr(
        trueup.fs,
        "sync_paths",
        lambda paths, folders: flushed_here.append(paths) or real_sync_paths(paths, folders),
    )
    fs, targets = partnered(tmp_path)
    seen: list[tuple[int, bool]] = []
    fs.commit(
        durable_later=True,
        meanwhile=lambda: seen.append(
            (
                len([p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]),
                any(t.exists() for t in targets),
            )
        ),
    )
    fs.durable()
    assert seen == [(MANY, False)], "every temp file was there, and nothing visible yet"
    assert flushed_here == [], "the partner flushed them"
    assert all(t.exists() for t in targets)
    fs.close()


@needs_two_cores
def test_work_meanwhile_that_fails_leaves_nothing_visible_and_discard_cleans_up(
    tmp_path: Path,
) -> None:
    fs, targets = partnered(tmp_path)

    def fail() -> None:
        raise RuntimeError("the journal said no")

    with pytest.raises(RuntimeError, match="the journal said no"):
        fs.commit(durable_later=True, meanwhile=fail)
    fs.discard()
    assert not any(t.exists() for t in targets)
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]
    assert not fs.partnered
    fs.close()


@needs_two_cores
def test_a_file_the_partner_read_back_is_read_again_once_it_changed(tmp_path: Path) -> None:
    fs, targets = partnered(tmp_path)
    fs.commit()
    last = targets[-1]  # in the partner's share of the read-back
    last.write_bytes(b"changed by hand, and longer\n")
    assert fs.digest_file(last) == sha256_bytes(b"changed by hand, and longer\n")
    fs.close()


@needs_two_cores
def test_a_target_that_appears_in_the_partners_share_is_never_replaced(tmp_path: Path) -> None:
    fs, targets = partnered(tmp_path)
    targets[-1].write_text("somebody's\n")
    with pytest.raises(TargetAppeared) as raised:
        fs.commit()
    assert raised.value.path == str(targets[-1])
    assert targets[-1].read_text() == "somebody's\n"
    fs.discard()
    fs.close()
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]


@needs_two_cores
def test_a_partner_killed_mid_batch_fails_the_commit_and_leaves_nothing(tmp_path: Path) -> None:
    fs, targets = partnered(tmp_path)
    fs._partner._process.kill()  # type: ignore[union-attr]  # as the OOM killer would
    with pytest.raises(PartnerGone):
        fs.commit()
    fs.discard()
    assert not any(t.exists() for t in targets)
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]


@needs_two_cores
def test_discard_stops_a_partner_still_creating_before_removing_its_files(tmp_path: Path) -> None:
    fs, _ = partnered(tmp_path)
    fs.discard()
    time.sleep(0.2)  # had it gone on creating, its files would be here now
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]
    assert not fs.partnered


@needs_two_cores
def test_a_commit_whose_flush_is_left_to_the_partner_is_visible_at_once_and_then_durable(
    tmp_path: Path,
) -> None:
    fs, targets = partnered(tmp_path)
    fs.commit(durable_later=True)
    assert all(t.exists() for t in targets)
    assert fs.digest_file(targets[-1]) == sha256_bytes(f"file {MANY - 1}\n".encode())
    fs.durable()
    fs.write(tmp_path / "next.txt", b"next\n")  # and the next commit goes on from there
    fs.commit()
    assert (tmp_path / "next.txt").read_bytes() == b"next\n"
    fs.close()


@needs_two_cores
def test_a_temp_name_taken_by_somebody_fails_the_batch_but_is_no_target_appearing(
    tmp_path: Path,
) -> None:
    fs, _ = partnered(tmp_path)
    target = tmp_path / "d0" / "late.txt"
    planted = fs.temp_path(str(target)).replace(f"-{fs._counter}", f"-{fs._counter + 1}")
    Path(planted).mkdir()
    fs.write(target, b"late\n", exclusive=True)
    with pytest.raises(FileExistsError) as raised:
        fs.commit()
    assert not isinstance(raised.value, TargetAppeared)
    fs.discard()
    fs.close()
    assert not target.exists()


@needs_two_cores
def test_a_signal_while_a_request_is_sent_stops_the_partner_before_discard_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trueup.partner

    fs, targets = partnered(tmp_path, exclusive=False)
    sent = trueup.partner.write_all

    def then_ctrl_c(fd: int, data: bytes) -> None:
        sent(fd, data)
        if b"rename" in data[:64]:
            raise KeyboardInterrupt  # right after the request left, before anything else

    monkeypatch.setattr(trueup.partner, "write_all", then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        fs.commit()
    fs.discard()
    landed = sum(t.exists() for t in targets)
    time.sleep(0.3)  # a partner left running would go on renaming meanwhile
    assert sum(t.exists() for t in targets) == landed
    assert not fs.partnered
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]


def test_a_partner_that_dies_starting_is_never_used_and_the_batch_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trueup.partner

    monkeypatch.setattr(
        trueup.partner, "child_command", lambda *_: [sys.executable, "-c", "raise SystemExit(3)"]
    )
    fs = WritableFS(tag="run", partner=True)
    targets = [tmp_path / f"f{i}.txt" for i in range(MANY)]
    for i, target in enumerate(targets):
        fs.write(target, f"file {i}\n".encode(), exclusive=True)
    fs.commit(durable_later=True)
    fs.durable()
    assert [t.read_bytes() for t in targets] == [f"file {i}\n".encode() for i in range(MANY)]
    assert not fs.partnered
    fs.close()


@needs_two_cores
def test_a_run_that_expects_many_writes_has_its_partner_up_before_the_first(
    tmp_path: Path,
) -> None:
    few = WritableFS(tag="run", partner=True)
    few.expect(START_AFTER - 1)
    fs = WritableFS(tag="run", partner=True)
    fs.expect(START_AFTER)
    deadline = time.monotonic() + 10
    while not fs.partnered:
        assert time.monotonic() < deadline, "the partner never started"
        time.sleep(0.01)
    assert not few.partnered, "a small run starts none"
    fs.write(tmp_path / "first.txt", b"first\n", exclusive=True)
    fs.commit()
    assert (tmp_path / "first.txt").read_bytes() == b"first\n"
    fs.close()
    few.close()


def test_paths_in_a_missing_folder_are_known_absent_from_one_look_at_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked: list[str] = []
    real_lstat = os.lstat

    def counting_lstat(path: str, *args: object, **kwargs: object) -> os.stat_result:
        looked.append(os.fspath(path))
        return real_lstat(path)

    witnesses: dict[str, object] = {}
    fs = ReadOnlyFS(witness=witnesses)  # type: ignore[arg-type]
    monkeypatch.setattr(os, "lstat", counting_lstat)
    paths = [str(tmp_path / "new" / f"f{i}") for i in range(50)]
    assert [fs.entry(p) for p in paths] == [None] * 50
    assert len(looked) == 2  # the first path, then its folder: the rest are known absent
    assert all(witnesses[p] is None for p in paths)  # each absent path is still witnessed


def test_paths_under_a_file_stay_blocked_and_a_folder_seen_there_is_looked_into(
    tmp_path: Path,
) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "there").mkdir()
    (tmp_path / "there" / "b").write_text("b")
    fs = ReadOnlyFS()
    assert [fs.entry(tmp_path / "file" / n) for n in ("a", "b")] == [Entry("blocked")] * 2
    assert fs.entry(tmp_path / "there" / "a") is None
    found = fs.entry(tmp_path / "there" / "b")
    assert found is not None and found.state == "file"


def test_a_file_system_that_writes_never_takes_a_missing_folder_for_granted(
    tmp_path: Path,
) -> None:
    fs = WritableFS(tag="t")
    target = tmp_path / "new" / "f"
    assert fs.entry(target) is None
    fs.write(target, b"made")
    fs.commit()
    found = fs.entry(target)
    assert found is not None and found.state == "file"


def test_a_file_removed_by_a_batch_makes_way_for_a_folder_it_writes_into(
    tmp_path: Path,
) -> None:
    """A tree restructured: ``x`` was a file and is now a folder. The temp files wait in
    the nearest folder there is until the commit has removed ``x``."""
    (tmp_path / "x").write_text("a file\n")
    fs = WritableFS()
    fs.remove(tmp_path / "x")
    fs.write(tmp_path / "x" / "deep" / "y.txt", b"y\n", exclusive=True)
    fs.symlink(tmp_path / "x" / "link", "y.txt", exclusive=True)
    assert (tmp_path / "x").read_text() == "a file\n", "nothing is visible before commit"
    fs.commit()
    assert (tmp_path / "x" / "deep" / "y.txt").read_text() == "y\n"
    assert os.readlink(tmp_path / "x" / "link") == "y.txt"
    assert sorted(p.name for p in tmp_path.rglob("*") if TEMP_MARK in p.name) == []


def test_a_folder_emptied_by_a_batch_makes_way_for_a_file_of_its_name(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "y.txt").write_text("y\n")
    fs = WritableFS()
    fs.remove(tmp_path / "x" / "y.txt", prune_up_to=tmp_path / "x")
    fs.write(tmp_path / "x", b"a file now\n", exclusive=True)
    fs.commit()
    assert (tmp_path / "x").read_text() == "a file now\n"


def test_a_file_in_the_way_of_a_folder_and_not_removed_is_a_conflict(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("somebody's\n")
    fs = WritableFS()
    with pytest.raises(ConflictError, match="not a folder is where trueup must create one"):
        fs.write(tmp_path / "x" / "y.txt", b"y\n", exclusive=True)
    fs.discard()
    assert (tmp_path / "x").read_text() == "somebody's\n"


def temp_names(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if TEMP_MARK in p.name)


def test_a_new_folder_is_made_whole_under_a_temp_name_and_renamed_into_place(
    tmp_path: Path,
) -> None:
    """Its files need no temp names of their own, nor a rename each."""
    fs = WritableFS(tag="t")
    fs.write(tmp_path / "new" / "a.txt", b"a", exclusive=True)
    fs.write(tmp_path / "new" / "deep" / "b.txt", b"b", exclusive=True)
    fs.symlink(tmp_path / "new" / "deep" / "link", "b.txt", exclusive=True)
    assert not (tmp_path / "new").exists(), "nothing is visible before commit"
    [folder] = temp_names(tmp_path)
    assert sorted(p.name for p in (tmp_path / folder).rglob("*")) == [
        "a.txt",
        "b.txt",
        "deep",
        "link",
    ]
    fs.commit()
    assert (tmp_path / "new" / "a.txt").read_bytes() == b"a"
    assert (tmp_path / "new" / "deep" / "b.txt").read_bytes() == b"b"
    assert os.readlink(tmp_path / "new" / "deep" / "link") == "b.txt"
    assert temp_names(tmp_path) == []
    fs.write(tmp_path / "new" / "later.txt", b"l", exclusive=True)  # an existing folder now
    assert len(temp_names(tmp_path)) == 1 and (tmp_path / "new").is_dir()
    fs.commit()
    assert (tmp_path / "new" / "later.txt").read_bytes() == b"l"


def test_a_folder_that_appears_where_a_new_one_goes_is_never_replaced(tmp_path: Path) -> None:
    fs = WritableFS(tag="t")
    fs.write(tmp_path / "new" / "a.txt", b"a", exclusive=True)
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "theirs.txt").write_text("a person's")
    with pytest.raises(TargetAppeared):
        fs.commit()
    fs.discard()
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["theirs.txt"]
    assert temp_names(tmp_path) == []


def test_discard_removes_a_new_folder_made_so_far(tmp_path: Path) -> None:
    fs = WritableFS(tag="t")
    fs.write(tmp_path / "new" / "deep" / "a.txt", b"a", exclusive=True)
    fs.discard()
    assert list(tmp_path.iterdir()) == []


@needs_two_cores
def test_a_partner_fills_new_folders_and_they_land_whole(tmp_path: Path) -> None:
    fs = WritableFS(tag="run", partner=True)
    targets = [tmp_path / "tree" / f"d{i % 7}" / f"f{i}.txt" for i in range(MANY)]
    for i, target in enumerate(targets):
        fs.write(target, f"file {i}\n".encode(), exclusive=True)
    fs.commit()
    for i, target in enumerate(targets):
        assert target.read_bytes() == f"file {i}\n".encode()
    assert temp_names(tmp_path) == []
    fs.close()
