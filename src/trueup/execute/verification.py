"""Command verification: a declared command must exit 0 after a change.

The command's output is never kept or stored: it could hold anything (a
token a health check prints, a megabyte of logs), and the run's message, its
journal and the audit log outlive the run. The exit code counts, and with
``expect_contains`` whether the first 64 KiB of output (redacted) hold that
text, searched in memory and dropped; a failure names the command so a person
can run it and read its output.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from trueup.model import Evidence, Resource
from trueup.redact import redact_message

DEFAULT_TIMEOUT = 600
#: Commands run at once (machine-sync.md, Limits): a batch of resources that each
#: declare a check of a second waits about a quarter as long.
CONCURRENCY = 4
#: How much of a command's output ``expect_contains`` searches.
EXPECT_OUTPUT = 64 * 1024


def verify_commands(resources: Sequence[Resource | None], root: Path) -> list[Evidence | None]:
    """``verify_command`` of each resource (``None``: none to run), ``CONCURRENCY`` at once.

    Results come in order. Each command is a process of its own: threads only
    wait for them.
    """
    declaring = [
        (i, r) for i, r in enumerate(resources) if r is not None and (r.verify or {}).get("command")
    ]
    found: list[Evidence | None] = [None] * len(resources)
    if not declaring:
        return found
    from concurrent.futures import ThreadPoolExecutor

    running: set[subprocess.Popen[bytes]] = set()
    with ThreadPoolExecutor(min(CONCURRENCY, len(declaring))) as pool:
        try:
            checked = list(pool.map(lambda pair: verify_command(pair[1], root, running), declaring))
        except BaseException:
            # A signal (or a failure) stops the run: its commands stop with it, rather
            # than the run waiting for each of them, up to its timeout.
            for process in list(running):
                _stop(process)
            raise
    for (i, _), evidence in zip(declaring, checked, strict=True):
        found[i] = evidence
    return found


def verify_command(
    resource: Resource, root: Path, running: set[subprocess.Popen[bytes]]
) -> Evidence | None:
    """Run the resource's verification command, if it declares one.

    ``running`` holds the command's process while it runs, so a caller can stop it.
    """
    spec = resource.verify or {}
    command = spec.get("command")
    if not command:
        return None
    timeout = int(spec.get("timeout", DEFAULT_TIMEOUT))
    if spec.get("expect_contains"):
        return _expecting(command, spec["expect_contains"], root, timeout, running)
    try:
        process = subprocess.Popen(
            command,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stopped whole (_stop)
        )
    except OSError as exc:
        return Evidence("failed", "command", message=f"verification could not start: {exc}")
    running.add(process)
    try:
        returncode = process.wait(timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        process.wait()
        return Evidence("failed", "command", message=f"verification timed out after {timeout}s")
    finally:
        running.discard(process)
    if returncode == 0:
        return Evidence("passed", "command", exit_code=0)
    return Evidence(
        "failed",
        "command",
        exit_code=returncode,
        message=_see_for_yourself(f"verification command exited {returncode}", command, root),
    )


def _expecting(
    command: list[str],
    expect: str,
    root: Path,
    timeout: int,
    running: set[subprocess.Popen[bytes]],
) -> Evidence:
    """The command must exit 0 and its output (bounded, redacted) hold ``expect``.

    The output is searched, never kept: only whether it held the string is.
    """
    from trueup.process import run

    mine: list[subprocess.Popen[bytes]] = []

    def started(process: subprocess.Popen[bytes]) -> None:
        mine.append(process)
        running.add(process)

    try:
        done = run(command, timeout=timeout, max_output=EXPECT_OUTPUT, cwd=root, started=started)
    finally:
        running.difference_update(mine)
    if done.exit_code is None:
        return Evidence("failed", "command", message=redact_message(done.problem))
    if done.exit_code != 0:
        why = f"verification command exited {done.exit_code}"
        message = _see_for_yourself(why, command, root)
        return Evidence("failed", "command", exit_code=done.exit_code, message=message)
    if expect not in done.output:
        why = f"verification command's output does not contain {expect!r}"
        message = _see_for_yourself(why, command, root)
        return Evidence("failed", "command", exit_code=0, message=message)
    return Evidence("passed", "command", exit_code=0)


def _see_for_yourself(why: str, command: list[str], root: Path) -> str:
    return redact_message(
        f"{why} (its output is not kept; run it in {root} to see it: {shlex.join(command)})"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill a command with everything it started (a shell's children outlive the shell).

    Left running, they could still change the root after trueup restored it
    and exited.
    """
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:  # its group is gone already
        process.kill()
