"""A config edited through a dotfiles manager's link (``follow_links``), killed mid-apply.

The file the link leads to lies outside the root. ``trueup recover``, in a
process of its own, puts it back through the allowed folder's descriptors, as
the run would have: a folder in there swapped for a link out of it since the
crash is refused (exit 7), and nothing is written where that link leads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from world import World

SETTINGS = '{\n  "theme": "dark",\n  "model": "sonnet"\n}\n'


def linked_profile(world: World) -> tuple[Path, Path]:
    """``~/.claude/settings.json`` links into ``dotfiles/claude``, beside the root."""
    real = world.base / "dotfiles" / "claude" / "settings.json"
    real.parent.mkdir(parents=True)
    real.write_text(SETTINGS)
    link = world.target(".claude/settings.json")
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(real, link.parent))
    folder = json.dumps(str(world.base / "dotfiles"))
    profile = world.write(
        "claude.toml",
        '[profile]\nid = "dot"\nname = "Dot"\n\n[[resource]]\nid = "claude"\nkind = "config"\n'
        f'target = ".claude/settings.json"\nkeys = {{ model = "opus" }}\nfollow_links = [{folder}]\n',
    )
    return profile, real


def killed_mid_apply(world: World, profile: Path, real: Path) -> None:
    result = world.run(
        "apply", str(profile), "--root", str(world.root), "--yes",
        env={"TRUEUP_CRASH_AT": "mutated"},
    )  # fmt: skip
    assert result.code == -9, result.err
    assert json.loads(real.read_text())["model"] == "opus", "killed once the edit landed"


def test_recover_restores_the_file_a_followed_link_leads_to(world: World) -> None:
    profile, real = linked_profile(world)
    killed_mid_apply(world, profile, real)
    profile.unlink()  # nothing to redo: what recover leaves is what it restored
    recovered = world.run("recover")
    assert recovered.code == 3, recovered.out + recovered.err
    assert real.read_text() == SETTINGS
    assert world.target(".claude/settings.json").is_symlink()
    assert [p.name for p in real.parent.iterdir()] == ["settings.json"], "no temp file left"


def test_recover_redoes_the_edit_through_the_link(world: World) -> None:
    profile, real = linked_profile(world)
    killed_mid_apply(world, profile, real)
    recovered = world.run("recover")
    assert recovered.code == 0, recovered.out + recovered.err
    assert json.loads(real.read_text()) == {"theme": "dark", "model": "opus"}
    assert world.run("plan", str(profile), "--root", str(world.root)).code == 0


def test_a_folder_swapped_for_a_link_out_of_the_allowed_folder_is_refused(world: World) -> None:
    profile, real = linked_profile(world)
    killed_mid_apply(world, profile, real)
    elsewhere = world.base / "elsewhere"
    elsewhere.mkdir()
    real.parent.rename(elsewhere / "claude")  # dotfiles/claude -> a link out of dotfiles
    real.parent.symlink_to(elsewhere / "claude")
    edited = (elsewhere / "claude" / "settings.json").read_text()
    recovered = world.run("recover")
    assert recovered.code == 7, recovered.out + recovered.err
    assert "dotfiles/claude: a symlink on the way leads to" in recovered.err, recovered.err
    assert (elsewhere / "claude" / "settings.json").read_text() == edited, "nothing written there"
    assert sorted(os.listdir(elsewhere / "claude")) == ["settings.json"]
