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
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from trueup import audit
from trueup.declare.org import DeclaredOrg, load_org
from trueup.errors import ConflictError, TrueupError, UsageError, user_paths
from trueup.execute.executor import Executor
from trueup.execute.gates import ConfirmationRequired, Gates, needs_confirmation
from trueup.execute.remote_scheduler import Limits
from trueup.execute.rollback import RollbackStore
from trueup.fs import ReadOnlyFS, WritableFS
from trueup.kinds.base import ObserveContext
from trueup.model import Observed, Outcome, Plan, Resource, Target
from trueup.org.services import OrgServices, connect
from trueup.org.unmanaged import find_unmanaged, with_what_removals_take
from trueup.plan.planner import compute_plan
from trueup.providers.http import RetryPolicy, misread
from trueup.session import Session
from trueup.state.store import RunInfo, Store
from trueup.targets.base import Progress, check_overwrite, drift_items
from trueup.targets.org_records import (
    OrgApplied,
    OrgPrepared,
    audit_applied,
    audit_failure,
    final_outcome,
    not_yet,
    org_target,
    record_state,
)

_EVENT = {"plan": "plan.computed", "apply": "plan.applied"}


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
        # Read before anything runs: a mistyped bound is refused with nothing started.
        self.limits = Limits.from_env({**os.environ, **(env or {})})
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
                audit_failure(self.session, target, exc, None)
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
            audit_failure(self.session, prepared.target, exc, plan.digest, run.id)
            raise

    def has_work(self, plan: Plan) -> bool:
        """Drift and fields waiting for a person need no run: the org state records them."""
        return bool(plan.changes)

    def guard(self, prepared: OrgPrepared, gates: Gates) -> None:
        if prepared.plan.changes:
            self._supersede_dead_holder(prepared.target)

    def settled(self, prepared: OrgPrepared, gates: Gates) -> OrgApplied:
        plan = prepared.plan
        state = record_state(self.store, prepared, None)
        outcome = final_outcome(plan, None, state)
        audit_applied(self.session, prepared.target, plan, None, outcome)
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

    def run_queued(self, run: RunInfo, prepared: OrgPrepared, first_seq: int) -> OrgApplied:
        """The steps of a queued job's run; the job runner finishes the run, not this."""
        return self._run(run, prepared, first_seq, prepared.plan.digest, finish_run=False)

    def _run(
        self,
        run: RunInfo,
        prepared: OrgPrepared,
        first_seq: int,
        digest: str,
        event: str = "plan.applied",
        finish_run: bool = True,
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
            remote_limits=self.limits,
            finish_run=finish_run,
        )
        result = executor.execute(prepared.plan, first_seq)
        state = record_state(self.store, prepared, result, first_seq)
        # The run's own outcome says converged when every action was verified; the
        # org's says what is still not true. One outcome, wherever it is shown.
        final = final_outcome(prepared.plan, result, state)
        message = result.message or not_yet(state)
        if finish_run and final is not result.outcome:  # the run's row says what status shows
            self.store.set_run_status(result.run_id, "finished", final.value, message)
        result.outcome = final
        audit_applied(
            self.session, prepared.target, prepared.plan, result, result.outcome, event, digest
        )
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
            self.close_unfinished(holder.id)
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

    def close_unfinished(self, run_id: str) -> None:
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
            audit_failure(self.session, run.target, exc, run.plan_digest, run.id, "run.recovered")
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
        self.close_unfinished(run.id)
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


def _observe(resource: Resource, ctx: ObserveContext) -> Observed:
    from trueup import kinds

    return kinds.get(resource.kind).observe(resource, ctx)
