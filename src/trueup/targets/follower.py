"""A follower's share of a signed revision, applied on a root: one more Pipeline target.

The revision arrives verified and laid out as a profile folder (trueup.source.sync),
so loading, observation and execution are a profile's; the target key is the
profile's on that root, so ``status``, ``recover`` and ``abandon`` treat a
follower's run as any other. What a follower adds is its post-run record:
the outcome, drift and steps for a person, reported to the source.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from trueup.execute.executor import RunResult
from trueup.execute.gates import Gates
from trueup.model import Plan
from trueup.session import Session
from trueup.state.store import RunInfo
from trueup.targets.base import Progress
from trueup.targets.profile import Prepared, ProfileTarget

#: Told each apply's plan and result (``None``: nothing needed a run).
Reporter = Callable[[Plan, RunResult | None], None]


class FollowerTarget(ProfileTarget):
    """A revision's share on ``root`` (see targets.base.TargetAdapter)."""

    def __init__(self, session: Session, root: Path, report: Reporter) -> None:
        super().__init__(session, root)
        self.report = report

    def settled(self, prepared: Prepared, gates: Gates) -> RunResult | None:
        result = super().settled(prepared, gates)
        self.report(prepared.plan, result)
        return result

    def execute(
        self, run: RunInfo, prepared: Prepared, first_seq: int, progress: Progress | None
    ) -> RunResult | None:
        result = super().execute(run, prepared, first_seq, progress)
        self.report(prepared.plan, result)
        return result
