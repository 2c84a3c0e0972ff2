"""The org engine in-process against fake providers on loopback, with a real SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from org_world import Orgs

from trueup.testing import FakeProviders
from trueup.testing.acme import seed_acme


@pytest.fixture(scope="module")
def running_fakes() -> Iterator[FakeProviders]:
    with FakeProviders() as fakes:
        yield fakes


@pytest.fixture
def fakes(running_fakes: FakeProviders) -> FakeProviders:
    seed_acme(running_fakes)
    return running_fakes


@pytest.fixture
def orgs(fakes: FakeProviders, tmp_path: Path, fresh_state: Any) -> Iterator[Orgs]:
    fresh_state.into(tmp_path / "data")
    world = Orgs(fakes, tmp_path)
    yield world
    world.close()
