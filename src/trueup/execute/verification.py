"""Command verification: a declared command must exit 0 after a change.

The command's output is never read, kept or stored: it could hold anything
(a token a health check prints, a megabyte of logs), and the run's message,
its journal and the audit log outlive the run. Only the exit code counts; a
failure names the command so a person can run it and read its output.
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
        message=redact_message(
            f"verification command exited {returncode} (its output is not kept; "
            f"run it in {root} to see it: {shlex.join(command)})"
        ),
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
