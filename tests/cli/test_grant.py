"""``trueup grant``: who may plan, apply or administer which targets."""

from __future__ import annotations

from world import World

from trueup import authz

ME = authz.os_actor().key


def test_grants_are_added_listed_and_removed(world: World) -> None:
    added = world.run("grant", "add", ME, "admin", "*")
    assert added.code == 0, added.err
    assert world.run("grant", "add", "service:ci", "apply", "profile:*").code == 0
    listed = world.run("grant", "list", "--json").json["data"]
    assert len(listed) == 2
    removed = world.run("grant", "remove", "service:ci", "apply", "profile:*")
    assert removed.code == 0, removed.err
    assert len(world.run("grant", "list", "--json").json["data"]) == 1


def test_once_grants_exist_an_actor_without_one_is_refused(world: World, profile: str) -> None:
    assert world.run("grant", "add", ME, "admin", "*").code == 0
    refused = world.run("--actor", "service:nobody", "plan", profile, "--root", str(world.root))
    assert refused.code != 0
    assert not world.target("x").exists()


def test_an_actor_no_grant_or_token_names_is_refused(world: World, profile: str) -> None:
    root = str(world.root)
    refused = world.run("--actor", "service:typo", "plan", profile, "--root", root)
    assert refused.code == 5, refused.out + refused.err
    assert "no grant or token names this service" in refused.err
    assert f"trueup grant add {ME} admin '*'" in refused.err, "the first grant turns checks on"
    status = world.run("--actor", "service:typo", "status", "--json")
    assert status.code == 5 and status.json["status"] == "error"
    assert world.run("grant", "add", ME, "admin", "*").code == 0
    assert world.run("grant", "add", "service:ci", "apply", "profile:*").code == 0
    named = world.run("--actor", "service:ci", "apply", profile, "--root", root, "--yes")
    assert named.code == 0, named.err
    assert world.run("--actor", "service:typo", "status").code == 5
