"""A run's holder is a process, told apart from whatever has its pid later."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from trueup.state.holder import identity

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


def test_a_process_keeps_its_identity_and_another_has_another() -> None:
    mine = identity(os.getpid())
    assert mine is not None and mine == identity(os.getpid())
    other = subprocess.Popen(["sleep", "5"])
    try:
        assert identity(other.pid) not in (None, mine)
    finally:
        other.kill()
        other.wait()


def test_a_gone_process_has_none() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert identity(gone.pid) is None
