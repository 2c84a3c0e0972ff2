"""What trueup keeps is its owner's alone, whatever the umask.

The data folder holds the state store, copies of the files trueup replaced
(anybody's notes or keys) and caches of validated profiles and plans: on a
shared machine none of it is for other users to read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from world import World

PROFILE = """
[profile]
id = "p"
name = "P"

[[resource]]
id = "notes"
kind = "file"
target = "notes.txt"
content = "declared\\n"

[[resource]]
id = "key"
kind = "file"
target = "key.txt"
content = "declared key\\n"
"""


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The widest umask: every mode below is trueup's own doing, none the umask's."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_the_data_folder_and_all_it_holds_are_private(world: World, open_umask: None) -> None:
    data = world.base / "home" / ".local" / "share" / "trueup"
    env = {"TRUEUP_DATA": str(data)}
    world.target("notes.txt").write_text("my notes\n")
    world.target("notes.txt").chmod(0o644)
    world.target("key.txt").write_text("my key\n")
    world.target("key.txt").chmod(0o400)
    profile = str(world.write("p.toml", PROFILE))
    assert world.run("plan", profile, "--root", str(world.root), env=env).code == 0
    killed = world.run(
        "apply",
        profile,
        "--root",
        str(world.root),
        "--yes",
        "--confirm",
        "P",
        env={**env, "TRUEUP_CRASH_AT": "journal-running"},
    )
    assert killed.code == -9, killed.out + killed.err

    for folder in (world.base / "home", data.parent.parent, data.parent, data):
        assert _mode(folder) == 0o700, folder
    files = [p for p in data.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"state.db", "state.db-wal", "state.db-shm"} <= names, names
    assert any(p.parent.name == "profiles" for p in files), "the validated profile is cached"
    assert any(p.parent.name == "blobs" for p in files), "rollback copies were kept"
    for path in files:
        expected = 0o600
        if path.parent.name == "blobs" and path.read_bytes() == b"my key\n":
            expected = 0o400  # no more than the file it is a copy of
        assert _mode(path) == expected, path
    for folder in (p for p in data.rglob("*") if p.is_dir()):
        assert _mode(folder) == 0o700, folder

    recovered = world.run("recover", env=env)
    assert recovered.code == 0, recovered.out + recovered.err
    assert world.target("notes.txt").read_text() == "declared\n"


def test_an_explicit_store_is_private_too_and_an_old_wide_one_is_narrowed(
    world: World, open_umask: None
) -> None:
    folder = world.base / "stores"
    folder.mkdir()
    store = folder / "team.db"
    url = f"sqlite:///{store}"
    profile = str(world.write("p.toml", PROFILE))
    assert world.run("plan", profile, "--root", str(world.root), "--state", url).code == 0
    assert _mode(store) == 0o600
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{store}{suffix}")
        if companion.exists():
            assert _mode(companion) == 0o600
            companion.chmod(0o644)
    store.chmod(0o644)  # as a trueup before this one left it
    assert world.run("status", "--state", url).code == 0
    for path in folder.iterdir():
        assert _mode(path) == 0o600, path
