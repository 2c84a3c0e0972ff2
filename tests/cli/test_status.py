"""``trueup status``: what was applied, what drifted, what is blocked."""

from __future__ import annotations

from world import World


def test_status_of_an_empty_store_says_where_to_start(world: World) -> None:
    result = world.run("status")
    assert result.code == 0, result.err
    assert "trueup plan" in result.out


def test_status_reports_the_last_run_of_each_target(world: World, profile: str) -> None:
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    data = world.run("status", "--json").json["data"]
    assert data["blocked_runs"] == []
    [target] = data["targets"]
    assert target["last_run"]["outcome"] == "converged"
