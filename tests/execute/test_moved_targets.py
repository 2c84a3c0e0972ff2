"""A target edited between the plan and its write is never overwritten.

Apply observes everything a second time under the lock only when time may
have passed (a person reviewed the plan) or another run came between; every
batch still re-observes its own resources right before mutating them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trueup.engine import Engine
from trueup.errors import ConflictError, ExitCode
from trueup.model import Outcome

PROFILE = """
[[resource]]
id = "a"
kind = "file"
target = "a.txt"
content = "declared a\\n"

[[resource]]
id = "b"
kind = "file"
target = "b.txt"
content = "declared b\\n"
"""


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    path = tmp_path / "profile.toml"
    path.write_text('[profile]\nid = "m"\nname = "Moved"\n' + PROFILE)
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


def test_an_edit_after_planning_fails_the_run_and_keeps_the_edit(
    engine: Engine, profile: Path, root: Path
) -> None:
    prepared = engine.prepare(profile, root)
    (root / "b.txt").write_text("written by a person meanwhile\n")
    result = engine.apply(prepared, prepared.plan)
    assert result is not None and result.outcome is Outcome.FAILED
    assert "'b' changed after the plan was computed" in result.message
    assert (root / "b.txt").read_text() == "written by a person meanwhile\n"
    assert not (root / "a.txt").exists(), "the run is one transaction: a is restored"
    assert sorted(p.name for p in root.iterdir()) == ["b.txt"], "no temp file left"


def test_after_a_pause_the_whole_plan_is_checked_before_anything_runs(
    engine: Engine, profile: Path, root: Path
) -> None:
    prepared = engine.prepare(profile, root)
    (root / "a.txt").write_text("written while the plan was reviewed\n")
    with pytest.raises(ConflictError) as refused:
        engine.apply(prepared, prepared.plan, paused=True)
    assert refused.value.exit_code == ExitCode.CONFLICT
    assert (root / "a.txt").read_text() == "written while the plan was reviewed\n"
    assert not (root / "b.txt").exists()
    assert engine.store.runs()[0].status == "refused"


def test_a_run_in_between_makes_apply_observe_again(
    engine: Engine, profile: Path, root: Path
) -> None:
    first = engine.prepare(profile, root)
    second = engine.prepare(profile, root)
    done = engine.apply(second, second.plan)
    assert done is not None and done.outcome is Outcome.CONVERGED
    with pytest.raises(ConflictError, match="stale"):
        engine.apply(first, first.plan)
    assert (root / "a.txt").read_text() == "declared a\n"


def test_without_a_pause_or_another_run_the_plan_is_applied_as_observed(
    engine: Engine, profile: Path, root: Path
) -> None:
    prepared = engine.prepare(profile, root)
    result = engine.apply(prepared, prepared.plan)
    assert result is not None and result.outcome is Outcome.CONVERGED
    assert [e.status for e in result.results] == ["succeeded", "succeeded"]
    assert (root / "b.txt").read_text() == "declared b\n"
