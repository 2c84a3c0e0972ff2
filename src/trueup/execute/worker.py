"""``trueup worker``: drain the shared queue, one job at a time, on any host.

Several workers on several hosts share one queue: each claims the oldest
queued job (or one whose worker's lease ran out) with ``FOR UPDATE SKIP
LOCKED``, runs it under a renewed lease, and records the result in the audit
log under the actor who queued it. SIGTERM and SIGINT stop a worker between
steps, leaving the job exactly as a kill would: another worker resumes it
from its checkpoint once the lease runs out.
"""

from __future__ import annotations

import importlib
import logging
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from trueup import audit, authz
from trueup.errors import UsageError
from trueup.execute.runner import DEFAULT_LEASE, LeaseLost, Runner, StepFailed
from trueup.state.jobs import Job
from trueup.state.store import RunInfo, Store

log = logging.getLogger(__name__)


def load_handlers(modules: Iterable[str] = ()) -> None:
    """Import the built-in handlers and any named modules that register more.

    Here, not in runner.py: the built-in handler module imports the runner.
    """
    from trueup.execute import (
        queued_apply,  # noqa: F401 - registers ``profile.apply``
        queued_org,  # noqa: F401 - registers ``org.apply``
    )

    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise  # the module is there; something it imports is not
            raise UsageError(
                f"--import {module}: no such module",
                hint="name a module importable by this Python (check the spelling and sys.path)",
            ) from None


@dataclass
class WorkerStats:
    succeeded: int = 0
    failed: int = 0
    aborted: int = 0
    lost: int = 0
    runs: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "succeeded": self.succeeded,
            "failed": self.failed,
            "aborted": self.aborted,
            "lease_lost": self.lost,
            "runs": self.runs[-100:],
        }


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM/SIGINT set ``stop``: the current step finishes, no new one starts."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class Worker:
    """Claims and runs jobs until stopped (or, with ``drain``, until the queue is empty)."""

    def __init__(
        self,
        store: Store,
        actor: authz.Actor,
        lease_seconds: float = DEFAULT_LEASE,
        poll_seconds: float = 1.0,
        identity: Callable[[], authz.Actor] | None = None,
    ) -> None:
        self.store = store
        self.actor = actor
        # Resolves the worker's identity again before each job (a revoked token stops it).
        self.identity = identity
        self.runner = Runner(store, lease_seconds=lease_seconds)
        self.poll_seconds = poll_seconds

    def close(self) -> None:
        self.runner.close()

    def work(
        self, stop: threading.Event, drain: bool = False, max_jobs: int | None = None
    ) -> WorkerStats:
        stats = WorkerStats()
        done = 0
        # Jobs this worker may not apply: left queued for one that may.
        not_mine: set[str] = set()
        while not stop.is_set() and (max_jobs is None or done < max_jobs):
            if self.identity is not None:
                self.actor = self.identity()  # refused now: the worker stops, claiming nothing
            job = self.runner.claim_next(not_mine)
            if job is None:
                if drain:
                    break
                stop.wait(self.poll_seconds)
                continue
            if not authz.allowed(self.store, self.actor, "apply", job.run.target.key):
                self.runner.jobs.release(job.run.id, self.runner.owner)
                not_mine.add(job.run.id)
                log.warning(
                    "%s may not apply %s: run %s is left queued for another worker",
                    self.actor.key,
                    job.run.target.key,
                    job.run.id,
                )
                stats.runs.append({"run": job.run.id, "status": "left queued"})
                continue
            done += 1
            self._one(job, stop, stats)
        return stats

    def _one(self, job: Job, stop: threading.Event, stats: WorkerStats) -> None:
        run = job.run
        requester = _requester(run.actor)
        status = "succeeded"
        try:
            result = self.runner.run_job(job, stop)
            status = result.status
        except StepFailed as failed:
            status = "failed"
            record_job(self.store, run, requester, failed, worker=self.actor.key)
        except LeaseLost as lost:
            status = "lease-lost"
            log.warning("%s", lost.message)
        else:
            if status == "succeeded":
                record_job(self.store, run, requester, None, worker=self.actor.key, queued=True)
        if status == "succeeded":
            stats.succeeded += 1
        elif status == "failed":
            stats.failed += 1
        elif status == "aborted":
            stats.aborted += 1
        else:
            stats.lost += 1
        stats.runs.append({"run": run.id, "status": status})


def record_job(
    store: Store, run: RunInfo, actor: authz.Actor, failed: StepFailed | None, **detail: Any
) -> None:
    """A queued apply's end, audited like any apply (``plan.applied``)."""
    if failed is not None:
        detail["step"] = failed.step_id
    audit.record(
        store,
        "plan.applied",
        "failed" if failed else "success",
        actor,
        run.target,
        reason=failed.message if failed else None,
        plan_digest=run.plan_digest,
        run_id=run.id,
        detail=detail,
    )


def _requester(key: str) -> authz.Actor:
    """The actor who queued a job, as the run row names them."""
    try:
        return authz.parse_actor(key)
    except Exception:
        return authz.Actor("human", key or "unknown", key or "unknown")
