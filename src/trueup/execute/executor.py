"""Execute a plan: journal, keep rollback material, mutate, verify, record.

One run is one transaction for local kinds: if any action fails, everything
the run changed is restored and the outcome is Failed. A signal restores the
action in flight and leaves the run Interrupted, holding its lock, until
``trueup recover`` or ``trueup abandon``. A state store that stops answering
leaves the run so too, with nothing restored, as that could not be journaled.

Work is done in batches: the material of a batch is flushed once, its journal
rows move to ``running`` in one transaction, its writes are committed with one
file-system sync, and its results are recorded in one transaction. Every
guarantee holds per action, only the durability barriers are shared. One batch
is in flight at a time, and the journal reads in the order things happened: a
batch is journaled succeeded right after its verification, before the next
one keeps its material, so a recovery only ever has one batch to restore.

Right before a batch keeps its rollback material, each local resource in
it is observed again and must still be what the plan was computed from: a
file edited while the run was planning or writing is never overwritten, and
the run fails with everything restored (so apply need not observe all of a
large profile twice to be safe against edits made meanwhile).

Remote kinds (``restorable = False``) have nothing to restore from: each of
their actions is journaled ``running`` on its own right before its call, and
what the provider returned is recorded right after it; independent ones run
concurrently (remote_scheduler.py), each in a worker thread. On failure the
completed ones stay, the failing one is marked failed, and applying again
resumes.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

from trueup import kinds
from trueup.crashpoints import reach
from trueup.errors import ConflictError, TrueupError
from trueup.execute.remote_scheduler import Limits, RemoteScheduler, StepsInterrupted
from trueup.execute.rollback import Capture, RollbackStore
from trueup.execute.verification import verify_commands
from trueup.fs import TargetAppeared, WritableFS
from trueup.kinds.base import INTENT, ApplyContext, Kind, Touched
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
from trueup.paths import within
from trueup.redact import redact_message
from trueup.settings import DEFAULT_BATCH_SIZE
from trueup.state.db import StoreUnavailable
from trueup.state.store import RunAction, RunInfo, Store, now


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
def signals_interrupt(
    raising: Callable[[str], BaseException] = Interrupted,
) -> Iterator[None]:
    """Turn SIGTERM into an exception, as SIGINT is: what was in flight can be restored.

    The executor raises ``Interrupted`` within actions; around a whole run,
    ``KeyboardInterrupt`` makes a SIGTERM between actions (or while the run
    finishes) end like a Ctrl-C there, with the run left for recover.
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        raise raising(signal.Signals(signum).name)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block is done, then deliver them.

    For short steps that must not stop half-way: a run marked finished whose
    rollback material is left half-deleted has nobody left to clean it up.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda n, _f: caught.append(n))
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught:
            signal.raise_signal(caught[0])


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
        batch_size: int = DEFAULT_BATCH_SIZE,
        finish_run: bool = True,
        services: Mapping[str, Any] | None = None,
        remote_limits: Limits | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.remote_limits = remote_limits or Limits.from_env()
        self.store = store
        self.run = run
        self.resources = resources
        self.applied = applied
        self.fs = fs
        self.rollback = rollback
        self.ctx = ApplyContext(
            root=root, fs=fs.view, writer=fs, services=services or {}, intend=self._intend
        )
        self.read_ctx = self.ctx.reading()
        self.progress = progress
        # A queued job's run outlives this plan: the job runner finishes it.
        self.finish_run = finish_run
        self.results: list[ActionResult] = []
        self._observed: Mapping[str, str] = {}
        # What a restore puts back: the batch under way, until it is journaled.
        self._in_flight: list[tuple[int, str]] = []
        # Remote kinds: what each call returned, and the actions now in flight.
        self._learned: dict[int, dict[str, Any]] = {}
        # Paths a restore left as they are: changed after the run wrote them.
        self._changed_since: list[str] = []
        # Targets found taken at commit: never the run's, so never "changed since".
        self._appeared: set[str] = set()
        self._current: list[tuple[int, Action]] = []
        # The remote step each worker thread runs (``_intend`` records its intent).
        self._step = threading.local()
        self._flight = threading.Lock()

    def execute(self, plan: Plan, first_seq: int = 0) -> RunResult:
        self._observed = plan.observed
        journaled = [a for a in plan.actions if a.type is not ActionType.NO_OP]
        try:
            self.store.add_actions(self.run.id, journaled, first_seq, plan.observed)
            reach("journal-pending")
            pending: list[tuple[int, Action]] = []
            skipped: list[tuple[int, Action]] = []
            for seq, action in enumerate(journaled, start=first_seq):
                (pending if action.type.applies else skipped).append((seq, action))
            with self.store.db.transaction():
                self.store.set_action_status(
                    self.run.id, [(s, "skipped", None, None, a.summary) for s, a in skipped]
                )
            self.results = [ActionResult(s, a, "skipped", message=a.summary) for s, a in skipped]
            return self._execute(plan, pending)
        finally:
            self.fs.close()

    def _execute(self, plan: Plan, pending: Sequence[tuple[int, Action]]) -> RunResult:
        try:
            with signals_interrupt():
                for batch in self._batches(pending):
                    if not kinds.get(batch[0][1].kind).concurrent:
                        self._batch(batch)
                    else:
                        scheduler = RemoteScheduler(
                            self.remote_limits, (Interrupted, KeyboardInterrupt)
                        )
                        scheduler.run(batch, self._remote_step)
        except StepsInterrupted as stopped:
            return self._remote_interrupted(stopped)
        except (Interrupted, KeyboardInterrupt):
            remote = self._fail_remote("interrupted")
            undone = self._undo(self._restore_in_flight, "interrupted")
            if undone is not None:
                return undone
            return self._finish(
                Outcome.INTERRUPTED,
                "interrupted: the remote call in flight may have happened; apply again to resume"
                if remote
                else "interrupted: the action in flight was restored",
            )
        except StoreUnavailable:
            # Nothing more can be journaled: a restore now would leave the files and
            # the journal out of step. The run stays as a crash leaves it, which
            # recover puts right once the store answers again.
            raise
        except Exception as exc:
            message = _wording(exc)
            self._fail_remote(redact_message(message))
            undone = self._undo(self._restore_all, message)
            if undone is not None:
                return undone
            kept = any(
                r.status in ("succeeded", "failed") and not kinds.get(r.action.kind).restorable
                for r in self.results
            )
            local = any(kinds.get(a.kind).restorable for a in plan.actions if a.type.applies)
            return self._finish(
                Outcome.FAILED,
                f"{redact_message(message)}; "
                + (
                    "remote changes are kept (a provider API has no rollback)"
                    + (" and local ones were restored" if local else "")
                    + ": fix the cause and apply again to resume"
                    if kept
                    else "every change of this run was restored"
                )
                + _left_as_changed([p for p in self._changed_since if p not in self._appeared]),
            )
        return self._finish(outcome_of(plan.actions), "")

    # -- one batch ----------------------------------------------------------
    def _batches(
        self, pending: Sequence[tuple[int, Action]]
    ) -> Iterator[Sequence[tuple[int, Action]]]:
        """Local actions in batches; consecutive concurrent (remote) ones together.

        The remote ones go to the scheduler, which journals each ``running``
        right before its call and records what the call returned right after
        it; any other kind that cannot be restored runs alone. A local action
        whose target a removal earlier in the batch frees (a folder declared
        where a file was, or a file where a folder of trueup's files was) starts
        a new batch: the removal must be committed before anything is staged at
        that place.
        """
        batch: list[tuple[int, Action]] = []
        remote: list[tuple[int, Action]] = []
        freed: set[str] = set()
        for item in pending:
            action = item[1]
            if kinds.get(action.kind).restorable:
                if remote:
                    yield remote
                    remote = []
                target = self._resource(action).target
                if freed and (within(target, freed) or any(within(f, {target}) for f in freed)):
                    yield batch
                    batch, freed = [], set()
                batch.append(item)
                if action.type is ActionType.REMOVE_RESOURCE and action.handed_over is None:
                    freed.add(target)
                if len(batch) >= self.batch_size:
                    yield batch
                    batch, freed = [], set()
                continue
            if batch:
                yield batch
                batch, freed = [], set()
            if kinds.get(action.kind).concurrent:
                remote.append(item)
                continue
            if remote:
                yield remote
                remote = []
            yield [item]  # not restorable, not concurrent (an installer): alone
        if remote:
            yield remote
        if batch:
            yield batch

    def _batch(self, batch: Sequence[tuple[int, Action]]) -> None:
        # Each action's kind and resource, looked up once for the whole batch.
        steps = [(seq, a, kinds.get(a.kind), self._resource(a)) for seq, a in batch]
        for _, action, kind, resource in steps:
            self._unmoved(action, kind, resource)
        captures = []
        for seq, action, kind, resource in steps:
            if not kind.restorable:
                continue
            # A verify-only or handed-over action touches no path but replaces its
            # applied record: its capture keeps the record a restore puts back.
            touched = (
                kind.touches(action, resource, self.read_ctx)
                if action.changes_target
                else Touched([])
            )
            captures.append(
                Capture(
                    seq,
                    touched.paths,
                    self._applied_json(action.resource_id),
                    touched.prunes or action.frees is not None,
                    action.exclusive,
                )
            )
        manifest = self.rollback.capture(captures, self.fs) if captures else None
        reach("rollback-flushed")
        with self.store.db.transaction():
            self.store.mark_running(self.run.id, batch[0][0], batch[-1][0], manifest)
        self._in_flight += [(c.seq, f"{manifest}#{c.seq}") for c in captures]
        self._current = list(batch)
        reach("journal-running")
        for seq, action, kind, resource in steps:
            if not action.changes_target:  # checked and recorded below
                continue
            learned = kind.apply(action, resource, self.ctx)
            if learned is not None:
                self._checkpoint(seq, action, learned)
            if action.frees is not None:  # the folders it empties, up to that place, go too
                removed = self.ctx.path_str(resource.target)
                self.fs.prune(os.path.dirname(removed), self.ctx.path_str(action.frees))
        if manifest is not None:
            self.rollback.note_written(manifest, self.fs.outcomes())
            reach("outcomes-noted")
        self._commit(captures, manifest)
        reach("mutated")
        done: list[tuple[int, Action, Evidence]] = []
        for seq, action, kind, resource in steps:
            if action.handed_over is not None:  # nothing to see: the target is another id's
                done.append((seq, action, Evidence("passed", "handed over", None)))
                continue
            evidence = kind.verify(action, resource, self.read_ctx)
            self._passed(seq, action, evidence)
            done.append((seq, action, evidence))
        # Then the declared commands of what passed, several at once.
        commands = verify_commands(
            [resource if _commanded(a) else None for _, a, _, resource in steps], self.ctx.root
        )
        for i, checked in enumerate(commands):
            if checked is not None:
                seq, action, _ = done[i]
                self._passed(seq, action, checked)
                done[i] = (seq, action, checked)
        self._current = []
        self._record(done)
        # Journaled: no longer the batch a restore of an interrupted run puts back.
        self._in_flight = []
        reach("journal-succeeded")
        if self.progress:
            self.progress(len(done))

    def _remote_step(self, seq: int, action: Action) -> None:
        """One remote action, in a worker thread: journal, call, checkpoint, verify, record."""
        with self._flight:
            self._current.append((seq, action))
        self._step.current = (seq, action)
        try:
            with self.store.db.transaction():
                self.store.mark_running(self.run.id, seq, seq, None)
            reach("journal-running")
            kind = kinds.get(action.kind)
            resource = self._resource(action)
            if action.changes_target:
                learned = kind.apply(action, resource, self.ctx)
                if learned is not None:
                    self._checkpoint(seq, action, learned)
            reach("mutated")
            if action.handed_over is not None:  # nothing to see: the target is another id's
                evidence = Evidence("passed", "handed over", None)
            else:
                evidence = kind.verify(action, resource, self.read_ctx)
                self._passed(seq, action, evidence)
            self._record([(seq, action, evidence)])
            reach("journal-succeeded")
        except Exception as exc:
            self._fail_step(seq, action, redact_message(_wording(exc)))
            raise
        finally:
            with self._flight:
                self._current = [item for item in self._current if item[0] != seq]
            self._step.current = None
        if self.progress:
            with self._flight:
                self.progress(1)

    def _fail_step(self, seq: int, action: Action, message: str) -> None:
        with self.store.db.transaction():
            self.store.set_action_status(self.run.id, [(seq, "failed", None, None, message)])
        with self._flight:
            if not any(r.seq == seq for r in self.results):
                self.results.append(ActionResult(seq, action, "failed", message=message))

    def _remote_interrupted(self, stopped: StepsInterrupted) -> RunResult:
        """Say which remote steps were in flight when the run was stopped, and what next."""
        self._fail_remote("interrupted while its call was in flight; it may have happened")
        resume = f"apply again (or `trueup recover {self.run.id}`) to resume from live state"
        if unknown := stopped.unknown:
            names = ", ".join(a.resource_id for _, a in unknown)
            return self._finish(
                Outcome.INTERRUPTED,
                f"interrupted while {len(unknown)} step(s) were in flight ({names}): their "
                f"calls may have happened; {resume}",
            )
        names = ", ".join(a.resource_id for _, a in stopped.finished)
        ended = (
            f"the {len(stopped.finished)} step(s) in flight ({names}) ended and were recorded"
            if stopped.finished
            else "no step was in flight"
        )
        return self._finish(
            Outcome.INTERRUPTED, f"interrupted: {ended}, nothing else was started; {resume}"
        )

    def _passed(self, seq: int, action: Action, evidence: Evidence) -> None:
        """Fail the run on an action whose verification did not pass."""
        if not evidence.passed:
            self.results.append(ActionResult(seq, action, "failed", evidence, evidence.message))
            raise VerificationFailed(
                f"verification of {action.resource_id!r} failed: {evidence.message}"
            )

    def _commit(self, captures: Sequence[Capture], manifest: str | None) -> None:
        try:
            self.fs.commit()
        except TargetAppeared as appeared:
            # The path itself, or a folder the batch was making whole for it, and all
            # the batch was to put in that folder.
            gone = appeared.path
            inside = gone + os.sep

            def lost(path: str) -> bool:
                return path == gone or path.startswith(inside)

            outcomes = self.fs.outcomes()
            self._appeared.add(gone)
            self._appeared.update(filter(lost, outcomes))
            if manifest is not None:
                # Not ours, even if it holds what we would have written: the
                # restore that follows must leave it alone.
                self.rollback.note_written(
                    manifest,
                    {path: held for path, held in outcomes.items() if path not in self._appeared},
                )
            touched = {c.seq for c in captures if any(map(lost, c.paths))}
            rid = next((a.resource_id for seq, a in self._current if seq in touched), None)
            if rid is None:
                raise
            raise ConflictError(
                f"{rid!r} changed after the plan was computed; it was left as it is",
                hint=appeared.hint,
            ) from appeared

    def _unmoved(self, action: Action, kind: Kind, resource: Resource) -> None:
        """Refuse to mutate a local resource that moved since it was observed."""
        expected = self._observed.get(action.resource_id)
        if (
            not kind.restorable
            or expected is None
            or action.exclusive
            or not action.changes_target  # verify-only, handed over: nothing is written
        ):
            # An exclusive create needs no second look: its rename refuses
            # anything that appeared since (fs.TargetAppeared, see _commit).
            return
        now = kind.observe(resource, self.read_ctx).identity()
        if now != expected:
            raise ConflictError(
                f"{action.resource_id!r} changed after the plan was computed; it was left as it is",
                hint="compute the plan again and review it",
            )

    def _record(self, done: Sequence[tuple[int, Action, Evidence]]) -> None:
        keep: list[Applied] = []
        forget: list[str] = []
        stamp = now()
        for seq, action, evidence in done:
            resource = self._resource(action)
            detail = kinds.get(action.kind).record(action, resource)
            if detail is not None and seq in self._learned:
                detail = {**detail, **self._learned[seq]}
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
            self.store.mark_succeeded(
                self.run.id, done[0][0], [(seq, ev.to_json()) for seq, _, ev in done]
            )
        self.results.extend(ActionResult(seq, a, "succeeded", ev) for seq, a, ev in done)

    def _checkpoint(self, seq: int, action: Action, learned: Mapping[str, Any]) -> None:
        """Record what a remote call returned (its ids) at once, before verifying.

        A crash after the call must not lose the id of what it created; the
        record has no digest yet, so the next plan compares, never drifts.
        """
        reach("remote-returned")
        self._learned[seq] = dict(learned)
        record = Applied(
            self._resource(action), None, dict(learned), self.run.plan_digest or "", now()
        )
        with self.store.db.transaction():
            self.store.put_applied(self.run.target.key, [record])

    def _intend(self, intent: Mapping[str, Any]) -> None:
        """Record a remote action's intent before its call (see ``ApplyContext.intend``).

        The record keeps its verified digest: the intent only adds what the
        call will have made true if it happened.
        """
        # The concurrent step this worker thread runs, else the one action in flight.
        _, action = getattr(self._step, "current", None) or self._current[0]
        record = self.applied.get(action.resource_id)
        detail = {**(record.detail if record else {}), INTENT: dict(intent)}
        stamp = now()
        with self.store.db.transaction():
            self.store.put_applied(
                self.run.target.key,
                [
                    Applied(
                        self._resource(action),
                        record.digest if record else None,
                        detail,
                        record.revision if record else self.run.plan_digest or "",
                        record.applied_at if record else stamp,
                    )
                ],
            )

    def _fail_remote(self, message: str) -> bool:
        """Mark remote actions in flight failed (nothing restores them); any?"""
        with self._flight:
            remote = [(s, a) for s, a in self._current if not kinds.get(a.kind).restorable]
            self._current = []
        if remote:
            with self.store.db.transaction():
                self.store.set_action_status(
                    self.run.id, [(seq, "failed", None, None, message) for seq, _ in remote]
                )
            seen = {r.seq for r in self.results}
            self.results.extend(
                ActionResult(seq, a, "failed", message=message)
                for seq, a in remote
                if seq not in seen
            )
        return bool(remote)

    # -- undo ---------------------------------------------------------------
    def _undo(self, restore: Callable[[], None], why: str) -> RunResult | None:
        """Run ``restore``; if it fails too, leave the run unfinished for ``recover``.

        A restore that fails (a full disk, a folder made read-only) has left some
        paths as the run wrote them: the run keeps its rollback material and its
        lock, as a crashed one would, and a person fixes the cause and recovers.
        ``None`` when everything was restored.
        """
        try:
            restore()
        except Exception as exc:
            return self._finish(
                Outcome.INTERRUPTED,
                f"{redact_message(why)}; restoring what the run changed failed too "
                f"({redact_message(_wording(exc))}), so the run is left unfinished: fix "
                f"that, then `trueup recover {self.run.id}` puts back what the run changed",
            )
        return None

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
        self._changed_since += restore_run(self.store, self.run, self.rollback, self.fs, items)
        restored = {seq for seq, _ in items}
        for result in self.results:
            if result.seq in restored and result.status == "succeeded":
                result.status = "restored"

    def _finish(self, outcome: Outcome, message: str) -> RunResult:
        reach("run-finishing")
        status = "interrupted" if outcome is Outcome.INTERRUPTED else "finished"
        # Material first: a run killed between the two is still unfinished, and
        # recover finds nothing in flight; the other way round, nobody would
        # ever remove it. A signal waits until both are done.
        with signals_deferred():
            if outcome is not Outcome.INTERRUPTED:
                self.rollback.discard()
                reach("material-discarded")
            if self.finish_run:
                self.store.set_run_status(self.run.id, status, outcome.value, message)
            else:
                self.store.event(self.run.id, "run.executed", {"outcome": outcome.value})
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


def _commanded(action: Action) -> bool:
    """Whether a verified action's declared command is run: not for a removal or a handover."""
    return action.type is not ActionType.REMOVE_RESOURCE and action.handed_over is None


def _left_as_changed(paths: Sequence[str]) -> str:
    if not paths:
        return ""
    return f", except {', '.join(paths)}: changed after the run wrote it, so left as it is"


def _wording(exc: Exception) -> str:
    """What went wrong, for a person: trueup's own message, else the exception's."""
    return exc.message if isinstance(exc, TrueupError) else f"{type(exc).__name__}: {exc}"


class Restored(NamedTuple):
    in_flight: int  # actions that were running when the run stopped
    swept: int  # temp files removed
    kept: list[str]  # paths left as somebody changed them after the run


def restore_interrupted(
    store: Store,
    run: RunInfo,
    rollback: RollbackStore,
    fs: WritableFS,
    journaled: Sequence[RunAction],
) -> Restored:
    """Undo what a stopped run had in flight, before anything resumes it.

    Temp files go first: a restore removes the folders the run created, and
    those must be empty by then.
    """
    running = in_flight(journaled)
    swept = rollback.sweep_temp_files(fs)
    kept = restore_run(store, run, rollback, fs, running)
    return Restored(len(running), swept, kept)


def in_flight(journaled: Sequence[RunAction]) -> list[tuple[int, str]]:
    """The actions a stopped run had under way, with their rollback references."""
    return [(a.seq, ref) for a in journaled if a.status == "running" and (ref := a.rollback_ref)]


def restore_run(
    store: Store,
    run: RunInfo,
    rollback: RollbackStore,
    fs: WritableFS,
    items: Sequence[tuple[int, str]],
) -> list[str]:
    """Restore actions newest first, and the applied records they replaced.

    Returns the paths left as they are because somebody changed them after
    the run wrote them (a recovery never undoes a person's edit).
    """
    kept: list[str] = []
    for seq, ref in sorted(items, reverse=True):
        previous, changed = rollback.restore(ref, fs)
        kept += changed
        note = f"kept as changed after the run: {', '.join(changed)}" if changed else None
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
            store.set_action_status(run.id, [(seq, "restored", ref, None, note)])
    return kept
