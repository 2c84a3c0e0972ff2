"""The job runner: steps run in order, each checkpointed, resumable anywhere.

A job is a run with a list of steps (``Step``: an id, the name of a
registered handler and JSON parameters). ``Runner.enqueue`` inserts it as a
queued run, which takes the target's lock, or raises ``AlreadyRunning``
naming whoever holds it. ``Runner.run_steps`` (in process) and the worker
(``trueup worker``) execute it:

- a step list that differs from the job's is refused (``StepMismatch``);
- checkpointed steps are skipped, so a resumed job continues where it stopped;
- a failure recorded by an earlier attempt is cleared when the job resumes;
- a failing step records the step and the message and raises ``StepFailed``;
  nothing is rolled back: what completed stays recorded for a person to fix
  and resume (remote APIs have no rollback);
- when ``abort`` is set the runner stops before the next step and writes
  nothing more: exactly the state a kill at that moment would leave;
- the last step done, the run is marked succeeded and releases the lock.

Every write is fenced by the runner's lease on the job (see ``state.jobs``),
renewed by a background thread while a step works. A step that was running
when its worker died runs again on the next worker (at least once); a step
that was checkpointed never does. Handlers should therefore be idempotent,
as a kind's ``apply`` is.

Handlers are plain functions registered by name, so the org side registers
provider calls, the machine side registers ``profile.apply``, and tests
register cheap steps; a worker loads the built-in ones and extra handler modules
(``--import``) with ``worker.load_handlers``, so this module names no handler module.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from trueup.canonical import canonical_json
from trueup.errors import ApplyFailedError, ConflictError, TrueupError, UsageError
from trueup.model import Target
from trueup.redact import redact_message
from trueup.state.db import Database
from trueup.state.jobs import Job, JobStore
from trueup.state.store import RunInfo, RunLocked, Store, now

log = logging.getLogger(__name__)

DEFAULT_LEASE = 30.0


# -- steps and their handlers ---------------------------------------------
@dataclass(frozen=True, slots=True)
class Step:
    """One unit of a job; ``params`` are JSON and never hold secret values."""

    id: str
    handler: str
    params: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "handler": self.handler,
            "params": dict(self.params),
            "description": self.description,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        return cls(
            id=data["id"],
            handler=data["handler"],
            params=data.get("params", {}),
            description=data.get("description", ""),
        )


@dataclass(frozen=True)
class StepContext:
    """What a handler gets: its step, the run, earlier steps' results, the abort flag."""

    run: RunInfo
    step: Step
    attempt: int
    checkpoints: Mapping[str, Mapping[str, Any]]
    abort: threading.Event
    store: Store

    def result_of(self, step_id: str) -> Mapping[str, Any] | None:
        """The result an earlier step recorded in its checkpoint (e.g. a provider's id)."""
        done = self.checkpoints.get(step_id)
        return done.get("result") if done is not None else None


Handler = Callable[[StepContext], Mapping[str, Any] | None]
_HANDLERS: dict[str, Handler] = {}


def register(name: str, handler: Handler) -> None:
    _HANDLERS[name] = handler


def step_handler(name: str) -> Callable[[Handler], Handler]:
    """Decorator: ``@step_handler("cloudflare.dns.create")``."""

    def wrap(handler: Handler) -> Handler:
        register(name, handler)
        return handler

    return wrap


def handler_for(name: str) -> Handler:
    found = _HANDLERS.get(name)
    if found is None:
        known = ", ".join(sorted(_HANDLERS)) or "none"
        raise UsageError(
            f"no step handler named {name!r} in this process (known: {known})",
            hint="start the worker with --import MODULE for the module that registers it",
        )
    return found


# -- errors ---------------------------------------------------------------
class AlreadyRunning(ConflictError):
    """The target has an active run: the lock is taken."""

    def __init__(self, error: ConflictError, holder: RunInfo | None) -> None:
        super().__init__(error.message, hint=error.hint, data=error.data)
        self.holder = holder


class StepMismatch(ConflictError):
    """The steps given are not the job's steps: the plan changed since it was queued."""


class StepFailed(ApplyFailedError):
    def __init__(self, run_id: str, step_id: str, reason: str) -> None:
        super().__init__(
            f"run {run_id} failed at step {step_id!r}: {reason}",
            hint=f"fix the cause, then: trueup jobs resume {run_id}",
            data={"run": run_id, "step": step_id, "reason": reason},
        )
        self.run_id = run_id
        self.step_id = step_id
        self.reason = reason


class LeaseLost(ConflictError):
    """Another worker took this job over (our lease ran out); we stop writing."""


class StepAborted(Exception):
    """Raised by a handler that noticed ``abort`` mid-step: no failure is recorded."""


@dataclass
class JobResult:
    run_id: str
    status: str  # succeeded | aborted
    executed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "status": self.status,
            "executed": self.executed,
            "skipped": self.skipped,
        }


def check_unique(steps: Sequence[Step]) -> None:
    seen: set[str] = set()
    for step in steps:
        if step.id in seen:
            raise UsageError(f"step id {step.id!r} appears twice; step ids are unique in a run")
        seen.add(step.id)


# -- the lease keeper -------------------------------------------------------
class _LeaseKeeper:
    """Renews the lease of the job being worked on, on its own connection.

    A step may take longer than a lease; the keeper renews every third of
    it, and sets ``lost`` the moment a renewal matches no row (taken over).
    """

    def __init__(self, url: str, owner: str, ttl: float) -> None:
        self.url = url
        self.owner = owner
        self.ttl = ttl
        self._lock = threading.Lock()
        self._current: tuple[str, threading.Event] | None = None
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, run_id: str) -> threading.Event:
        lost = threading.Event()
        with self._lock:
            self._current = (run_id, lost)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="trueup-lease", daemon=True)
                self._thread.start()
        return lost

    def unwatch(self) -> None:
        with self._lock:
            self._current = None

    def close(self) -> None:
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout=self.ttl)

    def _loop(self) -> None:
        db: Database | None = None
        while not self._closed.wait(self.ttl / 3):
            with self._lock:
                current = self._current
            if current is None:
                continue
            run_id, lost = current
            try:
                if db is None:
                    db = Database(self.url)
                renewed = JobStore(Store(db)).renew(run_id, self.owner, self.ttl)
            except Exception as exc:  # a transient outage: the fenced writes decide
                log.warning("lease renewal of %s failed: %s", run_id, exc)
                if db is not None:
                    db.close()
                db = None
                continue
            if not renewed:
                with self._lock:
                    if self._current is current:
                        lost.set()
        if db is not None:
            db.close()


# -- the runner -----------------------------------------------------------
class Runner:
    """Enqueues and executes jobs on one store connection (one thread)."""

    def __init__(
        self, store: Store, owner: str | None = None, lease_seconds: float = DEFAULT_LEASE
    ) -> None:
        self.store = store
        self.jobs = JobStore(store)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lease_seconds = lease_seconds
        self._keeper = _LeaseKeeper(store.db.url, self.owner, lease_seconds)

    def close(self) -> None:
        self._keeper.close()

    def enqueue(
        self,
        target: Target,
        steps: Sequence[Step],
        actor: str = "",
        plan_digest: str | None = None,
        declaration: str | None = None,
        affinity: str | None = None,
    ) -> str:
        """Queue a job; it holds the target's lock from now until it succeeds or is abandoned.

        ``affinity``: the host whose workers alone may run it (``None``: any).
        """
        from trueup.execute.gates import locked_error

        check_unique(steps)
        if not steps:
            raise UsageError("a job needs at least one step")
        try:
            return self.jobs.enqueue(
                target, [s.to_json() for s in steps], actor, plan_digest, declaration, affinity
            )
        except RunLocked as locked:
            raise AlreadyRunning(locked_error(locked.holder, target), locked.holder) from None

    def claim_next(self, skip: Collection[str] = ()) -> Job | None:
        return self.jobs.claim_next(self.owner, self.lease_seconds, skip)

    def run_steps(
        self, run: str | RunInfo, steps: Sequence[Step], abort: threading.Event | None = None
    ) -> JobResult:
        """Execute (or resume) the job ``run`` here; see the module docstring."""
        from trueup.execute.gates import locked_error

        run_id = run if isinstance(run, str) else run.id
        steps = tuple(steps)
        check_unique(steps)
        job = self.jobs.job(run_id)
        if job is None:
            raise UsageError(f"no job {run_id!r} in the state store")
        _check_same(job, steps)
        if job.run.status == "succeeded":
            return JobResult(run_id, "succeeded", skipped=[s.id for s in steps])
        if job.run.status not in ("queued", "running", "failed"):
            raise ConflictError(f"run {run_id} is {job.run.status}; it cannot be resumed")
        claimed = self.jobs.claim(run_id, self.owner, self.lease_seconds)
        if claimed is None:
            current = self.store.run(run_id)
            raise AlreadyRunning(locked_error(current, job.run.target), current)
        return self._execute(claimed, steps, abort or threading.Event())

    def run_job(self, job: Job, abort: threading.Event | None = None) -> JobResult:
        """Execute a job this runner has claimed, with the steps stored on it."""
        steps = tuple(Step.from_json(s) for s in job.steps)
        return self._execute(job, steps, abort or threading.Event())

    @contextmanager
    def _leased(self, run_id: str) -> Iterator[threading.Event]:
        lost = self._keeper.watch(run_id)
        try:
            yield lost
        finally:
            self._keeper.unwatch()

    def _execute(self, job: Job, steps: Sequence[Step], abort: threading.Event) -> JobResult:
        result = JobResult(job.id, "running")
        with self._leased(job.id) as lost:
            if job.failure is not None:
                self._fenced(self.jobs.clear_failure(job.id, self.owner), job.id)
                self.store.event(job.id, "run.resumed", {"cleared": job.failure.get("step")})
            checkpoints = dict(job.checkpoints)
            for step in steps:
                if step.id in checkpoints:
                    result.skipped.append(step.id)
                    continue
                if lost.is_set():
                    self._fenced(False, job.id)
                if abort.is_set():
                    result.status = "aborted"
                    return result
                ctx = StepContext(job.run, step, job.attempts, dict(checkpoints), abort, self.store)
                try:
                    # Checkpointed results are JSON: a handler returning anything else fails.
                    outcome = json.loads(canonical_json(dict(handler_for(step.handler)(ctx) or {})))
                except StepAborted:
                    result.status = "aborted"
                    return result
                except Exception as exc:
                    reason = redact_message(
                        exc.message
                        if isinstance(exc, TrueupError)
                        else f"{type(exc).__name__}: {exc}"
                    )
                    failure = {"step": step.id, "message": reason, "at": now()}
                    self._fenced(self.jobs.fail(job.id, self.owner, failure), job.id)
                    raise StepFailed(job.id, step.id, reason) from exc
                checkpoints[step.id] = {
                    "at": now(),
                    "attempt": job.attempts,
                    "result": outcome,
                }
                self._fenced(self.jobs.checkpoint(job.id, self.owner, checkpoints), job.id)
                result.executed.append(step.id)
            self._fenced(self.jobs.succeed(job.id, self.owner), job.id)
        result.status = "succeeded"
        return result

    @staticmethod
    def _fenced(ok: bool, run_id: str) -> None:
        if not ok:
            raise LeaseLost(
                f"run {run_id} was taken over by another worker (this worker's lease ran out); "
                "stopping without writing"
            )


def _check_same(job: Job, steps: Sequence[Step]) -> None:
    given = [s.to_json() for s in steps]
    if canonical_json(given) == canonical_json(list(job.steps)):
        return
    have = [s["id"] for s in job.steps]
    want = [s.id for s in steps]
    detail = (
        f"the run's steps are {have}, these are {want}"
        if have != want
        else "the step ids match but their handlers or parameters differ"
    )
    raise StepMismatch(
        f"run {job.id} was queued with different steps: {detail}",
        hint="compute the plan again; abandon the old run if it no longer applies",
    )
