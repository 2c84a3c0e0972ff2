"""Cheap job steps for tests and benchmarks: record, sleep, fail on demand.

Load them into a worker with ``trueup worker --import trueup.testing.steps``.
``testing.record`` appends one line per execution to a log file (``O_APPEND``,
one ``write``), so a test can count how often each step really ran across
workers that were killed mid-run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trueup.execute.runner import StepAborted, StepContext, step_handler


def _nap(ctx: StepContext, seconds: float) -> None:
    """Sleep, but stop early (like a killed step) when the runner is told to abort."""
    if seconds > 0 and ctx.abort.wait(seconds):
        raise StepAborted("aborted mid-step")


@step_handler("testing.record")
def record(ctx: StepContext) -> Mapping[str, Any]:
    """Log ``<run> <step> <attempt>``; params: ``log`` (path), optional ``sleep``."""
    params = ctx.step.params
    _nap(ctx, float(params.get("sleep", 0)))
    line = f"{ctx.run.id} {ctx.step.id} {ctx.attempt} {os.getpid()}\n".encode()
    fd = os.open(params["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return {"pid": os.getpid()}


@step_handler("testing.sleep")
def sleep(ctx: StepContext) -> Mapping[str, Any]:
    """Simulated latency (a provider call); params: ``seconds``."""
    started = time.monotonic()
    _nap(ctx, float(ctx.step.params.get("seconds", 0)))
    return {"slept": round(time.monotonic() - started, 4)}


@step_handler("testing.fail")
def fail(ctx: StepContext) -> Mapping[str, Any]:
    """Fail with ``message`` unless the file ``unless`` exists (a fix a person makes)."""
    params = ctx.step.params
    fixed = params.get("unless")
    if fixed and Path(fixed).exists():
        return {"fixed": True}
    raise RuntimeError(params.get("message", "the step failed as asked"))
