"""A source folder restructured upstream: a folder of trueup's files becomes a file, or
a file of trueup's becomes a folder, in one apply of a directory or skill resource.

What trueup wrote and nobody changed since is in nobody's way; a run that fails puts
the old layout back exactly, and anything a person put there still stops the run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from world import World

PROFILE = """
[profile]
id = "r"
name = "R"

[[resource]]
id = "tree"
kind = "{kind}"
target = "t"
source = "src"
{verify}
"""
FAILS = 'verify = { command = ["false"] }'
KINDS = ["directory", "skill"]


def layout(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder``: a file's text, a folder as "/"."""
    return {
        str(path.relative_to(folder)): "/" if path.is_dir() else path.read_text()
        for path in sorted(folder.rglob("*"))
    }


def installed(world: World, kind: str, files: dict[str, str]) -> str:
    """A tree of ``files`` installed by a first apply; the profile's path."""
    for rel, text in files.items():
        world.write(f"src/{rel}", text)
    profile = str(world.write("r.toml", PROFILE.format(kind=kind, verify="")))
    first = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert first.code == 0, first.out + first.err
    return profile


def restructure(world: World, files: dict[str, str], verify: str = "", kind: str = "") -> None:
    shutil.rmtree(world.profiles / "src")
    for rel, text in files.items():
        world.write(f"src/{rel}", text)
    if verify:
        world.write("r.toml", PROFILE.format(kind=kind, verify=verify))


FOLDER = {"x/y.txt": "y\n", "x/deep/z.txt": "z\n", "keep.txt": "k\n"}
FILE = {"x": "x is a file now\n", "keep.txt": "k\n"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("before", "after"), [(FOLDER, FILE), (FILE, FOLDER)], ids=["to-file", "to-folder"]
)
def test_a_restructured_source_is_installed_in_one_apply(
    world: World, kind: str, before: dict[str, str], after: dict[str, str]
) -> None:
    profile = installed(world, kind, before)
    restructure(world, after)
    applied = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert applied.code == 0, applied.out + applied.err
    assert layout(world.target("t")) == layout(world.profiles / "src")
    again = world.run("plan", profile, "--root", str(world.root), "--json")
    assert again.code == 0 and again.json["status"] == "converged", again.out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("before", "after"), [(FOLDER, FILE), (FILE, FOLDER)], ids=["to-file", "to-folder"]
)
def test_a_restructure_that_fails_verification_puts_the_old_layout_back_exactly(
    world: World, kind: str, before: dict[str, str], after: dict[str, str]
) -> None:
    profile = installed(world, kind, before)
    was = layout(world.target("t"))
    restructure(world, after, FAILS, kind)
    applied = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert applied.code == 7, applied.out + applied.err
    assert "every change of this run was restored" in applied.out
    assert layout(world.target("t")) == was
    restructure(world, after, "# verified by digest only", kind)
    retried = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert retried.code == 0, retried.out + retried.err
    assert layout(world.target("t")) == layout(world.profiles / "src")


def test_a_persons_file_in_the_folder_in_the_way_keeps_it_a_conflict(world: World) -> None:
    profile = installed(world, "directory", FOLDER)
    world.target("t/x/mine.txt").write_text("a person's notes\n")
    restructure(world, FILE)
    applied = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert applied.code == 4, applied.out + applied.err
    assert "a folder is in the way at x" in applied.out
    assert world.target("t/x/mine.txt").read_text() == "a person's notes\n"
    assert world.target("t/x/y.txt").read_text() == "y\n"


def test_a_file_of_trueups_changed_since_keeps_it_a_conflict(world: World) -> None:
    profile = installed(world, "directory", FILE)
    world.target("t/x").write_text("edited by hand\n")
    restructure(world, FOLDER)
    applied = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert applied.code == 4, applied.out + applied.err
    assert "a file is where a folder should be at x" in applied.out
    assert world.target("t/x").read_text() == "edited by hand\n"
