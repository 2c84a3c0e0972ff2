"""A profile reads sources only from its own folder, unless it names others.

A profile is often somebody else's: one that could say ``source =
"/home/me/.ssh/id_ed25519"``, or hold a skill with a link to ``~/.aws``, would
copy a secret into a target (or into a published revision).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from world import World

PROFILE = """
[profile]
id = "p"
name = "P"
{extra}

[[resource]]
id = "r"
kind = "{kind}"
target = "{target}"
source = "{source}"
"""


@pytest.fixture
def outside(world: World) -> Path:
    """A folder beside the profiles' one, holding a file somebody would rather keep."""
    folder = world.base / "outside"
    (folder / "tree").mkdir(parents=True)
    (folder / "secret.txt").write_text("the secret\n")
    (folder / "tree" / "s.txt").write_text("the secret\n")
    return folder


def _profile(world: World, source: str, kind: str = "file", extra: str = "") -> Path:
    text = PROFILE.format(extra=extra, kind=kind, target=f"t-{kind}", source=source)
    return world.write("p.toml", text)


@pytest.mark.parametrize("how", ["dotdot", "absolute", "linked-file", "linked-folder"])
def test_a_source_outside_the_profile_folder_is_refused_at_load(
    world: World, outside: Path, how: str
) -> None:
    source = {
        "dotdot": "../outside/secret.txt",
        "absolute": str(outside / "secret.txt"),
        "linked-file": "files/note.txt",
        "linked-folder": "linked/secret.txt",
    }[how]
    (world.profiles / "files").mkdir()
    (world.profiles / "files" / "note.txt").symlink_to(outside / "secret.txt")
    (world.profiles / "linked").symlink_to(outside)
    profile = _profile(world, source)
    for command in (["plan"], ["apply", "--yes"]):
        done = world.run(*command, str(profile), "--root", str(world.root))
        assert done.code == 2, done
        assert f"{profile}: resource 'r': field 'source': {source!r} is outside" in done.err
        assert str(outside / "secret.txt") in done.err
        assert f'allow_sources_outside = ["{outside}"]' in done.err
    assert not world.target("t-file").exists()


def test_a_link_in_a_source_tree_leading_outside_is_refused(world: World, outside: Path) -> None:
    skill = world.profiles / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("a skill\n")
    (skill / "creds").symlink_to("../../outside/secret.txt")
    done = world.run("plan", str(_profile(world, "skill", kind="skill")), "--root", str(world.root))
    assert done.code == 2, done
    assert "resource 'r': field 'source': 'skill' holds a symlink" in done.err
    assert "creds -> ../../outside/secret.txt" in done.err
    assert "allow_sources_outside" in done.err


def test_a_link_in_a_source_tree_leading_inside_the_profile_folder_is_fine(world: World) -> None:
    skill = world.profiles / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("a skill\n")
    (skill / "same").symlink_to("SKILL.md")
    (skill / "up").symlink_to("../p.toml")
    profile = _profile(world, "skill", kind="skill")
    done = world.run("apply", str(profile), "--root", str(world.root), "--yes")
    assert done.code == 0, done
    assert os.readlink(world.target("t-skill/same")) == "SKILL.md"


@pytest.mark.parametrize("named", ["../outside", "{outside}"])
def test_a_profile_reads_from_the_folders_it_names(world: World, outside: Path, named: str) -> None:
    extra = f'allow_sources_outside = ["{named.format(outside=outside)}"]'
    text = _profile(world, "../outside/secret.txt", extra=extra).read_text()
    text += f'[[resource]]\nid = "d"\nkind = "directory"\ntarget = "d"\nsource = "{outside}/tree"\n'
    profile = world.write("p.toml", text)
    done = world.run("apply", str(profile), "--root", str(world.root), "--yes")
    assert done.code == 0, done
    assert world.target("t-file").read_text() == "the secret\n"
    assert world.target("d/s.txt").read_text() == "the secret\n"


def test_a_folder_named_is_not_a_prefix_of_its_siblings(world: World, outside: Path) -> None:
    sibling = world.base / "outside-too"
    sibling.mkdir()
    (sibling / "x").write_text("x\n")
    profile = _profile(world, "../outside-too/x", extra='allow_sources_outside = ["../outside"]')
    done = world.run("plan", str(profile), "--root", str(world.root))
    assert done.code == 2, done
    assert "or the folders it allows (../outside)" in done.err


def test_a_folder_turned_into_a_link_outside_is_refused_on_the_next_load(
    world: World, outside: Path
) -> None:
    """The validated profile is cached, but where its sources are is checked on every load."""
    (world.profiles / "files").mkdir()
    (world.profiles / "files" / "secret.txt").write_text("mine\n")
    profile = _profile(world, "files/secret.txt")
    assert world.run("plan", str(profile), "--root", str(world.root)).code == 0
    (world.profiles / "files" / "secret.txt").unlink()
    (world.profiles / "files").rmdir()
    (world.profiles / "files").symlink_to(outside)
    done = world.run("plan", str(profile), "--root", str(world.root))
    assert done.code == 2, done
    assert "is outside the profile's folder" in done.err


@pytest.mark.parametrize(
    ("value", "words"),
    [('"../x"', "allow_sources_outside"), ('[""]', "allow_sources_outside.0")],
)
def test_the_folders_allowed_are_a_list_of_paths(world: World, value: str, words: str) -> None:
    (world.profiles / "a.txt").write_text("a\n")
    profile = _profile(world, "a.txt", extra=f"allow_sources_outside = {value}")
    done = world.run("plan", str(profile), "--root", str(world.root))
    assert done.code == 2, done
    assert "[profile]" in done.err and words in done.err
