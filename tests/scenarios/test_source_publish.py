"""``trueup source``: init, publish, list and show revisions through the command."""

from __future__ import annotations

from world import World

PROFILE = """
[profile]
id = "team"
name = "Team"
groups = ["laptops"]

[[resource]]
id = "notes"
kind = "file"
target = "notes.md"
source = "files/notes.md"
groups = ["laptops"]
"""


def test_init_publish_list_show(world: World) -> None:
    world.write("files/notes.md", "notes\n")
    profile = str(world.write("team.toml", PROFILE))
    assert world.run("source", "publish", profile).code == 2  # no keys yet
    init = world.run("source", "init", "--json")
    assert init.code == 0, init.err
    assert init.json["data"]["signing"].startswith("sha256:")
    again = world.run("source", "init")
    assert again.code == 2 and "followers pinned them" in again.err
    first = world.run("source", "publish", profile, "--note", "first", "--json")
    assert first.code == 0 and first.json["data"]["seq"] == 1
    assert first.json["data"]["new_blobs"] == 1
    same = world.run("source", "publish", profile, "--json")
    assert same.json["status"] == "unchanged" and same.json["data"]["seq"] == 1
    listed = world.run("source", "revisions", "--json").json["data"]
    assert [(r["seq"], r["note"], r["resources"]) for r in listed] == [(1, "first", 1)]
    shown = world.run("source", "show", "1").out
    assert "notes" in shown and "laptops" in shown
    assert world.run("source", "show", "7").code == 2


def test_an_undeclared_group_is_refused_at_publish(world: World) -> None:
    world.write("files/notes.md", "notes\n")
    profile = world.write("team.toml", PROFILE.replace('groups = ["laptops"]\n\n', "\n", 1))
    world.run("source", "init")
    refused = world.run("source", "publish", str(profile))
    assert refused.code == 2
    assert "field 'groups': 'laptops' is not declared in [profile] groups" in refused.err
