"""An org across its providers: the remote side of the Pipeline.

The same planner, gates and executor as the machine side; what differs is
only where observations come from (provider sessions, read once per run and
concurrently) and what a failure means: remote kinds keep no rollback
material, so a failed or killed apply leaves a checkpoint and applying again
(or ``trueup recover``) resumes from live state without duplicating anything.

Nothing here prints or prompts; the CLI renders what these functions return.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trueup import audit
from trueup.declare.org import DeclaredOrg, load_org
from trueup.errors import ConflictError, TrueupError, UsageError, user_paths
from trueup.execute.executor import Executor, RunResult
from trueup.execute.gates import ConfirmationRequired, Gates, needs_confirmation
from trueup.execute.rollback import RollbackStore
from trueup.fs import ReadOnlyFS, WritableFS
from trueup.kinds.base import ObserveContext
from trueup.model import ActionType, Applied, Observed, Outcome, Plan, Resource, Target
from trueup.org.services import OrgServices, connect
from trueup.org.state import OrgState, load_state, save_state
from trueup.org.unmanaged import Unmanaged, find_unmanaged, with_what_removals_take
from trueup.plan.planner import compute_plan
from trueup.providers.http import RetryPolicy, misread
from trueup.session import Session
from trueup.state.store import RunAction, RunInfo, Store, now
from trueup.targets.base import Progress, check_overwrite, drift_items

_EVENT = {"plan": "plan.computed", "apply": "plan.applied"}


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


class OrgTarget:
    """An org across its providers (see targets.base.TargetAdapter).

    Every provider session it opens stays open for the apply that follows the
    plan; ``close_services`` ends them all.
    """

    def __init__(
        self,
        session: Session,
        env: Mapping[str, str] | None = None,
        policy: RetryPolicy | None = None,
        insecure_http: bool = False,
    ) -> None:
        self.session = session
        self.settings = session.settings
        self.env = env
        self.policy = policy
        #: Plain http:// to a provider that is not on this host is allowed.
        self.insecure_http = insecure_http
        self._opened: list[OrgServices] = []

    @property
    def store(self) -> Store:
        return self.session.store

    def close_services(self) -> None:
        for services in self._opened:
            services.close()
        self._opened.clear()

    # -- plan ---------------------------------------------------------------
    def load(
        self, path: Path, force: Iterable[str] = (), permission: str | None = "plan"
    ) -> OrgPrepared:
        """Load, read the org's scope at every provider, plan. Changes nothing remote."""
        with user_paths(str(path)):
            org = load_org(path, self.settings.data / "cache" / "orgs")
        target = org_target(org)
        if permission is not None:
            self.session.gates(target, _EVENT[permission]).authorize(permission)
        try:
            try:
                return self._observe_and_plan(org, target, force)
            except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
                unreadable = misread(exc)
                if unreadable is None:
                    raise
                raise unreadable from None
        except TrueupError as exc:  # a provider unreachable, refusing or unreadable
            if permission == "apply" and not isinstance(exc, UsageError):
                self._audit_failure(target, exc, None)
            raise

    def _observe_and_plan(
        self, org: DeclaredOrg, target: Target, force: Iterable[str]
    ) -> OrgPrepared:
        history = self.store.run_history(target.key)
        applied = self.store.applied(target.key)
        check_overwrite(force, (r.id for r in org.resources), applied, org.path)
        services = connect(
            org, applied, self.settings.data, self.env, self.policy, self.insecure_http
        )
        self._opened.append(services)
        ctx = ObserveContext(
            root=self.settings.data, fs=ReadOnlyFS(), services=services.mapping(applied)
        )
        resources = {r.id: r for r in org.resources}
        dropped = [a.resource for rid, a in sorted(applied.items()) if rid not in resources]
        by_provider: dict[str, list[Resource]] = {}
        for resource in [*org.resources, *dropped]:
            by_provider.setdefault(resource.kind.partition(".")[0], []).append(resource)
        found: dict[str, Observed] = {}

        def observe(provider: str) -> None:
            for resource in by_provider.get(provider, []):
                found[resource.id] = _observe(resource, ctx)

        services.load(after=observe)
        observed = {r.id: found[r.id] for r in [*org.resources, *dropped]}
        plan = compute_plan(
            target, str(org.path), org.digest, org.resources, observed, applied, frozenset(force)
        )
        unmanaged = find_unmanaged(observed, ctx)
        plan = dataclasses.replace(
            plan,
            observed={**plan.observed, **{u.key: u.identity() for u in unmanaged}},
            actions=with_what_removals_take(plan.actions, observed, unmanaged),
        )
        self.store.replace_drift(target.key, drift_items(plan))
        return OrgPrepared(
            org, target, resources, applied, observed, plan, unmanaged, services, ctx, history
        )

    # -- apply (the Pipeline's order) --------------------------------------
    def reload(self, prepared: OrgPrepared, run: RunInfo) -> OrgPrepared:
        plan = prepared.plan
        try:
            return self.load(Path(plan.source), plan.force, permission=None)
        except TrueupError as exc:  # a provider unreachable or refusing: nothing was changed
            self._audit_failure(prepared.target, exc, plan.digest, run.id)
            raise

    def has_work(self, plan: Plan) -> bool:
        """Drift and fields waiting for a person need no run: the org state records them."""
        return bool(plan.changes)

    def guard(self, prepared: OrgPrepared, gates: Gates) -> None:
        if prepared.plan.changes:
            self._supersede_dead_holder(prepared.target)

    def settled(self, prepared: OrgPrepared, gates: Gates) -> OrgApplied:
        plan = prepared.plan
        state = self._record_state(prepared, None)
        outcome = _final(plan, None, state)
        self._audit(prepared.target, plan, None, outcome)
        self.session.record_settled(plan, gates, outcome)
        return OrgApplied(None, state, outcome, "nothing to change")

    def started(self, run: RunInfo, prepared: OrgPrepared) -> None:
        self.store.record_revision(prepared.org.id, prepared.org.digest)
        # What the run was asked to do: a recovery resumes this declaration only.
        self.store.event(run.id, "run.declaration", {"digest": prepared.org.digest})

    def execute(
        self, run: RunInfo, prepared: OrgPrepared, first_seq: int, progress: Progress | None
    ) -> OrgApplied:
        return self._run(run, prepared, first_seq, prepared.plan.digest)

    def _run(
        self,
        run: RunInfo,
        prepared: OrgPrepared,
        first_seq: int,
        digest: str,
        event: str = "plan.applied",
    ) -> OrgApplied:
        prepared.services.enable_writes()
        executor = Executor(
            self.store,
            run,
            prepared.resources,
            prepared.applied,
            WritableFS(tag=run.id),
            RollbackStore(self.settings.data / "rollback" / run.id, self.settings.data, run.host),
            self.settings.data,
            services=prepared.ctx.services,
        )
        result = executor.execute(prepared.plan, first_seq)
        state = self._record_state(prepared, result, first_seq)
        # The run's own outcome says converged when every action was verified; the
        # org's says what is still not true. One outcome, wherever it is shown.
        final = _final(prepared.plan, result, state)
        message = result.message or _not_yet(state)
        if final is not result.outcome:  # the run's row says what status will show
            self.store.set_run_status(result.run_id, "finished", final.value, message)
        result.outcome = final
        self._audit(prepared.target, prepared.plan, result, result.outcome, event, digest)
        return OrgApplied(result, state, result.outcome, message, prepared.services.stats())

    def _supersede_dead_holder(self, target: Target) -> None:
        """A killed org apply holds the lock with nothing to restore: take it over.

        Only when its process is known to be gone (same host) or it was
        interrupted; a live holder, or one on another host, still refuses.
        Ending someone's run is on the record, as ``trueup abandon`` is.
        """
        holder = self.store.holder(target.key)
        if holder is None or holder.job:
            return
        if holder.status == "interrupted" or (
            holder.status == "running" and holder.holder_alive is False
        ):
            why = "superseded: a new apply resumed from live state"
            self._close_unfinished(holder.id)
            self.store.set_run_status(holder.id, "finished", Outcome.INTERRUPTED.value, why)
            audit.record(
                self.store,
                "run.abandoned",
                "success",
                self.session.actor,
                target,
                reason=why,
                plan_digest=holder.plan_digest,
                run_id=holder.id,
            )

    def _close_unfinished(self, run_id: str) -> None:
        """The killed attempt's unfinished steps: in flight (fate unknown) or never reached."""
        note = "superseded: resumed from live state"
        updates = [
            (a.seq, "interrupted" if a.status == "running" else "skipped", None, None, note)
            for a in self.store.run_actions(run_id)
            if a.status in ("running", "pending")
        ]
        with self.store.db.transaction():
            self.store.set_action_status(run_id, updates)

    # -- recover ------------------------------------------------------------
    def recover(self, run: RunInfo) -> OrgApplied:
        """Resume a killed or interrupted org run under its own id, from live state."""
        gates = self.session.gates(run.target, "run.recovered", run.plan_digest)
        gates.authorize("apply")
        try:
            self.session.take(run)
        except ConflictError as exc:  # its holder is still alive: refused, and recorded
            raise gates.refuse(exc) from None
        source = Path(run.declaration or "")
        if not run.declaration or not source.exists():
            raise self._released(
                run,
                gates,
                "declaration gone",
                UsageError(f"run {run.id}: its org file {source} no longer exists; run released"),
            )
        try:
            prepared = self.load(source, permission=None)
        except TrueupError as exc:  # a provider unreachable: the run stays for a later try
            self._audit_failure(run.target, exc, run.plan_digest, run.id, "run.recovered")
            raise
        started = self.store.last_event(run.id, "run.declaration")
        if started is not None and started.get("digest") != prepared.org.digest:
            raise self._released(
                run,
                gates,
                "declaration changed",
                ConflictError(
                    f"run {run.id}: {source} changed after the run started, so resuming it "
                    "would apply steps nobody reviewed (step mismatch); the run was released",
                    hint=f"review the new plan and apply it: trueup org plan {source}",
                ),
            )
        earlier = {(a.action.resource_id, a.action.summary) for a in self.store.run_actions(run.id)}
        new_risk = [
            a
            for a in needs_confirmation(prepared.plan.actions)
            if (a.resource_id, a.summary) not in earlier
        ]
        if new_risk:
            raise self._released(
                run,
                gates,
                "needs confirmation",
                ConfirmationRequired(
                    f"resuming would run {len(new_risk)} destroying or migrating step(s) the "
                    "interrupted run did not have; the run was released",
                    hint=f"review and confirm them: trueup org apply {source} --confirm NAME",
                ),
            )
        self._close_unfinished(run.id)
        self.store.event(run.id, "run.recovered", {"org": True})
        return self._run(
            run, prepared, self.store.next_seq(run.id), run.plan_digest or "", "run.recovered"
        )

    def _released(self, run: RunInfo, gates: Gates, why: str, error: TrueupError) -> TrueupError:
        """End a run that cannot be resumed (its lock goes) and say why.

        The recovery is refused after it took the run over: audited as its
        authorization refusal would be, naming the run whose lock went.
        """
        self.store.set_run_status(run.id, "finished", Outcome.INTERRUPTED.value, why)
        return gates.refuse(error, run.id)

    # -- recorded state -----------------------------------------------------
    def _record_state(
        self, prepared: OrgPrepared, result: RunResult | None, first_seq: int = 0
    ) -> OrgState:
        target = prepared.target
        state = load_state(self.store, target.key) or OrgState(prepared.org.id)
        sessions = prepared.services.sessions
        ids = dict(state.service_ids)
        for name, session in sessions.items():
            scope = session.scope_id()
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
            journaled = self.store.run_actions(result.run_id)
            state.checkpoints = _checkpoints(state, result, journaled)
            state.run_id = result.run_id
            done = {r.seq for r in result.results}
            failed += [
                f"{r.action.resource_id}: {r.message}"
                for r in result.results
                if r.status == "failed"
            ]
            failed += [
                f"{a.action.resource_id}: not reached (the run stopped)"
                for a in journaled
                if a.seq >= first_seq and a.seq not in done and a.status == "pending"
            ]
        state.service_ids = ids
        state.failed_fields = sorted(set(failed))
        outcome = _final(prepared.plan, result, state)
        state.outcome = outcome.value
        if outcome in (Outcome.CONVERGED, Outcome.HUMAN_ACTION_REQUIRED):
            state.last_applied = {"at": stamp, "declaredOrgVersion": prepared.org.digest}
        save_state(self.store, target.key, state)
        return state

    def _audit(
        self,
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
            self.store,
            event,
            "failed" if failed else "success",
            self.session.actor,
            target,
            reason=(result.message or outcome.value) if failed and result else None,
            plan_digest=digest or plan.digest,
            run_id=result.run_id if result else None,
            detail={
                "outcome": outcome.value if result else "nothing to change",
                "after": audit.outline(plan),
            },
        )

    def _audit_failure(
        self,
        target: Target,
        error: TrueupError,
        digest: str | None,
        run_id: str | None = None,
        event: str = "plan.applied",
    ) -> None:
        """An apply (or a recovery) that stopped before its first step is on the record too."""
        audit.record(
            self.store,
            event,
            "failed",
            self.session.actor,
            target,
            reason=error.message,
            plan_digest=digest,
            run_id=run_id,
            detail={"outcome": Outcome.FAILED.value},
        )

    def status(self) -> list[tuple[str, OrgState]]:
        """The recorded state of every org the actor may see (see ``Session.may_see``)."""
        rows = self.store.db.execute("SELECT target_key FROM org_states ORDER BY target_key")
        keys = [str(r[0]) for r in rows if self.session.may_see(str(r[0]))]
        found = [(key, load_state(self.store, key)) for key in keys]
        states = [(key, state) for key, state in found if state is not None]
        # A first run killed before it finished left no state, but its steps may
        # have made things at the providers: its org is shown, with that run.
        known = {key for key, _ in states}
        for key in self.store.targets():
            if key.startswith("org:") and key not in known and self.session.may_see(key):
                run = self.store.last_run(key)
                if run is not None:
                    states.append(
                        (key, OrgState(run.target.id, run_id=run.id, outcome=run.outcome))
                    )
        return sorted(states, key=lambda pair: pair[0])

    def blocked_runs(self) -> list[RunInfo]:
        """Unfinished org runs the actor may see."""
        return [
            r
            for r in self.store.blocked_runs()
            if r.target.kind == "org" and self.session.may_see(r.target.key)
        ]


def _observe(resource: Resource, ctx: ObserveContext) -> Observed:
    from trueup import kinds

    return kinds.get(resource.kind).observe(resource, ctx)


def _not_yet(state: OrgState) -> str:
    """What keeps an applied org from being converged, in one line (or nothing)."""
    if not state.failed_fields:
        return ""
    first = state.failed_fields[0]
    more = len(state.failed_fields) - 1
    return f"not yet true: {first}" + (f" (and {more} more)" if more else "")


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


def _final(plan: Plan, result: RunResult | None, state: OrgState) -> Outcome:
    """The run's outcome, or HumanActionRequired when declared fields are not yet true."""
    from trueup.model import outcome_of

    outcome = result.outcome if result is not None else outcome_of(plan.actions)
    if outcome is Outcome.CONVERGED and state.failed_fields:
        return Outcome.HUMAN_ACTION_REQUIRED
    return outcome
