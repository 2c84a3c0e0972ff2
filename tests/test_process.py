"""Running an outside program: no shell, a time limit, an output limit, no secret shown."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from trueup.process import locate, run
from trueup.redact import PLACEHOLDER, register_secret


def test_arguments_reach_the_program_as_they_are_with_no_shell(tmp_path: Path) -> None:
    done = run([sys.executable, "-c", "import sys; print(sys.argv[1:])", "$HOME", "a b;c"])
    assert done.ok and done.exit_code == 0
    assert done.output.strip() == "['$HOME', 'a b;c']"


def test_stdout_and_stderr_are_returned_together_with_the_exit_code() -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    done = run([sys.executable, "-c", code])
    assert done.exit_code == 3 and not done.ok
    assert "out" in done.output and "err" in done.output


def test_a_program_past_its_time_limit_is_stopped_with_everything_it_started() -> None:
    started = time.monotonic()
    code = "import subprocess, sys, time; subprocess.Popen(['sleep', '30']); time.sleep(30)"
    done = run([sys.executable, "-c", code], timeout=1)
    assert time.monotonic() - started < 10
    assert done.exit_code is None
    assert "did not finish within 1s" in done.problem


def test_output_past_the_limit_is_drained_and_dropped() -> None:
    done = run([sys.executable, "-c", "print('x' * 1_000_000)"], max_output=1000)
    assert done.ok  # the program was never blocked on a full pipe
    assert len(done.output) == 1000 and done.truncated


def test_a_known_secret_in_the_output_is_redacted() -> None:
    register_secret("hunter2-very-secret")
    done = run([sys.executable, "-c", "print('token=hunter2-very-secret')"])
    assert "hunter2" not in done.output
    assert f"token={PLACEHOLDER}" in done.output


def test_a_program_that_cannot_start_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    done = run([str(tmp_path / "missing-tool"), "--version"])
    assert done.exit_code is None and "could not start" in done.problem


def test_locate_searches_the_path_it_is_given(tmp_path: Path) -> None:
    tool = tmp_path / "mytool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert locate("mytool", {"PATH": str(tmp_path)}) == str(tool)
    assert locate("mytool", {"PATH": str(tmp_path / "elsewhere")}) is None
