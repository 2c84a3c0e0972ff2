"""A target trueup may not read is drift for that resource, not an error for the profile."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from world import TRUEUP, World

PROFILE = """
[profile]
id = "p"
name = "P"

[[resource]]
id = "locked-file"
kind = "file"
target = "locked.txt"
content = "declared\\n"

[[resource]]
id = "locked-config"
kind = "config"
target = "locked/config.toml"
keys = { model = "gpt-5" }

[[resource]]
id = "locked-skill"
kind = "skill"
target = "skills/locked"
source = "skill"

[[resource]]
id = "open"
kind = "file"
target = "open.txt"
content = "fine\\n"
"""

NOBODY = 65534
AS_ROOT = os.geteuid() == 0


@pytest.fixture
def world() -> Iterator[World]:
    """A world somebody other than root can use: as root, trueup runs as nobody, and
    root's own files stay out of its reach (root reads everything)."""
    if AS_ROOT and shutil.which("setpriv") is None:
        pytest.skip("running as root needs setpriv to run trueup as another user")
    base = Path(tempfile.mkdtemp(prefix="trueup-unreadable-"))
    base.chmod(0o755)
    w = World(base, base / "root", base / "profiles", base / "data")
    for folder in (w.root, w.profiles, w.data):
        folder.mkdir()
    yield w
    shutil.rmtree(base, ignore_errors=True)


def run_as_user(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    prefix = []
    if AS_ROOT:
        for path in [world.base, *world.base.rglob("*")]:
            if path.name not in ("locked.txt", "locked", "skills"):
                os.lchown(path, NOBODY, NOBODY)
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return world.call([*prefix, TRUEUP, *args])


def test_targets_trueup_may_not_read_are_drift_and_the_rest_is_applied(world: World) -> None:
    world.write("skill/SKILL.md", "# locked\n")
    path = str(world.write("p.toml", PROFILE))
    locked = world.root / "locked.txt"
    locked.write_text("somebody's\n")
    (world.root / "locked").mkdir()
    (world.root / "locked" / "config.toml").write_text('model = "o3"\n')
    (world.root / "skills" / "locked").mkdir(parents=True)
    (world.root / "skills" / "locked" / "SKILL.md").write_text("theirs\n")
    locked.chmod(0o000)
    (world.root / "locked").chmod(0o000)
    (world.root / "skills" / "locked").chmod(0o000)

    planned = run_as_user(world, "plan", path, "--root", str(world.root))
    assert planned.returncode == 4, planned.stdout + planned.stderr
    assert "Traceback" not in planned.stderr and "internal error" not in planned.stderr
    for rid in ("locked-file", "locked-config", "locked-skill"):
        assert rid in planned.stdout
    assert planned.stdout.count("Permission denied") >= 3, planned.stdout
    assert "give your user access to it" in planned.stdout

    applied = run_as_user(world, "apply", path, "--root", str(world.root), "--yes")
    assert applied.returncode == 4, applied.stdout + applied.stderr
    assert (world.root / "open.txt").read_text() == "fine\n"
    locked.chmod(0o600)
    assert locked.read_text() == "somebody's\n", "left exactly as it is"
