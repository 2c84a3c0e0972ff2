"""Settings from the environment: a bad value is a usage error naming the variable."""

from __future__ import annotations

import pytest

from trueup.errors import UsageError
from trueup.settings import DEFAULT_BATCH_SIZE, Settings


@pytest.mark.parametrize("value", ["abc", "0", "-3", "1.5"])
def test_a_batch_size_that_is_not_a_positive_whole_number_is_named(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("TRUEUP_BATCH_SIZE", value)
    with pytest.raises(UsageError, match=f"TRUEUP_BATCH_SIZE='{value}' is not a whole number"):
        Settings.from_env()


def test_the_batch_size_defaults_and_can_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUEUP_BATCH_SIZE", raising=False)
    assert Settings.from_env().batch_size == DEFAULT_BATCH_SIZE
    monkeypatch.setenv("TRUEUP_BATCH_SIZE", "7")
    assert Settings.from_env().batch_size == 7
