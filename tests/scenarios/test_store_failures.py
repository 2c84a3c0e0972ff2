"""A state store that cannot be used is named, with what to do, and exits 6.

Read-only, full, locked by another process, damaged: never "internal error",
never a traceback, and nothing is changed. A plan needs nothing written, so it
works against a read-only store. A data folder that cannot be made is
configuration (exit 2), named as such.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from world import ONE_FILE, TRUEUP, Result, World


def unusable(result: Result, *named: str, code: int = 6) -> None:
    assert result.code == code, (result.code, result.err)
    assert "internal error" not in result.err and "Traceback" not in result.err
    for text in named:
        assert text in result.err, result.err


@pytest.fixture
def read_only() -> Iterator[object]:
    """Make a file or folder read-only for trueup, as root too (``chattr +i``)."""
    made: list[Path] = []

    def make(path: Path) -> None:
        if os.geteuid() != 0:
            path.chmod(0o555 if path.is_dir() else 0o444)
        elif subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
            pytest.skip("root ignores file modes, and this file system has no immutable flag")
        made.append(path)

    yield make
    for path in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o755 if path.is_dir() else 0o644)


def applied_once(world: World) -> tuple[str, Path]:
    profile = str(world.write("p.toml", ONE_FILE))
    done = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert done.code == 0, done.err
    target = world.target("x")
    target.write_text("changed by hand\n")
    # Fold the write-ahead log into the store and drop it, as a last clean close does.
    with closing(sqlite3.connect(world.data / "state.db")) as store:
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return profile, target


@pytest.mark.parametrize("what", ["file", "folder"])
def test_plan_works_against_a_read_only_store_and_apply_says_why_it_cannot(
    world: World, read_only: object, what: str
) -> None:
    profile, target = applied_once(world)
    store = world.data / "state.db"
    assert not Path(f"{store}-wal").exists()
    read_only(store if what == "file" else world.data)  # type: ignore[operator]

    planned = world.run("plan", profile, "--root", str(world.root))
    assert planned.code == 0, planned.err
    assert "update file" in planned.out and "state store is read-only" in planned.out
    status = world.run("status")
    assert status.code == 0, status.err

    refused = world.run("apply", profile, "--root", str(world.root), "--yes", "--overwrite", "a")
    unusable(refused, f"the state store {store} cannot be used")
    assert "read-only" in refused.err or "cannot be opened" in refused.err
    assert target.read_text() == "changed by hand\n"


def test_a_store_locked_by_another_process_past_the_timeout_is_named(world: World) -> None:
    profile, target = applied_once(world)
    store = world.data / "state.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('PRAGMA locking_mode=EXCLUSIVE')\n"
            "c.execute('BEGIN EXCLUSIVE')\n"
            "c.execute('DELETE FROM stat_cache')\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n",
            str(store),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        fast = {"TRUEUP_STATE_TIMEOUT": "0.5"}
        for args in (["plan", profile, "--root", str(world.root)], ["status"]):
            unusable(world.run(*args, env=fast), f"the state store {store}", "locked")
        applied = world.run("apply", profile, "--root", str(world.root), "--yes", env=fast)
        unusable(applied, "another process holds it locked", "TRUEUP_STATE_TIMEOUT")
    finally:
        holder.kill()
        holder.wait()
    assert target.read_text() == "changed by hand\n"
    assert world.run("status").code == 0  # released: the store answers again


@pytest.mark.parametrize("where", [0, 16384], ids=["header", "pages"])
def test_a_damaged_store_is_named_with_what_to_do(world: World, where: int) -> None:
    profile, _ = applied_once(world)
    store = world.data / "state.db"
    with open(store, "r+b") as handle:
        handle.seek(where)
        handle.write(os.urandom(store.stat().st_size - where))
    for args in (["plan", profile, "--root", str(world.root)], ["status"]):
        result = world.run(*args)
        unusable(result, f"the state store {store} cannot be used", "backup")


def test_a_store_that_may_not_grow_is_named_not_called_a_bug(world: World) -> None:
    """A full disk, as the file-size limit a process may be given (``ulimit -f``) makes it."""
    world.write("p.toml", ONE_FILE)
    assert world.run("status").code == 0  # the store exists, small
    many = "".join(
        f'[[resource]]\nid = "r{i}"\nkind = "file"\ntarget = "d/f{i}"\ncontent = "{i}"\n'
        for i in range(2000)
    )
    profile = world.write("many.toml", '[profile]\nid = "m"\nname = "M"\n' + many)
    limit = (world.data / "state.db").stat().st_size + 64 * 1024

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [TRUEUP, "apply", str(profile), "--root", str(world.root), "--yes"],
        capture_output=True,
        text=True,
        env=world.env(),
        cwd=world.base,
        preexec_fn=small_files,
        timeout=120,
    )
    result = Result(done.returncode, done.stdout, done.stderr)
    unusable(result, f"the state store {world.data / 'state.db'} ")
    assert "may not grow" in result.err or "full" in result.err


@pytest.mark.parametrize("how", ["under-a-file", "read-only-parent"])
def test_a_data_folder_that_cannot_be_made_names_the_store(
    world: World, read_only: object, how: str
) -> None:
    parent = world.base / "parent"
    if how == "under-a-file":
        parent.write_text("")
    else:
        parent.mkdir()
        read_only(parent)  # type: ignore[operator]
    data = parent / "data"
    result = world.run("status", env={"TRUEUP_DATA": str(data)})
    unusable(result, f"the data folder {data} cannot be created", "state store", code=2)
    assert "TRUEUP_DATA" in result.err
