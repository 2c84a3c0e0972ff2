"""The journal of a run's actions: pending one by one, then running and succeeded a batch
at a time, on each back end; what happens to one action alone is its own and wins."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from trueup.execute.gates import acquire
from trueup.model import Action, ActionType, Plan, Target
from trueup.state.store import RunInfo, Store

WS = Target("profile", "ws", "Workstation", "/srv/ws")
PASSED = {"status": "passed", "method": "digest", "observed_digest": "a" * 64}


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = Store.open(store_url)
    yield opened
    opened.close()


@pytest.fixture
def run(store: Store) -> RunInfo:
    return acquire(store, WS, Plan(WS, "/srv/p.toml", "d" * 64, {}, ()), "user:alice")


def write(rid: str) -> Action:
    return Action(rid, "file", ActionType.WRITE_FILE, "create file")


def journaled(store: Store, run: RunInfo, count: int) -> None:
    store.add_actions(run.id, [write(f"f{i}") for i in range(count)], 0, {"f0": "absent"})


def statuses(store: Store, run: RunInfo) -> list[str]:
    return [a.status for a in store.run_actions(run.id)]


def test_actions_are_journaled_pending_with_what_their_plan_saw(store: Store, run: RunInfo) -> None:
    journaled(store, run, 3)
    actions = store.run_actions(run.id)
    assert statuses(store, run) == ["pending"] * 3
    assert [a.action.resource_id for a in actions] == ["f0", "f1", "f2"]
    assert actions[0].observed == "absent" and actions[1].observed is None
    assert all(a.rollback_ref is None and a.evidence is None for a in actions)


def test_a_batch_runs_as_one_with_each_action_referring_to_its_material(
    store: Store, run: RunInfo
) -> None:
    journaled(store, run, 5)
    store.set_action_status(run.id, [(2, "skipped", None, None, "nothing to do")])
    with store.db.transaction():
        store.mark_running(run.id, 1, 3, "batch-1.json")
    actions = store.run_actions(run.id)
    assert [a.status for a in actions] == ["pending", "running", "skipped", "running", "pending"]
    assert [a.rollback_ref for a in actions] == [
        None,
        "batch-1.json#1",
        None,  # skipped before the batch ran: nothing of it is kept
        "batch-1.json#3",
        None,
    ]
    assert actions[1].at is not None and actions[2].message == "nothing to do"


def test_a_verified_batch_succeeds_with_each_actions_own_evidence(
    store: Store, run: RunInfo
) -> None:
    journaled(store, run, 4)
    with store.db.transaction():
        store.mark_running(run.id, 0, 1, "batch-0.json")
        store.mark_running(run.id, 2, 3, "batch-2.json")
    with store.db.transaction():
        store.mark_succeeded(run.id, 0, [(0, PASSED), (1, {**PASSED, "observed_digest": "b" * 64})])
    actions = store.run_actions(run.id)
    assert [a.status for a in actions] == ["succeeded", "succeeded", "running", "running"]
    assert actions[0].evidence == PASSED
    assert actions[1].evidence is not None and actions[1].evidence["observed_digest"] == "b" * 64
    assert actions[3].evidence is None and actions[3].rollback_ref == "batch-2.json#3"


def test_an_action_of_a_batch_missing_from_its_success_is_still_running(
    store: Store, run: RunInfo
) -> None:
    journaled(store, run, 3)
    with store.db.transaction():
        store.mark_running(run.id, 0, 2, "batch-0.json")
        store.mark_succeeded(run.id, 0, [(0, PASSED), (2, PASSED)])
    assert statuses(store, run) == ["succeeded", "running", "succeeded"]


def test_what_happens_to_one_action_alone_wins_over_its_batch(store: Store, run: RunInfo) -> None:
    journaled(store, run, 3)
    with store.db.transaction():
        store.mark_running(run.id, 0, 2, "batch-0.json")
        store.mark_succeeded(run.id, 0, [(0, PASSED), (1, PASSED), (2, PASSED)])
        store.set_action_status(run.id, [(1, "restored", "batch-0.json#1", None, "run failed")])
    actions = store.run_actions(run.id)
    assert [a.status for a in actions] == ["succeeded", "restored", "succeeded"]
    assert actions[1].message == "run failed"
    assert actions[1].rollback_ref == "batch-0.json#1"


def test_success_of_actions_never_journaled_as_a_batch_is_journaled_one_by_one(
    store: Store, run: RunInfo
) -> None:
    journaled(store, run, 2)
    with store.db.transaction():
        store.mark_succeeded(run.id, 0, [(0, PASSED), (1, PASSED)])
    actions = store.run_actions(run.id)
    assert [a.status for a in actions] == ["succeeded", "succeeded"]
    assert actions[1].evidence == PASSED


def test_a_batch_journaled_again_starts_over(store: Store, run: RunInfo) -> None:
    journaled(store, run, 2)
    with store.db.transaction():
        store.mark_running(run.id, 0, 1, "batch-0.json")
        store.mark_succeeded(run.id, 0, [(0, PASSED), (1, PASSED)])
        store.mark_running(run.id, 0, 1, "batch-0b.json")
    actions = store.run_actions(run.id)
    assert [a.status for a in actions] == ["running", "running"]
    assert actions[0].rollback_ref == "batch-0b.json#0" and actions[0].evidence is None
