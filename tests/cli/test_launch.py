"""The console script: an apply of a big profile has its sources read ahead before
the CLI is imported, and nothing else changes what the command does."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from trueup.cli.launch import EARLY_PROFILE_BYTES, start_reading
from trueup.readahead import stop_early, take_early

pytestmark = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="a read-ahead is only started with two cores"
)


@pytest.fixture(autouse=True)
def no_early_left() -> Iterator[None]:
    yield
    stop_early()


@pytest.fixture
def big(tmp_path: Path) -> Path:
    profile = tmp_path / "big.json"
    profile.write_text('{"resource": []}' + " " * EARLY_PROFILE_BYTES)
    return profile


def started(profile: Path) -> bool:
    return take_early(os.path.abspath(profile)) is not None


def test_an_apply_of_a_big_profile_has_it_read_ahead(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(big.parent)  # named relative: found by its absolute path
    start_reading(["apply", "--yes", "--root", "/tmp/x", "big.json"])
    assert started(big)


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "{big}"],  # a plan is quick to repeat: only an apply's first run pays
        ["org", "apply", "{big}"],
        ["apply", "{small}"],
        ["apply", "{yaml}"],
        ["apply", "{missing}"],
        ["apply", "{folder}"],
        ["apply", "--help"],
    ],
)
def test_anything_else_starts_nothing(tmp_path: Path, big: Path, args: list[str]) -> None:
    (tmp_path / "small.json").write_text('{"resource": []}')
    (tmp_path / "p.yaml").write_text(big.read_text())
    (tmp_path / "d.json").mkdir()
    names = {
        "big": big,
        "small": tmp_path / "small.json",
        "yaml": tmp_path / "p.yaml",
        "missing": tmp_path / "gone.json",
        "folder": tmp_path / "d.json",
    }
    start_reading([arg.format(**names) for arg in args])
    assert not any(started(p) for p in names.values())


def test_only_the_first_file_named_is_taken_for_the_profile(tmp_path: Path, big: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(big.read_text())
    start_reading(["apply", str(other), str(big)])
    assert started(other) and not started(big)
