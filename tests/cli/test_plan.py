"""``trueup plan``: what would change, as a diff; nothing is written."""

from __future__ import annotations

import os
import time

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


SKILL = """
[profile]
id = "p"
name = "P"

[[resource]]
id = "review"
kind = "skill"
target = "skills/review"
source = "skill"
"""


def test_drift_on_a_skill_names_its_files_and_shows_what_overwrite_discards(
    world: World,
) -> None:
    world.write("skill/SKILL.md", "title\nstep one\n")
    profile = str(world.write("p.toml", SKILL))
    root = str(world.root)
    assert world.run("apply", profile, "--root", root, "--yes").code == 0
    world.target("skills/review/SKILL.md").write_text("title\nmy own step\nPASSWORD=s3cret-pw\n")
    world.target("skills/review/notes.md").write_text("my notes\n")
    shown = world.run("plan", profile, "--root", root, env={"COLUMNS": "200"})
    assert shown.code == 4, shown.out + shown.err
    assert "SKILL.md modified, notes.md added" in shown.out
    assert "review (drift: what --overwrite review would discard)" in shown.out
    assert "-my own step\n" in shown.out and "+step one\n" in shown.out
    assert "-my notes\n" in shown.out and "s3cret-pw" not in shown.out
    planned = world.run("plan", profile, "--root", root, "--json")
    assert planned.code == 4 and "SKILL.md modified" in planned.json["message"]
    [action] = planned.json["data"]["plan"]["actions"]
    assert action["payload"]["changed"] == [
        {"path": "SKILL.md", "change": "modified"},
        {"path": "notes.md", "change": "added"},
    ]
    status = world.run("status", profile, "--root", root, "--json")
    assert status.json["data"]["resources"][0]["files"] == action["payload"]["changed"]
    assert status.json["message"].startswith("drift: review: modified since trueup installed")
    live = world.run("status", profile, "--root", root)
    assert live.code == 4 and "-my own step\n" in live.out, live.out
    overwrite = ("--overwrite", "review", "--confirm", "P")  # notes.md is destroyed
    assert world.run("apply", profile, "--root", root, "--yes", *overwrite).code == 0
    assert world.target("skills/review/SKILL.md").read_text() == "title\nstep one\n"


def test_a_plan_answered_from_memory_loads_no_loader_planner_or_executor(
    world: World, profile: str
) -> None:
    root = str(world.root)
    assert world.run("apply", profile, "--root", root, "--yes").code == 0
    past = time.time_ns() - 10_000_000_000  # old enough to be trusted by its stat
    for path in (
        world.base,
        world.root,
        world.target("x"),
        world.profiles,
        world.profiles / "p.toml",
    ):
        os.utime(path, ns=(past, past))
    assert world.run("plan", profile, "--root", root).code == 0  # computed, remembered
    code, modules = world.modules("plan", profile, "--root", root)
    assert code == 0
    computing = {"trueup.declare.profile", "trueup.plan.planner", "trueup.kinds.base"}
    assert not (computing | {"trueup.execute.executor"}) & modules
    # Another option is another plan, computed: the same check sees those modules then.
    code, modules = world.modules("plan", profile, "--root", root, "--max-file-bytes", "999")
    assert code == 0 and computing <= modules
