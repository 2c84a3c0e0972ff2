"""``trueup worker``: run queued applies; ``--drain`` exits once the queue is empty."""

from __future__ import annotations

from world import World


def test_a_draining_worker_runs_a_queued_apply(world: World, profile: str) -> None:
    queued = world.run("apply", profile, "--root", str(world.root), "--yes", "--queue")
    assert queued.code == 0, queued.err
    assert not world.target("x").exists(), "queued, not applied yet"
    worked = world.run("worker", "--drain", "--json")
    assert worked.code == 0, worked.err
    assert worked.json["data"]["succeeded"] == 1
    assert world.target("x").read_text() == "c"


def test_a_worker_on_an_empty_queue_drains_at_once(world: World) -> None:
    result = world.run("worker", "--drain")
    assert result.code == 0, result.err
    assert "0 succeeded" in result.out
