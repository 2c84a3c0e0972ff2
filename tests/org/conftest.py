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


@pytest.fixture(autouse=True)
def no_keyring() -> Iterator[None]:
    """Secrets go to trueup's 0600 files here, whatever keyring another test left set."""
    import keyring
    from keyring.backends import fail

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def orgs(fakes: FakeProviders, tmp_path: Path, fresh_state: Any) -> Iterator[Orgs]:
    fresh_state.into(tmp_path / "data")
    world = Orgs(fakes, tmp_path)
    yield world
    world.close()
