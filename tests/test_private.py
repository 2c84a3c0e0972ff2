"""trueup's own files and folders: their owner's alone, whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from trueup.private import copy_mode, make_folders, private_store_file, write_file


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(params=[0o000, 0o022, 0o277], ids=["umask-000", "umask-022", "umask-277"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def test_folders_made_are_0700_and_folders_there_are_left_alone(tmp_path: Path, umask: int) -> None:
    (tmp_path / "theirs").mkdir(mode=0o755)
    os.chmod(tmp_path / "theirs", 0o755)
    make_folders(tmp_path / "theirs" / "a" / "b")
    make_folders(tmp_path / "theirs" / "a" / "b")  # there already: nothing to do
    assert _mode(tmp_path / "theirs") == 0o755
    assert _mode(tmp_path / "theirs" / "a") == _mode(tmp_path / "theirs" / "a" / "b") == 0o700


def test_a_file_written_is_0600_even_over_a_wider_one(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")
    os.chmod(path, 0o666)
    write_file(path, b"new")
    assert path.read_bytes() == b"new" and _mode(path) == 0o600
    write_file(tmp_path / "g", b"x" * 100_000, 0o400)
    assert _mode(tmp_path / "g") == 0o400 and (tmp_path / "g").stat().st_size == 100_000


def test_a_store_file_and_its_companions_are_narrowed(tmp_path: Path, umask: int) -> None:
    store = tmp_path / "s.db"
    private_store_file(store)
    assert store.exists() and store.stat().st_size == 0 and _mode(store) == 0o600
    wal = tmp_path / "s.db-wal"
    wal.write_bytes(b"")
    os.chmod(store, 0o644)
    os.chmod(wal, 0o664)
    private_store_file(store)
    assert _mode(store) == _mode(wal) == 0o600


@pytest.mark.parametrize(
    ("source", "copy"), [(0o644, 0o600), (0o755, 0o600), (0o600, 0o600), (0o400, 0o400)]
)
def test_a_copy_is_never_more_readable_than_its_file(source: int, copy: int) -> None:
    assert copy_mode(stat.S_IFREG | source) == copy
