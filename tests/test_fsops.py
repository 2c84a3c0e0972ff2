"""The file-system steps trueup shares with its helper processes."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from trueup.fsops import PIPE_BYTES, create_temp, rename_exclusive, widen_pipe


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
def test_a_pipe_between_processes_is_grown_and_its_size_told() -> None:
    read, write = os.pipe()
    try:
        assert widen_pipe(write) == PIPE_BYTES == 1 << 20
    finally:
        os.close(read)
        os.close(write)
