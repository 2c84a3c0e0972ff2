"""Recovering an interrupted run of a profile: restore what was in flight, redo the rest.

Only what the run planned is redone: a file somebody edited after the crash
is kept, and a recovery that would change anything the run did not plan
waits for a person to review a fresh plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from trueup.errors import ConflictError, UsageError
from trueup.execute.executor import (
    ActionResult,
    Restored,
    RunResult,
    in_flight,
    restore_interrupted,
    signals_interrupt,
)
from trueup.execute.rollback import RollbackStore
from trueup.fs import WritableFS
from trueup.model import Outcome, Plan
from trueup.session import Session
from trueup.state.store import RunAction, RunInfo
from trueup.targets.base import Progress
from trueup.targets.profile import ProfileTarget, audit_applied, rollback_for


def recover(session: Session, run: RunInfo, progress: Progress | None) -> RunResult:
    """Restore what was in flight, then redo the rest of the run and verify it."""
    gates = session.gates(run.target, "run.recovered", run.plan_digest)
    gates.authorize("apply")  # before saying anything of the run
    if run.job:
        raise UsageError(
            f"run {run.id} is a queued job: workers resume it from its checkpoint",
            hint=f"trueup jobs resume {run.id}   (or: trueup abandon {run.id})",
        )
    try:
        # A signal outside an action ends the recovery as it ends an apply:
        # the run is left interrupted, for another recover.
        with signals_interrupt(KeyboardInterrupt):
            result = _recover(session, run, progress)
    except ConflictError as exc:  # its holder is still alive: refused, and recorded
        raise gates.refuse(exc) from None
    except KeyboardInterrupt:
        raise session.interrupted_outside_actions(run) from None
    audit_applied(session, run.target, run.plan_digest or "", result, "run.recovered")
    return result


def _recover(session: Session, run: RunInfo, progress: Progress | None) -> RunResult:
    rollback = rollback_for(session, run)
    journaled = session.store.run_actions(run.id)
    # Before the run is taken over: a recovery in the wrong place leaves it as it is.
    rollback.check(ref for _, ref in in_flight(journaled))
    session.take(run)
    fs = WritableFS(max_file_bytes=session.settings.max_file_bytes, tag=run.id)
    restored = restore_interrupted(session.store, run, rollback, fs, journaled)
    session.store.event(
        run.id,
        "run.recovered",
        {
            "restored": restored.in_flight,
            "kept_as_changed": restored.kept,
            "temp_swept": restored.swept,
        },
    )
    source = Path(run.declaration or "")
    if not run.declaration or not source.exists():
        return _not_redone(
            session,
            run,
            rollback,
            restored,
            f"as its declaration {source} no longer exists: to finish it, put that "
            "file back, then trueup plan and apply",
        )
    started = session.store.last_event(run.id, "run.started") or {}
    target = ProfileTarget(session, Path(run.target.location))
    prepared = target.load(source, started.get("force", ()))
    surprises = unplanned(prepared.plan, journaled)
    if started.get("declared") not in (None, prepared.plan.declaration):
        # "create file" reads the same whatever the content: compare what was declared.
        surprises.insert(0, f"{source} changed after the run planned it")
    if surprises:
        # Nobody reviewed these: the run was to do something else there.
        return _not_redone(
            session,
            run,
            rollback,
            restored,
            f"as it is not what the run planned any more ({surprises[0]}): review it with "
            "trueup plan, then apply",
        )
    return target.run_steps(run, prepared, session.store.next_seq(run.id), progress)


def _not_redone(
    session: Session, run: RunInfo, rollback: RollbackStore, restored: Restored, why: str
) -> RunResult:
    """Finish a recovered run without redoing the rest: a person decides what comes next."""
    kept = f" (kept as changed after the run: {', '.join(restored.kept)})"
    message = (
        f"recovered: in-flight actions restored{kept if restored.kept else ''}; the rest "
        f"was not redone, {why}"
    )
    outcome = Outcome.HUMAN_ACTION_REQUIRED
    session.store.set_run_status(run.id, "finished", outcome.value, message)
    rollback.discard()
    done = [
        ActionResult(a.seq, a.action, a.status, message=a.message or "")
        for a in session.store.run_actions(run.id)
        if a.status == "succeeded"
    ]
    return RunResult(run.id, outcome, done, message)


def unplanned(plan: Plan, journaled: Sequence[RunAction]) -> list[str]:
    """Changes a recovery would make that the interrupted run did not plan.

    A file somebody wrote or edited after the crash turns "create file" into
    "update file" (or into drift): redoing that unasked could overwrite their
    work, so it waits for a person to review a fresh plan. A run stopped
    before it journaled anything changed nothing: its plan is simply redone.
    """
    if not journaled:
        return []
    planned = {(a.action.resource_id, a.action.type, a.action.summary) for a in journaled}
    # What each target looked like to the run's plan: a target that looks
    # otherwise now (an edit after the crash, kept by the restore) is not the
    # one the run was to change, even where the action reads the same.
    seen = {a.action.resource_id: a.observed for a in journaled if a.observed is not None}
    surprises = []
    for action in plan.actions:
        if not action.changes_target:  # verifying or forgetting overwrites nobody's work
            continue
        rid = action.resource_id
        if (rid, action.type, action.summary) not in planned:
            surprises.append(f"{rid}: {action.summary}")
        elif rid in seen and plan.observed.get(rid) != seen[rid]:
            surprises.append(f"{rid}: its target changed after the run planned to {action.summary}")
    return surprises
