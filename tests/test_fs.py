"""The file system layer: a stat cache that is never fooled, writes that are atomic."""

from __future__ import annotations

import os
import stat
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

    def open_then_interrupted(
        path: str, flags: int, mode: int = 0o777, dir_fd: int | None = None
    ) -> int:
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
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
