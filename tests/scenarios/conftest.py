"""Each end-to-end test gets its own world: a root, a profile folder, a state store."""

from __future__ import annotations

from pathlib import Path

import pytest
from world import World


@pytest.fixture
def world(tmp_path: Path, fresh_state: object) -> World:
    w = World(tmp_path, tmp_path / "root", tmp_path / "profiles", tmp_path / "data")
    for folder in (w.root, w.profiles):
        folder.mkdir()
    fresh_state.into(w.data)  # type: ignore[attr-defined]
    return w
