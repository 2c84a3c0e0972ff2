"""The file-system steps below fs/: temp files, exclusive renames, flushes."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from trueup.fsops import create_temp, file_systems, parent_of, rename_exclusive


@pytest.mark.parametrize("mode", [0o600, 0o644, 0o755, 0o666, 0o777])
def test_a_temp_file_gets_exactly_its_mode_whatever_the_umask(tmp_path: Path, mode: int) -> None:
    temp = tmp_path / ".t"
    previous = os.umask(0o077)
    try:
        create_temp(str(temp), b"data", mode, None)
    finally:
        os.umask(previous)
    assert temp.read_bytes() == b"data"
    assert stat.S_IMODE(temp.stat().st_mode) == mode


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file to somebody else")
def test_a_file_given_to_its_owner_keeps_its_setuid_bit(tmp_path: Path) -> None:
    temp = tmp_path / ".t"
    create_temp(str(temp), b"#!/bin/sh\n", 0o4755, (1000, 1000))
    st = temp.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1000, 1000, 0o4755)


def test_a_temp_file_is_never_opened_where_something_is(tmp_path: Path) -> None:
    temp = tmp_path / ".t"
    temp.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        create_temp(str(temp), b"data", 0o644, None)
    assert not (tmp_path / "elsewhere").exists()


def test_an_exclusive_rename_refuses_what_is_there(tmp_path: Path) -> None:
    (tmp_path / ".t").write_text("new")
    (tmp_path / "f").write_text("somebody's")
    with pytest.raises(FileExistsError):
        rename_exclusive(str(tmp_path / ".t"), str(tmp_path / "f"))
    assert (tmp_path / "f").read_text() == "somebody's"
    os.unlink(tmp_path / "f")
    rename_exclusive(str(tmp_path / ".t"), str(tmp_path / "f"))
    assert (tmp_path / "f").read_text() == "new"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="only Linux grows a pipe")
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


@pytest.mark.parametrize("path", ["/a/b/c.txt", "/a", "/", "a/b", "a", "", "/a/.hidden", "/a b/ü"])
def test_the_parent_of_a_normal_path_is_what_dirname_says(path: str) -> None:
    assert parent_of(path) == os.path.dirname(path)
