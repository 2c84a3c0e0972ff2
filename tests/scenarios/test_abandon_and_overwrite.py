"""`abandon` leaves nothing of a run behind, and `--overwrite` is offered only where it works."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from world import World

from trueup.fs import TEMP_MARK

PROFILE = """
[profile]
id = "left"
name = "Left"

[[resource]]
id = "a"
kind = "file"
target = "a.txt"
content = "declared a\\n"

[[resource]]
id = "deep"
kind = "file"
target = "new/deeper/b.txt"
content = "declared b\\n"

[[resource]]
id = "tree"
kind = "directory"
target = "tree"
source = "tree"
policy = "replace"
"""


def _temp_names(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob(f"*{TEMP_MARK}*"))


@pytest.mark.parametrize("boundary", ["temp-written", "journal-running"])
def test_abandon_removes_the_run_temp_files_when_its_material_is_gone(
    world: World, boundary: str
) -> None:
    world.write("tree/x.txt", "x\n")
    world.write("tree/sub/y.txt", "y\n")
    world.target("a.txt").write_text("mine\n")
    (world.root / "tree" / "sub").mkdir(parents=True)
    world.target("tree/sub/y.txt").write_text("old y\n")
    profile = str(world.write("left.toml", PROFILE))
    killed = world.run(
        "apply",
        profile,
        "--root",
        str(world.root),
        "--yes",
        "--confirm",
        "Left",
        env={"TRUEUP_CRASH_AT": f"{boundary}:1"},
    )
    assert killed.code == -9, killed.out + killed.err
    if boundary == "temp-written":
        assert _temp_names(world.root), "the run was killed with temp files written"
    shutil.rmtree(world.data / "rollback")  # cleaned by hand, or another TRUEUP_DATA

    abandoned = world.run("abandon")
    assert abandoned.code == 0, abandoned.out + abandoned.err
    assert _temp_names(world.root) == []
    assert world.target("a.txt").read_text() == "mine\n", "abandon changes no target"
    assert world.run("status", "--json").json["data"]["blocked_runs"] == []


APPEND = """
[profile]
id = "notes"
name = "Notes"

[[resource]]
id = "agents"
kind = "file"
target = "AGENTS.md"
content = "declared section\\n"
policy = "append-local"
"""
BEGIN = "<!-- trueup:begin agents -->\n"
END = "<!-- trueup:end agents -->\n"


@pytest.mark.parametrize(
    "broken",
    [
        "my notes\n" + BEGIN + "declared section\n",  # the end line removed
        BEGIN + "declared section\n" + END + "more\n" + END,  # an end line twice
        END + "declared section\n" + BEGIN,  # the wrong way round
    ],
)
def test_broken_markers_are_fixed_by_hand_and_overwrite_is_not_offered(
    world: World, broken: str
) -> None:
    profile = str(world.write("notes.toml", APPEND))
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    world.target("AGENTS.md").write_text(broken)

    planned = world.run("plan", profile, "--root", str(world.root))
    assert planned.code == 4, planned.out + planned.err
    assert "--overwrite agents" not in planned.out + planned.err
    assert "--overwrite cannot take over" in planned.out
    assert "section markers are broken" in planned.out and "fix them by hand" in planned.out
    as_json = world.run("plan", profile, "--root", str(world.root), "--json").json
    [drift] = [a for a in as_json["data"]["plan"]["actions"] if a["type"] == "drift-conflict"]
    assert drift["payload"].get("by_hand") is True

    forced = world.run(
        "apply", profile, "--root", str(world.root), "--yes", "--overwrite", "agents"
    )
    assert forced.code == 4, forced.out + forced.err
    assert "--overwrite agents" not in forced.out + forced.err
    assert world.target("AGENTS.md").read_text() == broken, "left exactly as it is"


def test_markers_removed_are_put_back_by_the_overwrite_offered(world: World) -> None:
    profile = str(world.write("notes.toml", APPEND))
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    world.target("AGENTS.md").write_text("my own notes only\n")

    planned = world.run("plan", profile, "--root", str(world.root))
    assert planned.code == 4, planned.out + planned.err
    assert "--overwrite agents" in planned.out
    forced = world.run(
        "apply", profile, "--root", str(world.root), "--yes", "--overwrite", "agents"
    )
    assert forced.code == 0, forced.out + forced.err
    assert world.target("AGENTS.md").read_text() == (
        BEGIN + "declared section\n" + END + "my own notes only\n"
    )
    assert world.run("plan", profile, "--root", str(world.root)).code == 0
