"""Switchable faults shared by every fake provider.

Real provider APIs are slow, rate limited, flaky and occasionally hang up.
Clients that only ever meet a perfect server break in production, so each
fake consults one `Faults` object per request and may delay, refuse (429 with
``Retry-After``), fail (5xx) or drop the request before the provider logic
runs. Faults are plain data: set them at construction, change them from the
test thread (`Faults.update`) or over HTTP (``POST /_fake/faults``).

Evaluation order per request (first match wins, latency always applies):

1. ``drop``: close the connection without any response;
   ``garble``: answer 200 with an HTML page, as a proxy or portal in the way does;
2. ``rate_limit``: a burst of N 429 responses;
3. the per-token sliding-window limit (``token_limit`` per ``token_window``);
4. ``server_errors``: the next N requests answer 500/502/503 in turn;
5. ``server_error_rate``: a seeded random 5xx;
6. ``fail_ratio``: a seeded random 429 or 5xx.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

FaultKind = Literal["drop", "garble", "rate_limit", "token_limit", "server_error", "random"]

#: Fault fields that can be set over HTTP or through `Faults.update`.
FAULT_FIELDS = (
    "latency",
    "rate_limit",
    "retry_after",
    "token_limit",
    "token_window",
    "server_errors",
    "server_error_statuses",
    "server_error_rate",
    "drop",
    "garble",
    "fail_ratio",
    "seed",
)


@dataclass(frozen=True)
class Decision:
    """What the fault layer decided for one request."""

    latency: float = 0.0
    kind: FaultKind | None = None
    status: int | None = None
    retry_after: int | None = None


@dataclass(eq=False)
class Faults:
    """Fault configuration plus the runtime state needed to apply it.

    ``token_limit=None`` means "the provider's real limit" (Cloudflare
    1200 per 300 s, Coolify 200 per 60 s, ZITADEL none); ``0`` disables the
    limit; a positive number replaces it (``token_window`` seconds, or the
    provider's window when ``None``). Counted faults (``drop``, ``garble``,
    ``rate_limit``, ``server_errors``) count down as they fire, so reading
    them tells how many are left.
    """

    latency: float = 0.0
    rate_limit: int = 0
    retry_after: int = 1
    token_limit: int | None = None
    token_window: float | None = None
    server_errors: int = 0
    server_error_statuses: tuple[int, ...] = (500, 502, 503)
    server_error_rate: float = 0.0
    drop: int = 0
    garble: int = 0
    fail_ratio: float = 0.0
    seed: int = 0

    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _rng: random.Random = field(default_factory=random.Random, init=False, repr=False)
    _initial: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _windows: dict[str, deque[float]] = field(default_factory=dict, init=False, repr=False)
    _error_turn: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.server_error_statuses = tuple(self.server_error_statuses)
        _validate(self.config())
        self._initial = self.config()
        self._rng.seed(self.seed)

    def config(self) -> dict[str, Any]:
        """The public settings as a JSON-ready dict (what ``GET /_fake/faults`` shows)."""
        out: dict[str, Any] = {name: getattr(self, name) for name in FAULT_FIELDS}
        out["server_error_statuses"] = list(self.server_error_statuses)
        return out

    def update(self, **changes: Any) -> Faults:
        """Change settings at runtime; unknown or invalid values raise `ValueError`.

        Changing ``seed`` re-seeds the random generator so a run can be replayed.
        """
        unknown = sorted(set(changes) - set(FAULT_FIELDS))
        if unknown:
            raise ValueError(f"unknown fault field(s): {', '.join(unknown)}")
        merged = {**self.config(), **changes}
        _validate(merged)
        with self._lock:
            for name, value in changes.items():
                if name == "server_error_statuses":
                    value = tuple(int(v) for v in value)
                setattr(self, name, value)
            if "seed" in changes:
                self._rng.seed(self.seed)
            if "token_limit" in changes or "token_window" in changes:
                self._windows.clear()
        return self

    def reset(self) -> None:
        """Back to the construction-time settings, with fresh counters and RNG."""
        with self._lock:
            for name, value in self._initial.items():
                setattr(self, name, tuple(value) if name == "server_error_statuses" else value)
            self._rng.seed(self.seed)
            self._windows.clear()
            self._error_turn = 0

    def copy(self) -> Faults:
        """An independent `Faults` with the same settings (runtime state not shared)."""
        cfg = self.config()
        cfg["server_error_statuses"] = tuple(cfg["server_error_statuses"])
        return Faults(**cfg)

    def decide(
        self,
        token: str | None,
        default_limit: tuple[int, float] | None = None,
        now: float | None = None,
    ) -> Decision:
        """Pick the fault for one request; mutates counters, so call once per request."""
        moment = time.monotonic() if now is None else now
        with self._lock:
            latency = float(self.latency)
            if self.drop > 0:
                self.drop -= 1
                return Decision(latency, "drop")
            if self.garble > 0:
                self.garble -= 1
                return Decision(latency, "garble")
            if self.rate_limit > 0:
                self.rate_limit -= 1
                return Decision(latency, "rate_limit", 429, int(self.retry_after))
            limited = self._check_token_limit(token or "", default_limit, moment)
            if limited is not None:
                return Decision(latency, "token_limit", 429, limited)
            if self.server_errors > 0:
                self.server_errors -= 1
                statuses = self.server_error_statuses
                status = statuses[self._error_turn % len(statuses)]
                self._error_turn += 1
                return Decision(latency, "server_error", status)
            if self.server_error_rate > 0 and self._rng.random() < self.server_error_rate:
                return Decision(
                    latency, "server_error", self._rng.choice(self.server_error_statuses)
                )
            if self.fail_ratio > 0 and self._rng.random() < self.fail_ratio:
                choices = (429, *self.server_error_statuses)
                status = self._rng.choice(choices)
                retry = int(self.retry_after) if status == 429 else None
                return Decision(latency, "random", status, retry)
            return Decision(latency)

    def _check_token_limit(
        self, token: str, default_limit: tuple[int, float] | None, now: float
    ) -> int | None:
        """Sliding-window limit per token; returns Retry-After seconds when exceeded."""
        if self.token_limit == 0:
            return None
        if self.token_limit is None:
            if default_limit is None:
                return None
            limit, window = default_limit
        else:
            limit = self.token_limit
            window = default_limit[1] if default_limit else 60.0
        if self.token_window is not None:
            window = float(self.token_window)
        hits = self._windows.setdefault(token, deque())
        while hits and hits[0] <= now - window:
            hits.popleft()
        if len(hits) >= limit:
            return max(1, math.ceil(hits[0] + window - now))
        hits.append(now)
        return None


def _validate(cfg: dict[str, Any]) -> None:
    """Reject settings that would make the fake misbehave in confusing ways."""

    def number(name: str, lo: float, hi: float | None = None) -> None:
        value = cfg[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name} must be a number")
        if value < lo or (hi is not None and value > hi):
            bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
            raise ValueError(f"{name} must be {bound}")

    def count(name: str) -> None:
        value = cfg[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer")

    number("latency", 0)
    for name in ("rate_limit", "retry_after", "server_errors", "drop", "garble"):
        count(name)
    if cfg["token_limit"] is not None:
        count("token_limit")
    if cfg["token_window"] is not None:
        number("token_window", 0.001)
    number("server_error_rate", 0, 1)
    number("fail_ratio", 0, 1)
    if isinstance(cfg["seed"], bool) or not isinstance(cfg["seed"], int):
        raise ValueError("seed must be an integer")
    statuses = cfg["server_error_statuses"]
    if not isinstance(statuses, list | tuple) or not statuses:
        raise ValueError("server_error_statuses must be a non-empty list")
    for status in statuses:
        if isinstance(status, bool) or not isinstance(status, int) or not 500 <= status <= 599:
            raise ValueError("server_error_statuses must hold 5xx status codes")
