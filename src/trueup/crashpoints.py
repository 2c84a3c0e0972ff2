"""Named journal boundaries where a crash or a signal can be injected.

Crash safety is tested by killing the process at every boundary and then
recovering: ``TRUEUP_CRASH_AT=name[:n[:SIGNAL]]`` sends SIGNAL (default
SIGKILL) to this process the n-th time (default first) it reaches ``name``.
Unset, ``reach`` costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

BOUNDARIES = (
    "run-started",
    "journal-pending",
    "rollback-flushed",
    "journal-running",
    "temp-created",
    "outcomes-noted",
    "temp-written",
    "mutated",
    "journal-succeeded",
    "run-finishing",
    "material-discarded",
)


def _parse(spec: str) -> dict[str, tuple[int, signal.Signals]]:
    if not spec:
        return {}
    name, _, rest = spec.partition(":")
    nth, _, signame = rest.partition(":")
    return {name: (int(nth or 1), signal.Signals[signame or "SIGKILL"])}


_armed = _parse(os.environ.get("TRUEUP_CRASH_AT", ""))


def reach(name: str) -> None:
    armed = _armed.get(name)
    if armed is None:
        return
    remaining, signum = armed
    if remaining > 1:
        _armed[name] = (remaining - 1, signum)
        return
    del _armed[name]
    os.kill(os.getpid(), signum)
