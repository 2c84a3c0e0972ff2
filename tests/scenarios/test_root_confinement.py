"""Nothing an apply does lands outside --root, even when a folder above a target is
swapped for a symlink while the run is under way."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from world import TRUEUP, World

from trueup.crashpoints import BOUNDARIES

PROFILE = """
[profile]
id = "p"
name = "P"

[[resource]]
id = "first"
kind = "file"
target = "c/first.txt"
content = "staged before the swap\\n"

[[resource]]
id = "note"
kind = "file"
target = "a/b/note.txt"
content = "hello\\n"

[[resource]]
id = "conf"
kind = "config"
target = "c/conf.toml"
keys = { model = "gpt-5" }

[[resource]]
id = "skill"
kind = "skill"
target = "c/skills/review"
source = "skill"
"""

# Before the batch's renames: the swap is seen and the run fails.
BEFORE_COMMIT = (
    "journal-pending",
    "rollback-flushed",
    "journal-running",
    "temp-created",
    "outcomes-noted",
)


def setup(world: World) -> tuple[str, Path]:
    world.write("skill/SKILL.md", "# review\n")
    world.write("skill/tools/run.sh", "echo run\n")
    path = str(world.write("p.toml", PROFILE))
    (world.root / "a" / "b").mkdir(parents=True)
    (world.root / "a" / "mine.txt").write_text("a person's file\n")
    (world.root / "c").mkdir()
    outside = world.base / "outside"
    (outside / "b").mkdir(parents=True)
    return path, outside


def everything_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] == "T"


def swap_for_link(folder: Path, outside: Path) -> None:
    """What an attacker does: the folder moves aside, a link to elsewhere takes its place."""
    folder.rename(folder.with_name(folder.name + ".moved"))
    folder.symlink_to(outside, target_is_directory=True)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see a stop")
@pytest.mark.parametrize("boundary", [b for b in BOUNDARIES if b != "run-started"])
def test_a_parent_swapped_for_a_symlink_at_any_step_gets_nothing_written_outside(
    world: World, boundary: str
) -> None:
    path, outside = setup(world)
    env = world.env({"TRUEUP_CRASH_AT": f"{boundary}:1:SIGSTOP"})
    args = [TRUEUP, "apply", path, "--root", str(world.root), "--yes"]
    process = subprocess.Popen(
        args,
        env=env,
        cwd=world.base,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while process.poll() is None and not stopped(process.pid):
        assert time.monotonic() < deadline, f"never reached {boundary}"
        time.sleep(0.01)
    reached = process.poll() is None
    swap_for_link(world.root / "a", outside)
    if reached:
        process.send_signal(signal.SIGCONT)
    out, err = process.communicate(timeout=120)
    assert everything_in(outside) == ["b"], "nothing lands outside the root"
    assert "Traceback" not in err
    if reached and boundary in BEFORE_COMMIT:
        assert process.returncode == 7, out + err
        assert "outside the root" in err + out, out + err
        # Every change of the run stayed in the folder that was moved aside: none at all.
        moved = world.root / "a.moved"
        assert everything_in(moved) == ["b", "mine.txt"], everything_in(moved)
    else:
        assert process.returncode in (0, 7), out + err


def test_a_folder_flipping_between_itself_and_a_link_out_never_lets_a_write_escape(
    world: World,
) -> None:
    path, outside = setup(world)
    folder, aside = world.root / "a", world.root / "a.real"
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            folder.rename(aside)
            folder.symlink_to(outside, target_is_directory=True)
            time.sleep(0.0005)
            folder.unlink()
            aside.rename(folder)
            time.sleep(0.0005)

    flipper = threading.Thread(target=flip)
    flipper.start()
    codes = []
    try:
        for _ in range(6):
            done = world.run("apply", path, "--root", str(world.root), "--yes")
            assert "Traceback" not in done.err, done.err
            codes.append(done.code)
            if done.code == 7 and "recover" in done.err + done.out:
                world.run("abandon")
    finally:
        stop.set()
        flipper.join()
    assert everything_in(outside) == ["b"], "nothing lands outside the root"
    assert set(codes) <= {0, 2, 4, 7}, codes
