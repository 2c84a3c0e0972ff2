"""Named journal boundaries where a crash can be injected.

Crash safety is tested by killing the process at every boundary and then
recovering; ``TRUEUP_CRASH_AT=name[:n]`` sends SIGKILL to this process the
n-th time (default first) it reaches ``name``. Unset, ``reach`` costs one
dictionary lookup.
"""

from __future__ import annotations

import os
import signal

BOUNDARIES = (
    "run-started",
    "journal-pending",
    "rollback-flushed",
    "journal-running",
    "temp-written",
    "mutated",
    "journal-succeeded",
    "run-finishing",
)

_spec = os.environ.get("TRUEUP_CRASH_AT", "")
_name, _, _nth = _spec.partition(":")
_remaining = {_name: int(_nth or 1)} if _name else {}


def reach(name: str) -> None:
    if name in _remaining:
        _remaining[name] -= 1
        if _remaining[name] == 0:
            os.kill(os.getpid(), signal.SIGKILL)
