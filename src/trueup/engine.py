"""A profile on a root, through the one Pipeline: what tests, bench and the queue call.

``Engine`` is a Session with the profile target's conveniences: prepare and
plan a profile on a root, apply it, recover or abandon a run. The order of
the gates lives in trueup.pipeline, loading and execution in
trueup.targets.profile; nothing here prints or prompts.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from trueup.model import Action, Plan
from trueup.pipeline import Pipeline, abandon, recover
from trueup.saved_plans import load_saved_plan, save_plan
from trueup.session import Session
from trueup.state.store import RunInfo
from trueup.targets.base import Progress
from trueup.targets.profile import Prepared, ProfileTarget, preview, rollback_for

if TYPE_CHECKING:
    from trueup.execute.executor import RunResult
    from trueup.execute.rollback import RollbackStore

__all__ = ["Engine", "Prepared"]


class Engine(Session):
    """The profile side of a session: one root per call, as ``--root`` is per command."""

    def pipeline(self, root: Path) -> Pipeline[Prepared, RunResult | None]:
        return Pipeline(self, ProfileTarget(self, root))

    def prepare(
        self,
        path: Path,
        root: Path,
        force: Iterable[str] = (),
        permission: str | None = "plan",
    ) -> Prepared:
        """Load, observe and plan; read-only apart from the stat cache."""
        return ProfileTarget(self, root).load(path, force, permission)

    def plan(self, path: Path, root: Path, force: Iterable[str] = ()) -> Prepared:
        """A plan for a person to review; computing it is audited."""
        return self.pipeline(root).plan(path, force)

    def check_fresh(self, expected: Plan, prepared: Prepared) -> None:
        self.pipeline(prepared.root).check_fresh(expected, prepared)

    @staticmethod
    def preview(prepared: Prepared, action: Action) -> str:
        return preview(prepared, action)

    def apply(
        self,
        prepared: Prepared,
        expected: Plan | None = None,
        progress: Progress | None = None,
        confirmation: str | None = None,
        paused: bool = False,
    ) -> RunResult | None:
        """Run the plan behind the gates; ``None`` when there is nothing to do."""
        return self.pipeline(prepared.root).apply(
            prepared, expected, confirmation, paused, progress
        )

    def rollback_for(self, run: RunInfo) -> RollbackStore:
        return rollback_for(self, run)

    def recover(self, run_id: str | None, progress: Progress | None = None) -> RunResult:
        return recover(self, run_id, progress)

    def abandon(self, run_id: str | None) -> RunInfo:
        return abandon(self, run_id)

    save_plan = staticmethod(save_plan)

    def load_saved_plan(self, path: Path) -> Plan:
        return load_saved_plan(self, path)
