"""``trueup jobs``: queued applies, listed; a failed one resumed."""

from __future__ import annotations

from world import World


def test_jobs_list_shows_a_queued_apply(world: World, profile: str) -> None:
    assert world.run("jobs", "list", "--json").json["data"] == []
    queued = world.run("apply", profile, "--root", str(world.root), "--yes", "--queue")
    assert queued.code == 0, queued.err
    [job] = world.run("jobs", "list", "--json").json["data"]
    assert job["status"] == "queued"
    assert "queued" in world.run("jobs", "list").out


def test_resuming_an_unknown_job_is_a_usage_error(world: World) -> None:
    result = world.run("jobs", "resume", "nope")
    assert result.code == 2 and "no job 'nope'" in result.err
