"""The read-only view: reads with a size limit, never follows links, never writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trueup.errors import ConflictError
from trueup.fs import (
    Entry,
    FileTooLargeError,
    ReadOnlyFS,
)


def test_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 100)
    with pytest.raises(FileTooLargeError, match="over the file-size limit of 10 bytes"):
        ReadOnlyFS(max_file_bytes=10).read_bytes(path)


def test_walk_never_follows_symlinks(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    found = ReadOnlyFS().walk(tmp_path)
    assert found["link"].state == "symlink"
    assert "link/x" not in found


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
