"""``trueup abandon``: release a killed run's lock, leaving every target as it is."""

from __future__ import annotations

from world import World


def test_abandon_releases_the_lock_and_leaves_the_target_as_it_is(
    world: World, profile: str
) -> None:
    killed = world.run(
        "apply", profile, "--root", str(world.root), "--yes", env={"TRUEUP_CRASH_AT": "mutated"}
    )
    assert killed.code == -9, killed.err
    left = world.target("x").read_bytes()
    abandoned = world.run("abandon")
    assert abandoned.code == 0, abandoned.err
    assert world.target("x").read_bytes() == left
    assert world.run("status", "--json").json["data"]["blocked_runs"] == []


def test_abandon_with_nothing_unfinished_is_a_usage_error(world: World) -> None:
    result = world.run("abandon")
    assert result.code == 2 and "no interrupted run" in result.err
