"""Two profiles on one root: what another profile applied first is drift naming it."""

from __future__ import annotations

from typing import Any

import pytest

from trueup.kinds.config_keys import keys_digest
from trueup.model import ABSENT, ActionType, Applied, Resource, Target
from trueup.plan.planner import compute_plan

TARGET = Target("profile", "mine", "Mine", "/root")


def config(rid: str, target: str, **keys: Any) -> Resource:
    keys = {k.replace("__", "."): v for k, v in keys.items()}
    spec = {"format": "json", "keys": keys, "overlay": [], "digest": keys_digest(keys)}
    return Resource(rid, "config", "merge", target, spec)


def resource(rid: str, kind: str, target: str) -> Resource:
    return Resource(rid, kind, "replace", target, {"digest": "d"})


def applied(res: Resource, at: str = "2026-01-01T00:00:00Z") -> Applied:
    return Applied(res, "d", {}, "r", at)


def decide(mine: Resource, theirs: Resource, own: Applied | None = None) -> Any:
    beside = {"work": {theirs.id: applied(theirs)}}
    plan = compute_plan(
        TARGET,
        "/p.toml",
        "decl",
        [mine],
        {mine.id: ABSENT},
        {mine.id: own} if own else {},
        beside=beside,
    )
    return plan.actions[0]


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        ({"model": "a"}, {"model": "b"}),  # the same key
        ({"tool": {"x": 1}}, {"tool__x": 2}),  # one nesting inside the other
        ({"tool__x": 1}, {"tool": {"x": 2}}),
    ],
)
def test_a_key_another_profile_applied_is_drift_naming_it(
    mine: dict[str, Any], theirs: dict[str, Any]
) -> None:
    action = decide(config("c", "s.json", **mine), config("w", "s.json", **theirs))
    assert action.type is ActionType.DRIFT_CONFLICT
    assert "profile 'work'" in action.summary and "'w'" in action.summary
    assert action.payload["claimed_by"] == {"profile": "work", "resource": "w"}


def test_other_keys_of_the_same_file_are_fine() -> None:
    action = decide(config("c", "s.json", model="a"), config("w", "s.json", theme="dark"))
    assert action.type is ActionType.WRITE_CONFIG


def test_the_same_key_of_another_file_is_fine() -> None:
    action = decide(config("c", "s.json", model="a"), config("w", "t.json", model="b"))
    assert action.type is ActionType.WRITE_CONFIG


@pytest.mark.parametrize(
    ("kind", "target", "their_kind", "their_target"),
    [
        ("file", "a/x", "file", "a/x"),
        ("skill", "skills/r", "directory", "skills"),
        ("directory", "skills", "file", "skills/r/SKILL.md"),
        ("file", "s.json", "config", "s.json"),
    ],
)
def test_whole_files_equal_or_nested_across_profiles_are_drift(
    kind: str, target: str, their_kind: str, their_target: str
) -> None:
    theirs = (
        config("w", their_target, model="b")
        if their_kind == "config"
        else resource("w", their_kind, their_target)
    )
    action = decide(resource("m", kind, target), theirs)
    assert action.type is ActionType.DRIFT_CONFLICT
    assert "profile 'work'" in action.summary


def test_the_profile_that_applied_first_keeps_it() -> None:
    mine = config("c", "s.json", model="a")
    own = applied(mine, "2025-01-01T00:00:00Z")  # before theirs
    action = decide(mine, config("w", "s.json", model="b"), own)
    assert action.type is not ActionType.DRIFT_CONFLICT
