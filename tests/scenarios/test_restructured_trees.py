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
EACH_KIND = pytest.mark.parametrize("kind", KINDS)
BOTH_WAYS = pytest.mark.parametrize(
    ("before", "after"), [(FOLDER, FILE), (FILE, FOLDER)], ids=["to-file", "to-folder"]
)


@EACH_KIND
@BOTH_WAYS
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


@EACH_KIND
@BOTH_WAYS
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


@pytest.mark.parametrize(
    ("before", "after", "edited", "why"),
    [
        (FOLDER, FILE, "x/mine.txt", "a folder is in the way at x"),  # a person's file in it
        (FILE, FOLDER, "x", "a file is where a folder should be at x"),  # trueup's, changed
    ],
    ids=["persons-file-in-the-folder", "trueups-file-changed"],
)
def test_what_a_person_wrote_in_the_way_keeps_it_a_conflict(
    world: World, before: dict[str, str], after: dict[str, str], edited: str, why: str
) -> None:
    profile = installed(world, "directory", before)
    world.target(f"t/{edited}").write_text("a person's notes\n")
    was = layout(world.target("t"))
    restructure(world, after)
    applied = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert applied.code == 4, applied.out + applied.err
    assert why in applied.out
    assert layout(world.target("t")) == was
