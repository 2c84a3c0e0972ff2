"""The writer: staged writes, committed in a crash-safe order, never over what appeared."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from trueup.errors import ConflictError
from trueup.fs import (
    TEMP_MARK,
    ReadOnlyFS,
    TargetAppeared,
    WritableFS,
    sha256_bytes,
)
from trueup.statcache import StatCache


def age(path: Path, seconds: float) -> None:
    past = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(past, past))


def temp_names(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if TEMP_MARK in p.name)


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
