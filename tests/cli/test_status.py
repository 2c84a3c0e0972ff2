"""``trueup status``: what was applied, what drifted, what is blocked."""

from __future__ import annotations

from world import ONE_FILE, World


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


def test_live_status_with_changes_pending_exits_3_and_says_so(world: World, profile: str) -> None:
    live = world.run("status", profile, "--root", str(world.root), "--json")
    assert (live.code, live.json["status"]) == (3, "changes-pending"), live.out
    assert live.json["exitCode"] == 3 and live.json["message"] == "1 pending change(s)"
    assert world.run("status", profile, "--root", str(world.root)).code == 3
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    assert world.run("status", profile, "--root", str(world.root)).code == 0


def test_drift_in_json_carries_a_message_naming_it(world: World) -> None:
    guarded = ONE_FILE + 'policy = "replace-if-unmodified"\n'
    profile = str(world.write("p.toml", guarded))
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    world.target("x").write_text("mine")
    for args in (
        ("status", profile, "--root", str(world.root)),
        ("plan", profile, "--root", str(world.root)),
        ("status",),
    ):
        shown = world.run(*args, "--json")
        assert shown.code == 4, shown.out
        assert shown.json["message"].startswith("drift: "), (args, shown.json["message"])
        assert " a: " in shown.json["message"] or " a " in shown.json["message"]


LONG = """
[profile]
id = "p"
name = "P"

[[resource]]
id = "a-rather-long-resource-identifier-for-the-agents-file"
kind = "file"
target = "some/deeply/nested/folder/of/the/agents/file.txt"
content = "c"
"""


def test_status_reads_well_at_80_columns_with_no_cell_wrapped(world: World) -> None:
    profile = str(world.write("long.toml", LONG))
    narrow = {"COLUMNS": "80"}
    live = world.run("status", profile, "--root", str(world.root), env=narrow)
    assert live.code == 3, live.err
    lines = live.out.splitlines()[:-1]  # the table; the last line is a sentence
    assert all(len(line) <= 80 for line in lines), live.out
    assert "a-rather-long-resource-identifier-for-the-agents-file" in lines, live.out
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    recorded = world.run("status", env=narrow)
    assert recorded.code == 0, recorded.err
    table = recorded.out.splitlines()[:-1]
    key = f"profile:p@{world.root}"  # a key longer than the terminal has a line of its own
    assert all(len(line) <= 80 or line == key for line in table), recorded.out
    wide = world.run("status", profile, "--root", str(world.root), env={"COLUMNS": "200"})
    assert wide.out.splitlines()[0].split() == ["resource", "kind", "status", "detail"]
