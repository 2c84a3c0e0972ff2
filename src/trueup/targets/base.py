"""The adapter interface every target implements, and the checks all targets share.

A target supplies loading (declaration, observation scope, plan), its
execution, and what it records after a run; the Pipeline supplies the order
and the gates. Nothing here knows a target kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from trueup.errors import UsageError
from trueup.execute.gates import Gates
from trueup.model import ActionType, Plan, Target
from trueup.state.store import RunInfo


class Prepared(Protocol):
    """What a plan was computed from; apply runs on these same inputs."""

    @property
    def target(self) -> Target: ...
    @property
    def plan(self) -> Plan: ...
    @property
    def history(self) -> str: ...


P = TypeVar("P", bound=Prepared)
R = TypeVar("R", covariant=True)
Progress = Callable[[int], None]


class TargetAdapter(Protocol[P, R]):
    """One kind of target, as the Pipeline drives it.

    ``R`` is what an apply of this target returns (a run's result, or an org's
    state with it).
    """

    def load(self, source: Path, force: Iterable[str], permission: str | None) -> P:
        """Declaration, observation of its scope, plan. Changes nothing but caches.

        ``permission`` is checked once the target is known and before anything
        is observed, so an unauthorised actor learns nothing about it.
        """
        ...

    def reload(self, prepared: P, run: RunInfo) -> P:
        """Observe and plan ``prepared``'s declaration again, under ``run``'s lock."""
        ...

    def has_work(self, plan: Plan) -> bool:
        """Whether applying ``plan`` needs a run (the lock, the journal)."""
        ...

    def guard(self, prepared: P, gates: Gates) -> None:
        """Last check before the lock: refuse, or settle, another run holding it."""
        ...

    def settled(self, prepared: P, gates: Gates) -> R:
        """An apply with nothing to do: its records and its audit."""
        ...

    def started(self, run: RunInfo, prepared: P) -> None:
        """Recorded once the run holds the lock and its plan is confirmed fresh."""
        ...

    def execute(self, run: RunInfo, prepared: P, first_seq: int, progress: Progress | None) -> R:
        """The plan's steps under ``run``, then the post-run records and audit."""
        ...


def check_overwrite(
    force: Iterable[str], declared: Iterable[str], applied: Iterable[str], source: Path
) -> None:
    """Refuse an ``--overwrite`` id that names nothing: a typo must not pass unnoticed."""
    unknown = sorted(set(force) - set(declared) - set(applied))
    if unknown:
        raise UsageError(
            f"--overwrite {unknown[0]}: no resource has that id in {source} "
            "or among those trueup applied here",
            hint="use the id of a resource the plan reports as drift",
        )


def drift_items(plan: Plan) -> list[dict[str, Any]]:
    """A plan's drift conflicts as ``status`` shows them until the next plan."""
    return [
        {
            "rid": action.resource_id,
            "summary": action.summary,
            "observed": action.payload.get("drift", {}).get("observed"),
            "applied": action.payload.get("drift", {}).get("applied"),
            "desired": action.payload.get("drift", {}).get("desired"),
        }
        for action in plan.actions
        if action.type is ActionType.DRIFT_CONFLICT
    ]
