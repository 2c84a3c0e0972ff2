"""The stop rule: nothing built on a resource that waits for a person goes ahead."""

from __future__ import annotations

from trueup.model import Action, ActionType
from trueup.plan.planner import blocked_dependents

T = ActionType


def action(rid: str, kind: ActionType, *after: str) -> Action:
    return Action(rid, "file", kind, f"{kind.value} {rid}", before=tuple(after))


def test_a_dependent_of_a_human_action_is_blocked_with_the_reason() -> None:
    [key, config] = blocked_dependents(
        [action("key", T.HUMAN_ACTION), action("config", T.WRITE_CONFIG, "key")]
    )
    assert key.type is T.HUMAN_ACTION
    assert config.type is T.BLOCKED and not config.type.applies
    assert config.summary.startswith("blocked: depends on 'key', which needs a person")
    assert "(it would have: write-config config)" in config.summary


def test_the_block_runs_down_the_whole_chain_and_names_drift() -> None:
    planned = blocked_dependents(
        [
            action("skill", T.DRIFT_CONFLICT),
            action("config", T.WRITE_CONFIG, "skill"),
            action("agent", T.WRITE_FILE, "config"),
        ]
    )
    assert [a.type for a in planned] == [T.DRIFT_CONFLICT, T.BLOCKED, T.BLOCKED]
    assert "which is in drift" in planned[1].summary
    assert "depends on 'config', which is blocked" in planned[2].summary


def test_independent_actions_and_dependents_with_nothing_to_do_go_on() -> None:
    planned = blocked_dependents(
        [
            action("key", T.HUMAN_ACTION),
            action("notes", T.WRITE_FILE),
            action("settled", T.NO_OP, "key"),
            action("after-settled", T.WRITE_FILE, "settled"),
        ]
    )
    assert [a.type for a in planned] == [T.HUMAN_ACTION, T.WRITE_FILE, T.NO_OP, T.WRITE_FILE]


def test_a_blocked_step_that_would_destroy_data_asks_for_no_name() -> None:
    risky = Action("b", "file", T.WRITE_FILE, "replace b", before=("a",), destroys=True)
    [_, blocked] = blocked_dependents([action("a", T.HUMAN_ACTION), risky])
    assert blocked.type is T.BLOCKED and not blocked.destroys
