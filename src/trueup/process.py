"""Run a program the way trueup runs every outside program: no shell, bounded.

Tools are observed by running their version command, installed by running a
package manager, and agent tasks run a coding agent's CLI. Each of those is a
process trueup did not write, so none of them may hang a run, flood its
memory or leak a secret into a message: an argument list (never a shell
line), a time limit after which the whole process group is killed, an output
limit past which bytes are drained and dropped, and every known secret
redacted before the output is returned.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from trueup.redact import redact, redact_message

#: machine-sync.md, Limits: a process gets ten minutes and one MiB of output.
DEFAULT_TIMEOUT = 600.0
DEFAULT_MAX_OUTPUT = 1024 * 1024
_CHUNK = 65536


@dataclass(frozen=True)
class Finished:
    """How a process ended: its exit code (``None`` if it never ran or was killed),
    its output (stdout and stderr together, bounded and redacted) and, when it
    did not run to its end, why."""

    exit_code: int | None
    output: str
    truncated: bool = False
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def locate(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The executable ``name`` resolves to on ``env``'s PATH (the process's own by default)."""
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    return shutil.which(name, path=path)


def run(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    started: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> Finished:
    """Run ``argv`` to its end, or until ``timeout`` seconds have passed.

    ``started`` is handed the process as soon as it runs: a caller that may have
    to stop it early (a signal to the run) keeps it.
    """
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: killed whole on a timeout
        )
    except OSError as exc:
        return Finished(None, "", problem=redact_message(f"could not start {argv[0]}: {exc}"))
    if started is not None:
        started(process)
    kept = bytearray()
    dropped = [0]
    reader = threading.Thread(target=_drain, args=(process, kept, dropped, max_output))
    reader.start()
    try:
        code: int | None = process.wait(timeout)
        problem = ""
    except subprocess.TimeoutExpired:
        _kill(process)
        process.wait()
        code, problem = None, f"{argv[0]} did not finish within {timeout:g}s and was stopped"
    except BaseException:
        _kill(process)
        raise
    finally:
        reader.join()
    text = redact(kept.decode("utf-8", "replace"))
    return Finished(code, text, dropped[0] > 0, problem)


def _drain(
    process: subprocess.Popen[bytes], kept: bytearray, dropped: list[int], limit: int
) -> None:
    """Read everything the process writes (so it never blocks on a full pipe), keep
    the first ``limit`` bytes."""
    assert process.stdout is not None
    with process.stdout:
        while chunk := os.read(process.stdout.fileno(), _CHUNK):
            room = limit - len(kept)
            kept += chunk[: max(room, 0)]
            dropped[0] += max(len(chunk) - max(room, 0), 0)


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:  # the group is gone already
        process.kill()
