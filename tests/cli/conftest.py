"""Every command through the installed ``trueup``, in a world of its own (see
tests/scenarios/world.py): its own data directory, root and profile folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "scenarios"))

from world import ONE_FILE, World


@pytest.fixture
def world(tmp_path: Path, fresh_state: object) -> World:
    w = World(tmp_path, tmp_path / "root", tmp_path / "profiles", tmp_path / "data")
    for folder in (w.root, w.profiles):
        folder.mkdir()
    fresh_state.into(w.data)  # type: ignore[attr-defined]
    return w


@pytest.fixture
def profile(world: World) -> str:
    """The smallest profile (file ``a`` at ``x``, content ``c``), written in the world."""
    return str(world.write("p.toml", ONE_FILE))
