"""What an org's runs leave on the record: the org state, and the audit rows.

Apart from targets/org.py, which loads, observes and runs: this is what
``org status`` and the audit log read afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trueup import audit
from trueup.declare.org import DeclaredOrg
from trueup.errors import TrueupError
from trueup.execute.executor import RunResult
from trueup.kinds.base import ObserveContext
from trueup.model import ActionType, Applied, Observed, Outcome, Plan, Resource, Target, outcome_of
from trueup.org.services import OrgServices
from trueup.org.state import OrgState, load_state, save_state
from trueup.org.unmanaged import Unmanaged
from trueup.session import Session
from trueup.state.store import RunAction, RunInfo, Store, now


@dataclass
class OrgPrepared:
    """Everything an org plan was computed from, kept so apply uses the same inputs."""

    org: DeclaredOrg
    target: Target
    resources: dict[str, Resource]
    applied: dict[str, Applied]
    observed: dict[str, Observed]
    plan: Plan
    unmanaged: list[Unmanaged]
    services: OrgServices
    ctx: ObserveContext
    #: The target's run history when observation began (``Store.run_history``).
    history: str = ""


@dataclass
class OrgApplied:
    """The result of an org apply: the run, and what the org state now says."""

    run: RunResult | None
    state: OrgState
    outcome: Outcome
    message: str = ""
    requests: dict[str, Any] = field(default_factory=dict)

    def run_result(self) -> RunResult:
        """The run as the machine side reports it (``trueup recover``)."""
        if self.run is None:
            return RunResult("", self.outcome, [], self.message)
        return RunResult(self.run.run_id, self.outcome, self.run.results, self.run.message)

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "message": self.message,
            "run": self.run.to_json() if self.run else None,
            "state": self.state.to_json(),
            "requests": self.requests,
        }


def org_target(org: DeclaredOrg) -> Target:
    return Target("org", org.id, org.name, org.domain)


def record_state(
    store: Store, prepared: OrgPrepared, result: RunResult | None, first_seq: int = 0
) -> OrgState:
    """What the org now is, as ``org status`` shows it: ids, checkpoints, fields not yet true."""
    target = prepared.target
    state = load_state(store, target.key) or OrgState(prepared.org.id)
    sessions = prepared.services.sessions
    ids = dict(state.service_ids)
    for name, provider in sessions.items():
        scope = provider.scope_id()
        if scope:
            ids[name] = scope
    failed = [
        f"{a.resource_id}: {f}"
        for a in prepared.plan.by_type(ActionType.HUMAN_ACTION)
        for f in a.payload.get("failed_fields", ["needs a person"])
    ]
    failed += prepared.services.unmet()
    stamp = now()
    if result is not None:
        journaled = store.run_actions(result.run_id)
        state.checkpoints = _checkpoints(state, result, journaled)
        state.run_id = result.run_id
        done = {r.seq for r in result.results}
        failed += [
            f"{r.action.resource_id}: {r.message}" for r in result.results if r.status == "failed"
        ]
        failed += [
            f"{a.action.resource_id}: not reached (the run stopped)"
            for a in journaled
            if a.seq >= first_seq and a.seq not in done and a.status == "pending"
        ]
    state.service_ids = ids
    state.failed_fields = sorted(set(failed))
    outcome = final_outcome(prepared.plan, result, state)
    state.outcome = outcome.value
    if outcome in (Outcome.CONVERGED, Outcome.HUMAN_ACTION_REQUIRED):
        state.last_applied = {"at": stamp, "declaredOrgVersion": prepared.org.digest}
    save_state(store, target.key, state)
    return state


def audit_applied(
    session: Session,
    target: Target,
    plan: Plan,
    result: RunResult | None,
    outcome: Outcome,
    event: str = "plan.applied",
    digest: str | None = None,
) -> None:
    """The plan is the row's "after" value (org-provisioning.md, Audit); ``digest``
    is the one a person approved, when a recovery re-planned it."""
    failed = outcome in (Outcome.FAILED, Outcome.INTERRUPTED)
    audit.record(
        session.store,
        event,
        "failed" if failed else "success",
        session.actor,
        target,
        reason=(result.message or outcome.value) if failed and result else None,
        plan_digest=digest or plan.digest,
        run_id=result.run_id if result else None,
        detail={
            "outcome": outcome.value if result else "nothing to change",
            "after": audit.outline(plan),
        },
    )


def audit_failure(
    session: Session,
    target: Target,
    error: TrueupError,
    digest: str | None,
    run_id: str | None = None,
    event: str = "plan.applied",
) -> None:
    """An apply (or a recovery) that stopped before its first step is on the record too."""
    audit.record(
        session.store,
        event,
        "failed",
        session.actor,
        target,
        reason=error.message,
        plan_digest=digest,
        run_id=run_id,
        detail={"outcome": Outcome.FAILED.value},
    )


def org_states(session: Session) -> list[tuple[str, OrgState]]:
    """The recorded state of every org the actor may see (see ``Session.may_see``)."""
    rows = session.store.db.execute("SELECT target_key FROM org_states ORDER BY target_key")
    keys = [str(r[0]) for r in rows if session.may_see(str(r[0]))]
    found = [(key, load_state(session.store, key)) for key in keys]
    states = [(key, state) for key, state in found if state is not None]
    # A first run killed before it finished left no state, but its steps may
    # have made things at the providers: its org is shown, with that run.
    known = {key for key, _ in states}
    for key in session.store.targets():
        if key.startswith("org:") and key not in known and session.may_see(key):
            run = session.store.last_run(key)
            if run is not None:
                states.append((key, OrgState(run.target.id, run_id=run.id, outcome=run.outcome)))
    return sorted(states, key=lambda pair: pair[0])


def blocked_org_runs(session: Session) -> list[RunInfo]:
    """Unfinished org runs the actor may see."""
    return [
        r
        for r in session.store.blocked_runs()
        if r.target.kind == "org" and session.may_see(r.target.key)
    ]


def not_yet(state: OrgState) -> str:
    """What keeps an applied org from being converged, in one line (or nothing)."""
    if not state.failed_fields:
        return ""
    first = unmet(state.failed_fields[0])
    more = len(state.failed_fields) - 1
    return f"waiting for a person: {first}" + (f" (and {more} more)" if more else "")


#: How a field that is not yet as declared reads: "not yet true: x: verified"
#: read as if x were verified.
_UNMET = {
    "verified": "not verified yet (its recipient must confirm the address)",
    "needs a person": "needs a person",
}


def unmet(entry: str) -> str:
    """``"RESOURCE: field"`` (a declared field not yet true) in words that say it is not."""
    resource, sep, name = entry.rpartition(": ")
    if not sep:
        resource, name = entry, ""
    said = _UNMET.get(name, f"{name} not as declared yet" if name else "not as declared yet")
    return f"{resource}: {said}"


def _checkpoints(
    state: OrgState, result: RunResult, journaled: Sequence[RunAction]
) -> list[dict[str, Any]]:
    """The steps completed towards the state now recorded, each at the time it completed.

    The journal of the run, not its results: a recovered run completed some
    steps before it was killed. An apply that resumes a failed or interrupted
    run adds to the steps that run completed (they are not done again); any
    other apply starts afresh.
    """
    mine = [
        {"step": a.action.resource_id, "summary": a.action.summary, "at": a.at}
        for a in journaled
        if a.status == "succeeded"
    ]
    resumed = state.outcome in (Outcome.FAILED.value, Outcome.INTERRUPTED.value)
    if not resumed or result.run_id == state.run_id:
        return mine
    again = {c["step"] for c in mine}
    return [c for c in state.checkpoints if c["step"] not in again] + mine


def final_outcome(plan: Plan, result: RunResult | None, state: OrgState) -> Outcome:
    """The run's outcome, or HumanActionRequired when declared fields are not yet true."""
    outcome = result.outcome if result is not None else outcome_of(plan.actions)
    if outcome is Outcome.CONVERGED and state.failed_fields:
        return Outcome.HUMAN_ACTION_REQUIRED
    return outcome
