"""A machine-side apply through the queue: one ``profile.apply`` step.

``enqueue_apply`` passes the same gates as a foreground apply (authorization,
typed confirmation, the lock) while the person who asked is still there, and
queues a job whose single step re-plans and executes the profile on its root
under the job's run. The step reuses the executor (journal, rollback
material, verification), so a worker killed mid-step leaves what a killed
``trueup apply`` leaves; the next attempt restores the in-flight actions and
rolls forward as ``trueup recover`` does.

The plan must still be the one that was queued when the step first runs:
otherwise the step fails as stale, for a person to look at.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueup import audit
from trueup.errors import ApplyFailedError, ConflictError
from trueup.execute.executor import restore_interrupted
from trueup.execute.runner import Runner, Step, StepAborted, StepContext, step_handler
from trueup.fs import WritableFS
from trueup.model import Outcome

if TYPE_CHECKING:
    from trueup.execute.executor import ActionResult
    from trueup.model import Plan, Target
    from trueup.session import Session
    from trueup.targets.profile import Prepared

HANDLER = "profile.apply"


def enqueue_apply(session: Session, prepared: Prepared, confirmation: str | None = None) -> str:
    """Gate and queue ``prepared``'s plan; returns the job's run id."""
    plan = prepared.plan
    step = Step(
        "apply",
        HANDLER,
        {
            "profile": str(prepared.profile.path),
            "root": str(prepared.root),
            "force": list(plan.force),
            "plan": plan.digest,
            # A step resumed after a crash may plan afresh; only for this declaration.
            "declared": plan.declaration,
        },
        f"apply {prepared.profile.id} on {prepared.root}",
    )
    # The root is a folder on this host.
    return enqueue_plan_step(session, prepared.target, plan, step, confirmation)


def enqueue_plan_step(
    session: Session, target: Target, plan: Plan, step: Step, confirmation: str | None
) -> str:
    """Gate ``plan`` and queue ``step`` as a one-step job on this host; returns its run id.

    Shared by every queued apply (a profile's, an org's): the gates of a
    foreground apply pass while the person who asked is still there, the job
    is pinned to this host (it reads files that are here) and holds the
    target's lock from now on, and the queueing is audited as ``plan.queued``.
    """
    gates = session.gates(target, "plan.applied", plan.digest)
    gates.authorize("apply")
    gates.confirm(plan.actions, confirmation)
    runner = Runner(session.store)
    try:
        run_id = runner.enqueue(
            target,
            [step],
            session.actor.key,
            plan.digest,
            plan.source,
            affinity=socket.gethostname(),
        )
    except ConflictError as exc:
        raise gates.refuse(exc) from None
    finally:
        runner.close()
    audit.record(
        session.store,
        "plan.queued",
        "success",
        session.actor,
        target,
        plan_digest=plan.digest,
        run_id=run_id,
    )
    return run_id


def step_outcome(
    ctx: StepContext, outcome: Outcome, message: str, results: Iterable[ActionResult]
) -> dict[str, Any]:
    """What a queued apply's step returns, or the error the worker must see.

    Shared by every queued apply: an interrupted run aborts the worker too
    (the signal was meant for it), a failed one fails the step, and anything
    else reports its outcome and how many actions succeeded.
    """
    if outcome is Outcome.INTERRUPTED:
        ctx.abort.set()  # the signal that interrupted us was meant for the worker too
        raise StepAborted(message)
    if outcome is Outcome.FAILED:
        raise ApplyFailedError(message)
    applied = sum(1 for r in results if r.status == "succeeded")
    return {"outcome": outcome.value, "applied": applied}


@step_handler(HANDLER)
def apply_profile(ctx: StepContext) -> Mapping[str, Any]:
    """Execute the queued profile on its root under the job's run (no new lock)."""
    from trueup.session import Session
    from trueup.settings import Settings
    from trueup.targets.profile import ProfileTarget, rollback_for
    from trueup.targets.profile_recovery import unplanned

    params = ctx.step.params
    session = Session(Settings.from_env(state=ctx.store.db.url), ctx.store)
    target = ProfileTarget(session, Path(params["root"]))
    run = ctx.run
    store = ctx.store
    rollback = rollback_for(session, run)
    journaled = store.run_actions(run.id)
    fs = WritableFS(max_file_bytes=session.settings.max_file_bytes, tag=run.id)
    restore_interrupted(store, run, rollback, fs, journaled)
    prepared = target.load(Path(params["profile"]), params.get("force", ()), permission=None)
    if not journaled and prepared.plan.digest != params["plan"]:
        raise ConflictError(
            "the plan is stale: the profile or the target changed since the apply was queued",
            hint="compute the plan again and queue it again",
        )
    surprises = unplanned(prepared.plan, journaled)
    if params.get("declared") not in (None, prepared.plan.declaration):
        # "create file" reads the same whatever the content: compare what was declared.
        surprises.insert(0, f"{params['profile']} changed after the apply was queued")
    if surprises:
        raise ConflictError(
            f"the rest of the job is not what it planned any more ({surprises[0]})",
            hint="compute the plan again and queue it again",
        )
    if not target.has_work(prepared.plan):
        return {"outcome": "converged", "applied": 0}
    result = target.run_steps(run, prepared, store.next_seq(run.id), finish_run=False)
    return step_outcome(ctx, result.outcome, result.message, result.results)
