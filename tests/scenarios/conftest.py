"""Each end-to-end test gets its own world: a root, a profile folder, a state store.

The org scenarios share one set of fake providers per module and, unless a
module seeds more, an org whose fakes hold only the zone and the founders'
verified address.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_org_lifecycle import OrgWorld
from world import World

from trueup.testing import FakeProviders


@pytest.fixture
def world(tmp_path: Path, fresh_state: object) -> World:
    w = World(tmp_path, tmp_path / "root", tmp_path / "profiles", tmp_path / "data")
    for folder in (w.root, w.profiles):
        folder.mkdir()
    fresh_state.into(w.data)  # type: ignore[attr-defined]
    return w


@pytest.fixture(scope="module")
def running_fakes() -> Iterator[FakeProviders]:
    """The fake providers, started once per module: starting them is slow."""
    with FakeProviders() as fakes:
        yield fakes


@pytest.fixture
def org(world: World, running_fakes: FakeProviders) -> OrgWorld:
    """A bare org: the fakes reset to one zone and the founders' verified address."""
    running_fakes.reset()
    running_fakes.cloudflare.add_zone("acme.test")
    running_fakes.cloudflare.add_address("founders@example.com", verified=True)
    return OrgWorld(world, running_fakes)
