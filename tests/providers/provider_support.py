"""Helpers for the provider-client tests."""

from __future__ import annotations

import time

from trueup.testing import RequestLog


def logged(log: RequestLog, count: int) -> RequestLog:
    """The log once it holds ``count`` entries: a fake records a request just after answering."""
    deadline = time.monotonic() + 2
    while len(log) < count and time.monotonic() < deadline:
        time.sleep(0.005)
    return log
