"""``trueup recover``: finish a run that was killed, from its journal."""

from __future__ import annotations

from world import World


def test_recover_finishes_a_killed_apply(world: World, profile: str) -> None:
    killed = world.run(
        "apply", profile, "--root", str(world.root), "--yes", env={"TRUEUP_CRASH_AT": "mutated"}
    )
    assert killed.code == -9, killed.err
    assert world.run("status").code == 4, "a crashed run blocks the target"
    recovered = world.run("recover")
    assert recovered.code == 0, recovered.err
    assert world.target("x").read_text() == "c"
    assert world.run("status").code == 0


def test_recover_with_nothing_unfinished_is_a_usage_error(world: World) -> None:
    result = world.run("recover")
    assert result.code == 2 and "no interrupted run" in result.err
