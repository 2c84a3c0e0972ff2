"""Run an org's remote steps concurrently: independent ones at once, dependents in order.

Why: a provider call costs its round trip (tens of milliseconds), and an org
of 500 DNS records applied one call at a time spends a minute waiting on the
network. Steps that do not depend on each other overlap their latency, while

- a step starts only once every step it depends on (``Action.before``) has
  succeeded, and a removal runs alone, after everything planned before it
  (removals free names and domains the later steps take, in plan order);
- each provider has its own bound on steps in flight (its rate limit is its
  own), and one bound caps them all;
- after the first failure nothing new starts: the steps in flight finish and
  are journaled as they end, so the journal stays exact, then the failure is
  raised as it would be in a serial run;
- an interrupt (Ctrl-C, SIGTERM) also starts nothing new and waits for the
  steps in flight to end (their results recorded), then says which they
  were; a second interrupt stops waiting, leaving those steps' fate unknown.

With a bound of 1 the steps run one by one in plan order, as a serial run.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from trueup.errors import UsageError
from trueup.model import Action, ActionType

#: Steps in flight per provider by default: within each one's rate limit
#: (Cloudflare 1200 per 5 min, Coolify 200 per min) with a margin for bursts.
DEFAULT_LIMITS: Mapping[str, int] = {"cloudflare": 16, "coolify": 6, "zitadel": 8}
#: Any other provider's bound.
FALLBACK_LIMIT = 4
#: The variable that caps every provider's bound (1: one step at a time).
TOTAL_VARIABLE = "TRUEUP_REMOTE_CONCURRENCY"

Step = tuple[int, Action]
#: A second interrupt while waiting for the steps in flight.
_STOPPING: tuple[type[BaseException], ...] = (KeyboardInterrupt, Exception)


@dataclass(frozen=True)
class Limits:
    """How many steps may be in flight: per provider, and in all."""

    per_provider: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    total: int | None = None

    def of(self, provider: str) -> int:
        own = self.per_provider.get(provider, FALLBACK_LIMIT)
        return min(own, self.total) if self.total is not None else own

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        """``TRUEUP_<PROVIDER>_CONCURRENCY`` per provider, ``TRUEUP_REMOTE_CONCURRENCY`` for all."""
        env = os.environ if env is None else env
        per = {
            provider: _bound(env, f"TRUEUP_{provider.upper()}_CONCURRENCY", default)
            for provider, default in DEFAULT_LIMITS.items()
        }
        total = _bound(env, TOTAL_VARIABLE, None) if env.get(TOTAL_VARIABLE) else None
        return cls(per, total)


def _bound(env: Mapping[str, str], name: str, default: int | None) -> int:
    text = env.get(name)
    if not text:
        assert default is not None
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 256:
        raise UsageError(
            f"{name}={text!r} is not a number of steps from 1 to 256",
            hint=f"unset {name} to use the default, or set it to 1 for one step at a time",
        )
    return value


class StepsInterrupted(Exception):
    """An interrupt stopped the run; ``finished`` ended meanwhile, ``unknown`` did not."""

    def __init__(self, finished: Sequence[Step], unknown: Sequence[Step]) -> None:
        super().__init__("interrupted")
        self.finished = list(finished)
        self.unknown = list(unknown)


def provider_of(action: Action) -> str:
    return action.kind.partition(".")[0]


def prerequisites(steps: Sequence[Step]) -> dict[int, set[int]]:
    """For each step's seq, the seqs that must have succeeded before it starts."""
    seq_of = {action.resource_id: seq for seq, action in steps}
    needs: dict[int, set[int]] = {}
    removals: list[int] = []
    earlier: list[int] = []
    for seq, action in steps:
        wanted = {seq_of[rid] for rid in action.before if rid in seq_of}
        if action.type is ActionType.REMOVE_RESOURCE:
            wanted.update(earlier)
        wanted.update(removals)
        needs[seq] = wanted
        earlier.append(seq)
        if action.type is ActionType.REMOVE_RESOURCE:
            removals.append(seq)
    return needs


class RemoteScheduler:
    """Runs ``step`` for every step, concurrently within ``limits`` and the dependencies."""

    def __init__(
        self, limits: Limits, interrupts: tuple[type[BaseException], ...] = (KeyboardInterrupt,)
    ) -> None:
        self.limits = limits
        #: What stops a run from outside (Ctrl-C, SIGTERM turned into an exception).
        self.interrupts = interrupts

    def run(self, steps: Sequence[Step], step: Callable[[int, Action], None]) -> None:
        """Every step run (or the first failure raised once those in flight ended)."""
        needs = prerequisites(steps)
        waiting = list(steps)
        done: set[int] = set()
        seen: set[int] = set()  # the steps whose end this loop has taken in
        busy: Counter[str] = Counter()
        in_flight: dict[Future[None], Step] = {}
        flight = _Flight(step)
        total = self.limits.total or sum(self.limits.of(provider_of(a)) for _, a in steps) or 1
        failure: BaseException | None = None
        pool = ThreadPoolExecutor(max_workers=min(total, len(steps)) or 1)
        try:
            while waiting or in_flight:
                if failure is None:
                    for item in list(waiting):
                        seq, action = item
                        provider = provider_of(action)
                        if len(in_flight) >= total:
                            break
                        if busy[provider] >= self.limits.of(provider) or not needs[seq] <= done:
                            continue
                        waiting.remove(item)
                        busy[provider] += 1
                        in_flight[pool.submit(flight.run, seq, action)] = item
                if not in_flight:
                    break  # a failure stopped the rest (a cycle cannot be planned)
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in finished:
                    seq, action = in_flight.pop(future)
                    seen.add(seq)
                    busy[provider_of(action)] -= 1
                    error = future.exception()
                    if error is None:
                        done.add(seq)
                    elif failure is None:
                        failure = error
        except self.interrupts:
            raise flight.interrupted(seen) from None
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if failure is not None:
            raise failure


class _Flight:
    """The steps running in worker threads, known from the threads themselves.

    An interrupt may land between handing a step to the pool and noting its
    future (even before the pool notes its thread), so what is in flight is
    what the threads say they started, under one lock with the stop flag.
    """

    def __init__(self, step: Callable[[int, Action], None]) -> None:
        self.step = step
        self.stopped = False
        self.changed = threading.Condition()
        self.running: dict[int, Step] = {}
        self.ended: list[Step] = []

    def run(self, seq: int, action: Action) -> None:
        with self.changed:
            if self.stopped:  # picked up after the interrupt: never started
                return
            self.running[seq] = (seq, action)
        try:
            self.step(seq, action)
        finally:
            with self.changed:
                del self.running[seq]
                self.ended.append((seq, action))
                self.changed.notify_all()

    def interrupted(self, seen: set[int]) -> StepsInterrupted:
        """Start nothing more, wait for the steps in flight; a second interrupt stops waiting."""
        with self.changed:
            self.stopped = True
            # A timeout keeps the wait interruptible by a second Ctrl-C.
            with contextlib.suppress(*_STOPPING):
                while self.running:
                    self.changed.wait(0.1)
            finished = sorted(s for s in self.ended if s[0] not in seen)
            return StepsInterrupted(finished, sorted(self.running.values()))
