"""One root, more than a profile's files: dotfiles managers' links, and two profiles.

A config file a dotfiles manager keeps in its folder (a symlink at the target)
is edited there when the resource names the folder (``follow_links``), and
refused with how to opt in otherwise. Two profiles declaring the same key of
one file: the first to apply keeps it, the other's plan is drift naming it,
and applying either again changes nothing (no ping-pong).
"""

from __future__ import annotations

import json
import os

from world import World

SETTINGS = '{\n  "theme": "dark",\n  "model": "sonnet"\n}\n'


def profile(pid: str, body: str) -> str:
    return f'[profile]\nid = "{pid}"\nname = "{pid.title()}"\n\n{body}'


def config(rid: str, keys: str, extra: str = "") -> str:
    return (
        f'[[resource]]\nid = "{rid}"\nkind = "config"\ntarget = ".claude/settings.json"\n'
        f"keys = {{ {keys} }}\n{extra}"
    )


def test_a_dotfiles_managers_link_is_edited_where_it_leads_once_allowed(world: World) -> None:
    repo = world.base / "dotfiles" / "claude"
    repo.mkdir(parents=True)
    real = repo / "settings.json"
    real.write_text(SETTINGS)
    (world.root / ".claude").mkdir()
    link = world.target(".claude/settings.json")
    link.symlink_to(os.path.relpath(real, link.parent))
    root = str(world.root)

    plain = str(world.write("plain.toml", profile("home", config("claude", 'model = "opus"'))))
    refused = world.run("plan", plain, "--root", root)
    assert refused.code == 4, refused.out + refused.err
    assert "follow_links" in refused.out
    assert real.read_text() == SETTINGS

    allowed = config(
        "claude", 'model = "opus"', f"follow_links = [{json.dumps(str(repo.parent))}]\n"
    )
    path = str(world.write("home.toml", profile("home", allowed)))
    done = world.run("apply", path, "--root", root, "--yes")
    assert done.code == 0, done.out + done.err
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(real, link.parent)
    assert real.read_text() == SETTINGS.replace('"sonnet"', '"opus"')
    again = world.run("plan", path, "--root", root, "--json")
    assert again.code == 0, again.err
    assert {a["type"] for a in again.json["data"]["plan"]["actions"]} == {"no-op"}


def test_two_profiles_on_one_key_drift_naming_the_first(world: World) -> None:
    root = str(world.root)
    (world.root / ".claude").mkdir()
    world.target(".claude/settings.json").write_text(SETTINGS)
    home = str(world.write("home.toml", profile("home", config("claude", 'model = "opus"'))))
    work = str(
        world.write(
            "work.toml", profile("work", config("agent", 'model = "haiku", effort = "high"'))
        )
    )
    assert world.run("apply", home, "--root", root, "--yes").code == 0

    second = world.run("apply", work, "--root", root, "--yes")
    assert second.code == 4, second.out + second.err
    assert "profile 'home'" in second.out + second.err
    assert json.loads(world.target(".claude/settings.json").read_text())["model"] == "opus"

    # No ping-pong: the first profile stays converged, the second stays drift.
    first = world.run("plan", home, "--root", root, "--json")
    assert first.code == 0, first.err
    assert {a["type"] for a in first.json["data"]["plan"]["actions"]} == {"no-op"}
    shown = world.run("plan", work, "--root", root)
    assert shown.code == 4 and "profile 'home'" in shown.out

    # Declared in one profile only, both converge.
    world.write("work.toml", profile("work", config("agent", 'effort = "high"')))
    assert world.run("apply", work, "--root", root, "--yes").code == 0
    assert json.loads(world.target(".claude/settings.json").read_text()) == {
        "theme": "dark",
        "model": "opus",
        "effort": "high",
    }
