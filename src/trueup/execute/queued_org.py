"""An org apply through the queue: one ``org.apply`` step for ``trueup worker``.

``enqueue_org_apply`` passes the gates of a foreground apply (authorization,
typed confirmation, the lock) while the person who asked is still there, and
queues a job whose single step reads the providers again and executes the
org's plan under the job's run, through the same executor (concurrent remote
steps, each journaled before its call). The job holds the org's lock from the
moment it is queued: a failed run keeps it until ``trueup jobs resume`` puts
it back in the queue or ``trueup abandon`` ends it, as the seed's job runner
does, so nobody applies over a half-done org meanwhile.

Nothing has changed when the step first runs, so its plan must still be the
one that was queued (otherwise it fails as stale, for a person to look at).
Resumed after a failure or a crash, it goes on from live state, for the same
declaration only, and never runs a destroying or migrating step the queued
plan did not have.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueup.errors import ConflictError
from trueup.execute.gates import needs_confirmation
from trueup.execute.queued_apply import enqueue_plan_step, step_outcome
from trueup.execute.runner import Step, StepContext, step_handler

if TYPE_CHECKING:
    from trueup.org.engine import OrgEngine, OrgPrepared

HANDLER = "org.apply"


def enqueue_org_apply(
    engine: OrgEngine, prepared: OrgPrepared, confirmation: str | None = None
) -> str:
    """Gate and queue ``prepared``'s plan; returns the job's run id."""
    plan = prepared.plan
    step = Step(
        "apply",
        HANDLER,
        {
            "org": str(prepared.org.path),
            "force": list(plan.force),
            "plan": plan.digest,
            "declared": prepared.org.digest,
            # Confirmed when queued: a resumed run may run these and no others.
            "confirmed": sorted(
                [a.resource_id, a.summary] for a in needs_confirmation(plan.actions)
            ),
        },
        f"apply org {prepared.org.id} ({prepared.org.domain})",
    )
    # The org file is read where it was queued; the providers are anywhere.
    return enqueue_plan_step(engine.base, prepared.target, plan, step, confirmation)


@step_handler(HANDLER)
def apply_org(ctx: StepContext) -> Mapping[str, Any]:
    """Execute the queued org under the job's run (no new lock)."""
    from trueup.org.engine import OrgEngine
    from trueup.session import Session
    from trueup.settings import Settings

    params = ctx.step.params
    settings = Settings.from_env(state=ctx.store.db.url)
    engine = OrgEngine(settings, Session(settings, ctx.store))
    try:
        target = engine.target
        run = ctx.run
        journaled = ctx.store.run_actions(run.id)
        prepared = target.load(Path(params["org"]), params.get("force", ()), permission=None)
        if prepared.org.digest != params["declared"]:
            raise ConflictError(
                f"{params['org']} changed after the apply was queued",
                hint="compute the plan again and queue it again",
            )
        if not journaled and prepared.plan.digest != params["plan"]:
            raise ConflictError(
                "the plan is stale: the providers changed since the apply was queued",
                hint="compute the plan again and queue it again",
            )
        confirmed = {tuple(pair) for pair in params.get("confirmed", [])}
        unconfirmed = [
            a.resource_id
            for a in needs_confirmation(prepared.plan.actions)
            if (a.resource_id, a.summary) not in confirmed
        ]
        if unconfirmed:
            raise ConflictError(
                f"resuming would run destroying or migrating steps nobody confirmed "
                f"({', '.join(unconfirmed)})",
                hint="abandon this run, then review and apply the org again",
            )
        if not target.has_work(prepared.plan):
            return {"outcome": "converged", "applied": 0}
        target.close_unfinished(run.id)
        result = target.run_queued(run, prepared, ctx.store.next_seq(run.id))
    finally:
        engine.close_services()
    results = result.run.results if result.run else []
    return step_outcome(ctx, result.outcome, result.message, results)
