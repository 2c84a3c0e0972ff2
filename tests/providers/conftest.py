"""Fake providers on loopback for the provider-client tests (one set per module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from trueup.testing import FakeProviders


@pytest.fixture(scope="module")
def running_fakes() -> Iterator[FakeProviders]:
    with FakeProviders() as fakes:
        yield fakes


@pytest.fixture
def fakes(running_fakes: FakeProviders) -> FakeProviders:
    """The module's fakes, emptied, with faults off and request logs cleared."""
    running_fakes.reset()
    return running_fakes
