"""Each kind test gets a machine: a real engine on a temp root and store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from machine import Machine

from trueup.engine import Engine
from trueup.settings import Settings


@pytest.fixture
def machine(tmp_path: Path, fresh_state: object) -> Iterator[Machine]:
    root = tmp_path / "root"
    root.mkdir()
    fresh_state.into(tmp_path / "data")  # type: ignore[attr-defined]
    settings = Settings(
        data=tmp_path / "data", state_url=f"sqlite:///{tmp_path / 'data' / 'state.db'}", actor="t"
    )
    engine = Engine(settings)
    yield Machine(tmp_path, root, engine)
    engine.close()
