"""``trueup source``: each subcommand's answers and refusals, before and after ``init``.

The whole story (serve, enroll, sync, report) is tests/scenarios/test_many_machines.py;
this file pins the command surface: exit codes, next steps and JSON envelopes.
"""

from __future__ import annotations

from world import World


def test_every_subcommand_but_init_says_to_run_init_first(world: World, profile: str) -> None:
    listed = world.run("source", "revisions")
    assert listed.code == 0 and "trueup source publish PROFILE" in listed.out
    refused = world.run("source", "publish", profile)
    assert refused.code == 2, refused.out + refused.err
    assert "no source yet" in refused.err and "trueup source init" in refused.err


def test_init_makes_the_keys_once_and_never_replaces_them(world: World) -> None:
    made = world.run("source", "init")
    assert made.code == 0, made.err
    assert "signing sha256:" in made.out and "tls     sha256:" in made.out
    again = world.run("source", "init")
    assert again.code == 2 and "a source already" in again.err
    assert "followers pinned them" in again.err
    assert world.run("source", "init").err == again.err


def test_publish_then_revisions_and_show_in_json(world: World, profile: str) -> None:
    assert world.run("source", "init").code == 0
    published = world.run("source", "publish", profile, "--note", "first", "--json")
    assert published.code == 0, published.err
    data = published.json["data"]
    assert (published.json["schema"], data["seq"], data["resources"]) == ("trueup.cli/1", 1, 1)
    [row] = world.run("source", "revisions", "--json").json["data"]
    assert row["id"] == data["id"]
    shown = world.run("source", "show", "1", "--json").json["data"]
    assert shown["manifest"]["note"] == "first" and shown["manifest"]["seq"] == 1
    unknown = world.run("source", "show", "7")
    assert unknown.code == 2 and "no revision '7'" in unknown.err
    assert "trueup source revisions" in unknown.err


def test_invitations_are_bounded_to_a_day(world: World) -> None:
    assert world.run("source", "init").code == 0
    for too_long in ("25h", "0m"):
        refused = world.run("source", "invite", "--expires", too_long)
        assert refused.code == 2 and "at most 24h" in refused.err, too_long
    made = world.run("source", "invite", "--expires", "10m", "--group", "laptops")
    assert made.code == 0 and made.out.startswith("trueup-invite:")
    assert "single use, valid 10m" in made.err


def test_an_empty_fleet_and_an_unknown_follower(world: World) -> None:
    assert world.run("source", "init").code == 0
    for listing in ("followers", "status"):
        empty = world.run("source", listing, "--json")
        assert empty.code == 0 and empty.json["data"] == [], listing
        assert empty.json["message"] == "0 followers"
    refused = world.run("source", "revoke", "nobody")
    assert refused.code == 2 and "no follower named 'nobody'" in refused.err
    assert "trueup source followers" in refused.err
