"""A per-provider log of the API requests a fake answered.

Tests assert on what a client actually sent (how many POSTs, whether it
retried after a 429) without reaching into the client, so every request that
passes the fault layer is recorded with its final status or fault.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

_SEQ = itertools.count(1)


@dataclass(frozen=True)
class LoggedRequest:
    """One answered (or dropped) request. ``status`` is ``None`` for a drop."""

    seq: int
    provider: str
    method: str
    path: str
    query: str
    status: int | None
    fault: str | None
    at: float
    #: The JSON body the provider logic was handed (None: none, not JSON, or faulted
    #: before it was read): what request-shape tests check against the real API.
    body: Any = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class RequestLog:
    """Thread-safe, append-only (until cleared) list of `LoggedRequest`."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self._lock = threading.Lock()
        self._entries: list[LoggedRequest] = []

    def record(
        self,
        method: str,
        path: str,
        query: str,
        status: int | None,
        fault: str | None,
        body: Any = None,
    ) -> LoggedRequest:
        entry = LoggedRequest(
            seq=next(_SEQ),
            provider=self.provider,
            method=method,
            path=path,
            query=query,
            status=status,
            fault=fault,
            at=time.time(),
            body=body,
        )
        with self._lock:
            self._entries.append(entry)
        return entry

    @property
    def entries(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def matching(self, method: str | None = None, path: str | None = None) -> list[LoggedRequest]:
        """Entries with this method and/or exact path (no query string)."""
        return [
            e
            for e in self.entries
            if (method is None or e.method == method.upper()) and (path is None or e.path == path)
        ]

    def counts(self) -> dict[str, Any]:
        """Totals by status, by ``"METHOD path"`` and by fault kind."""
        entries = self.entries
        by_status = Counter("dropped" if e.status is None else str(e.status) for e in entries)
        by_route = Counter(f"{e.method} {e.path}" for e in entries)
        by_fault = Counter(e.fault for e in entries if e.fault)
        return {
            "total": len(entries),
            "by_status": dict(by_status),
            "by_route": dict(by_route),
            "by_fault": dict(by_fault),
        }

    def to_json(self) -> dict[str, Any]:
        return {"requests": [e.to_json() for e in self.entries], "counts": self.counts()}
