"""Execute a plan: journal, keep rollback material, mutate, verify, record.

One run is one transaction for local kinds: if any action fails, everything
the run changed is restored and the outcome is Failed. A signal restores the
action in flight and leaves the run Interrupted, holding its lock, until
``trueup recover`` or ``trueup abandon``.

Work is done in batches: the material of a batch is flushed once, its journal
rows move to ``running`` in one transaction, its writes are committed with one
file-system sync, and its results are recorded in one transaction. Every
guarantee holds per action, only the durability barriers are shared.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from trueup import kinds
from trueup.errors import TrueupError
from trueup.execute.crashpoints import reach
from trueup.execute.rollback import Capture, RollbackStore
from trueup.execute.verification import verify_command
from trueup.fs import WritableFS
from trueup.kinds.base import ApplyContext, ObserveContext
from trueup.model import (
    Action,
    ActionType,
    Applied,
    Evidence,
    Outcome,
    Plan,
    Resource,
    outcome_of,
)
from trueup.redact import redact_message
from trueup.state.store import RunInfo, Store, now



class Interrupted(Exception):
    """SIGTERM, raised in the main thread like SIGINT's KeyboardInterrupt."""


class VerificationFailed(TrueupError):
    pass


@dataclass
class ActionResult:
    seq: int
    action: Action
    status: str
    evidence: Evidence | None = None
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "resource": self.action.resource_id,
            "type": self.action.type.value,
            "summary": self.action.summary,
            "status": self.status,
            "evidence": self.evidence.to_json() if self.evidence else None,
            "message": self.message,
        }


@dataclass
class RunResult:
    run_id: str
    outcome: Outcome
    results: list[ActionResult] = field(default_factory=list)
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "outcome": self.outcome.value,
            "message": self.message,
            "actions": [r.to_json() for r in self.results],
        }


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Turn SIGTERM into an exception so the in-flight action can be restored."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signal.Signals(signum).name)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Executor:
    """Runs one plan for one target under a run that already holds the lock."""

    def __init__(
        self,
        store: Store,
        run: RunInfo,
        resources: Mapping[str, Resource],
        applied: Mapping[str, Applied],
        fs: WritableFS,
        rollback: RollbackStore,
        root: Path,
        progress: Callable[[int], None] | None = None,
        batch_size: int = 256,
    ) -> None:
        self.batch_size = batch_size
        self.store = store
        self.run = run
        self.resources = resources
        self.applied = applied
        self.fs = fs
        self.rollback = rollback
        self.ctx = ApplyContext(root=root, fs=fs)
        self.read_ctx = ObserveContext(root=root, fs=fs)
        self.progress = progress
        self.results: list[ActionResult] = []
        self._in_flight: list[tuple[int, str]] = []

    def execute(self, plan: Plan, first_seq: int = 0) -> RunResult:
        journaled = [a for a in plan.actions if a.type is not ActionType.NO_OP]
        self.store.add_actions(self.run.id, journaled, first_seq)
        reach("journal-pending")
        seqs = list(range(first_seq, first_seq + len(journaled)))
        pending = [(s, a) for s, a in zip(seqs, journaled, strict=True) if a.type.mutates]
        skipped = [(s, a) for s, a in zip(seqs, journaled, strict=True) if not a.type.mutates]
        with self.store.db.transaction():
            self.store.set_action_status(
                self.run.id, [(s, "skipped", None, None, a.summary) for s, a in skipped]
            )
        self.results = [ActionResult(s, a, "skipped", message=a.summary) for s, a in skipped]
        try:
            with signals_interrupt():
                for start in range(0, len(pending), self.batch_size):
                    self._batch(pending[start : start + self.batch_size])
        except (Interrupted, KeyboardInterrupt):
            self._restore_in_flight()
            return self._finish(
                Outcome.INTERRUPTED, "interrupted: the action in flight was restored"
            )
        except Exception as exc:
            message = (
                exc.message if isinstance(exc, TrueupError) else f"{type(exc).__name__}: {exc}"
            )
            self._restore_all()
            return self._finish(
                Outcome.FAILED, f"{redact_message(message)}; every change of this run was restored"
            )
        return self._finish(outcome_of(plan.actions), "")

    # -- one batch ----------------------------------------------------------
    def _batch(self, batch: Sequence[tuple[int, Action]]) -> None:
        captures = [
            Capture(
                seq,
                kinds.get(action.kind).touches(action, self._resource(action), self.read_ctx),
                self._applied_json(action.resource_id),
            )
            for seq, action in batch
        ]
        refs = self.rollback.capture(captures, self.fs)
        reach("rollback-flushed")
        with self.store.db.transaction():
            self.store.set_action_status(
                self.run.id, [(seq, "running", refs[seq], None, None) for seq, _ in batch]
            )
        self._in_flight = [(seq, refs[seq]) for seq, _ in batch]
        reach("journal-running")
        for _, action in batch:
            kinds.get(action.kind).apply(action, self._resource(action), self.ctx)
        self.fs.commit()
        reach("mutated")
        done: list[tuple[int, Action, Evidence]] = []
        for seq, action in batch:
            resource = self._resource(action)
            evidence = kinds.get(action.kind).verify(action, resource, self.read_ctx)
            if evidence.passed and action.type is not ActionType.REMOVE_RESOURCE:
                evidence = verify_command(resource, self.ctx.root) or evidence
            if not evidence.passed:
                self.results.append(ActionResult(seq, action, "failed", evidence, evidence.message))
                raise VerificationFailed(
                    f"verification of {action.resource_id!r} failed: {evidence.message}"
                )
            done.append((seq, action, evidence))
        self._record(done)
        self._in_flight = []
        reach("journal-succeeded")
        if self.progress:
            self.progress(len(batch))

    def _record(self, done: Sequence[tuple[int, Action, Evidence]]) -> None:
        keep: list[Applied] = []
        forget: list[str] = []
        stamp = now()
        for _, action, evidence in done:
            resource = self._resource(action)
            detail = kinds.get(action.kind).record(action, resource)
            if detail is None:
                forget.append(action.resource_id)
            else:
                keep.append(
                    Applied(
                        resource,
                        evidence.observed_digest,
                        detail,
                        self.run.plan_digest or "",
                        stamp,
                    )
                )
        with self.store.db.transaction():
            self.store.put_applied(self.run.target.key, keep)
            self.store.delete_applied(self.run.target.key, forget)
            self.store.set_action_status(
                self.run.id,
                [(seq, "succeeded", None, ev.to_json(), None) for seq, _, ev in done],
            )
        self.results.extend(ActionResult(seq, a, "succeeded", ev) for seq, a, ev in done)

    # -- undo ---------------------------------------------------------------
    def _restore_in_flight(self) -> None:
        self.fs.discard()
        self._restore(self._in_flight)
        self._in_flight = []

    def _restore_all(self) -> None:
        self.fs.discard()
        started = [
            (r.seq, r.rollback_ref)
            for r in self.store.run_actions(self.run.id)
            if r.status in ("running", "succeeded") and r.rollback_ref
        ]
        self._restore([(seq, ref) for seq, ref in started if ref is not None])

    def _restore(self, items: Sequence[tuple[int, str]]) -> None:
        restore_run(self.store, self.run, self.rollback, self.fs, items)
        restored = {seq for seq, _ in items}
        for result in self.results:
            if result.seq in restored and result.status == "succeeded":
                result.status = "restored"

    def _finish(self, outcome: Outcome, message: str) -> RunResult:
        reach("run-finishing")
        status = "interrupted" if outcome is Outcome.INTERRUPTED else "finished"
        self.store.set_run_status(self.run.id, status, outcome.value, message)
        if outcome is not Outcome.INTERRUPTED:
            self.rollback.discard()
        self.results.sort(key=lambda r: r.seq)
        return RunResult(self.run.id, outcome, self.results, message)

    # -- helpers ------------------------------------------------------------
    def _resource(self, action: Action) -> Resource:
        found = self.resources.get(action.resource_id)
        if found is not None:
            return found
        return self.applied[action.resource_id].resource

    def _applied_json(self, resource_id: str) -> dict[str, Any] | None:
        record = self.applied.get(resource_id)
        if record is None:
            return None
        return {
            "resource": record.resource.to_json(),
            "digest": record.digest,
            "detail": dict(record.detail),
            "revision": record.revision,
            "applied_at": record.applied_at,
        }


def restore_run(
    store: Store,
    run: RunInfo,
    rollback: RollbackStore,
    fs: WritableFS,
    items: Sequence[tuple[int, str]],
) -> None:
    """Restore actions newest first, and the applied records they replaced."""
    for seq, ref in sorted(items, reverse=True):
        previous = rollback.restore(ref, fs)
        with store.db.transaction():
            rid = store.action_resource(run.id, seq)
            if previous is None:
                store.delete_applied(run.target.key, [rid])
            else:
                store.put_applied(
                    run.target.key,
                    [
                        Applied(
                            Resource.from_json(previous["resource"]),
                            previous["digest"],
                            previous["detail"],
                            previous["revision"],
                            previous["applied_at"],
                        )
                    ],
                )
            store.set_action_status(run.id, [(seq, "restored", None, None, None)])
