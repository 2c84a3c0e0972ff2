"""``trueup plan``: what would change, as a diff; nothing is written."""

from __future__ import annotations

from world import World


def test_plan_shows_the_change_and_writes_nothing(world: World, profile: str) -> None:
    result = world.run("plan", profile, "--root", str(world.root))
    assert result.code == 0, result.err
    assert "write-file" in result.out and "+c" in result.out
    assert not world.target("x").exists()


def test_plan_json_names_the_action_and_the_digest(world: World, profile: str) -> None:
    document = world.run("plan", profile, "--root", str(world.root), "--json").json
    assert document["command"] == "plan" and document["exitCode"] == 0
    assert len(document["data"]["digest"]) == 64
    assert [a["resource"] for a in document["data"]["plan"]["actions"]] == ["a"]


def test_plan_while_a_run_is_blocked_exits_4_and_says_why(world: World, profile: str) -> None:
    root = str(world.root)
    killed = world.run(
        "apply", profile, "--root", root, "--yes", env={"TRUEUP_CRASH_AT": "journal-running"}
    )
    assert killed.code == -9, killed.err
    shown = world.run("plan", profile, "--root", root)
    assert shown.code == 4, shown.out + shown.err
    assert "note:" in shown.out and "trueup recover" in shown.out
    planned = world.run("plan", profile, "--root", root, "--json")
    assert planned.code == 4 and planned.json["exitCode"] == 4
    assert "locked by run" in planned.json["message"]
    assert planned.json["data"]["blocked"]["hint"]
