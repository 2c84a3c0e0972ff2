"""An org through the one Pipeline: what the CLI, tests and bench call.

The same planner, gates and executor as a profile; what differs is only where
observations come from (provider sessions, read once per run and
concurrently) and what a failure means: remote kinds keep no rollback
material, so a failed or killed apply leaves a checkpoint and applying again
(or ``trueup recover``) resumes from live state without duplicating anything.
Loading, execution and the org's records live in trueup.targets.org.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from trueup import kinds
from trueup.model import Action, Plan
from trueup.org.state import OrgState
from trueup.pipeline import Pipeline
from trueup.providers.http import RetryPolicy
from trueup.session import Session
from trueup.settings import Settings
from trueup.state.store import RunInfo, Store
from trueup.targets.org import OrgTarget
from trueup.targets.org_records import (
    OrgApplied,
    OrgPrepared,
    blocked_org_runs,
    org_states,
    org_target,
)

__all__ = ["OrgApplied", "OrgEngine", "OrgPrepared", "org_target"]


class OrgEngine:
    """An org target in a session; ``close`` ends its provider sessions and the store."""

    def __init__(
        self,
        settings: Settings,
        base: Session | None = None,
        env: Mapping[str, str] | None = None,
        policy: RetryPolicy | None = None,
        insecure_http: bool = False,
    ) -> None:
        self.settings = settings
        self.base = base or Session(settings)
        self.target = OrgTarget(self.base, env, policy, insecure_http)
        self.pipeline = Pipeline(self.base, self.target)

    @property
    def store(self) -> Store:
        return self.base.store

    def close_services(self) -> None:
        self.target.close_services()

    def close(self) -> None:
        self.close_services()
        self.base.close()

    def prepare(
        self, path: Path, force: Iterable[str] = (), permission: str | None = "plan"
    ) -> OrgPrepared:
        """Load, read the org's scope at every provider, plan. Changes nothing remote."""
        return self.target.load(path, force, permission)

    def plan(self, path: Path, force: Iterable[str] = ()) -> OrgPrepared:
        """A plan for a person to review; computing it is audited."""
        return self.pipeline.plan(path, force)

    def check_fresh(self, expected: Plan, prepared: OrgPrepared) -> None:
        self.pipeline.check_fresh(expected, prepared)

    @staticmethod
    def preview(prepared: OrgPrepared, action: Action) -> str:
        resource = (
            prepared.resources.get(action.resource_id)
            or prepared.applied[action.resource_id].resource
        )
        return kinds.get(action.kind).preview(action, resource, prepared.ctx)

    def apply(
        self,
        prepared: OrgPrepared,
        expected: Plan | None = None,
        confirmation: str | None = None,
        paused: bool = False,
    ) -> OrgApplied:
        """Authorization, staleness, typed confirmation, the lock; then the steps."""
        return self.pipeline.apply(prepared, expected, confirmation, paused)

    def recover(self, run: RunInfo) -> OrgApplied:
        return self.target.recover(run)

    def status(self) -> list[tuple[str, OrgState]]:
        return org_states(self.base)

    def blocked_runs(self) -> list[RunInfo]:
        return blocked_org_runs(self.base)
