"""What every target shares: --overwrite must name something, drift as status shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from trueup.errors import UsageError
from trueup.model import Action, ActionType, Plan, Target
from trueup.targets.base import check_overwrite, drift_items


def test_overwrite_of_an_id_nothing_has_is_a_typo_and_refused() -> None:
    check_overwrite(["a", "old"], declared=["a"], applied=["old"], source=Path("p.toml"))
    with pytest.raises(UsageError, match="--overwrite tpyo"):
        check_overwrite(["tpyo"], declared=["a"], applied=["old"], source=Path("p.toml"))


def test_only_drift_conflicts_are_drift_items() -> None:
    drift = {"observed": "x", "applied": "y", "desired": "z"}
    actions = (
        Action("a", "file", ActionType.DRIFT_CONFLICT, "edited here", {"drift": drift}),
        Action("b", "file", ActionType.WRITE_FILE, "create b"),
    )
    plan = Plan(Target("profile", "p", "P", "/r"), "p.toml", "d", {}, actions)
    assert drift_items(plan) == [{"rid": "a", "summary": "edited here", **drift}]
