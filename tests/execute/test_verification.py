"""Declared verification commands: only their exit code counts, and they never outlive a run."""

from __future__ import annotations

import os
import time
from pathlib import Path

from trueup.execute.verification import verify_command
from trueup.model import Resource


def _checked_by(command: list[str], timeout: int = 5) -> Resource:
    return Resource(
        "r", "file", "replace", "f", {}, verify={"command": command, "timeout": timeout}
    )


def _gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(") ", 1)[1].startswith("Z"):
                    return True  # killed, waiting to be reaped by init
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def test_a_command_that_times_out_is_stopped_with_everything_it_started(tmp_path: Path) -> None:
    """A shell's child would otherwise go on, and could change the root after the run."""
    script = "sleep 30 & echo $! > child.pid; wait"
    evidence = verify_command(_checked_by(["sh", "-c", script], timeout=1), tmp_path, set())
    assert evidence is not None and not evidence.passed
    assert "timed out after 1s" in evidence.message
    assert _gone(int((tmp_path / "child.pid").read_text()))


def test_only_the_exit_code_counts(tmp_path: Path) -> None:
    prints = "printf 'tok%s\\n' en-123"  # its output is not spelt in the command
    passed = verify_command(_checked_by(["sh", "-c", prints]), tmp_path, set())
    failed = verify_command(_checked_by(["sh", "-c", f"{prints}; exit 3"]), tmp_path, set())
    assert passed is not None and passed.passed
    assert failed is not None and failed.exit_code == 3
    assert "token-123" not in failed.message and "exited 3" in failed.message
    assert os.listdir(tmp_path) == []
