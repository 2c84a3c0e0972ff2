"""The executor: journal, keep rollback material, mutate, verify, record; one
transaction per run for local kinds, in batches of durability barriers."""

from __future__ import annotations

from pathlib import Path

import pytest

from trueup.engine import Engine
from trueup.model import Outcome
from trueup.settings import Settings

HEADER = '[profile]\nid = "x"\nname = "Executed"\n'


def file_resource(rid: str, target: str, content: str, verify: str = "") -> str:
    return (
        f'\n[[resource]]\nid = "{rid}"\nkind = "file"\ntarget = "{target}"\n'
        f'content = "{content}\\n"\n{verify}'
    )


THREE = "".join(file_resource(n, f"{n}.txt", f"declared {n}") for n in ("a", "b", "c"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


def write_profile(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "profile.toml"
    path.write_text(HEADER + body)
    return path


def test_every_action_is_journaled_succeeded_and_recorded(
    engine: Engine, tmp_path: Path, root: Path
) -> None:
    prepared = engine.prepare(write_profile(tmp_path, THREE), root)
    result = engine.apply(prepared, prepared.plan)
    assert result is not None and result.outcome is Outcome.CONVERGED
    assert [(r.action.resource_id, r.status) for r in result.results] == [
        ("a", "succeeded"),
        ("b", "succeeded"),
        ("c", "succeeded"),
    ]
    journal = engine.store.run_actions(result.run_id)
    assert [(j.action.resource_id, j.status) for j in journal] == [
        ("a", "succeeded"),
        ("b", "succeeded"),
        ("c", "succeeded"),
    ]
    assert all(j.evidence for j in journal), "each verified independently"
    assert sorted(engine.store.applied(prepared.plan.target.key)) == ["a", "b", "c"]
    assert (root / "b.txt").read_text() == "declared b\n"


def test_batches_of_one_journal_in_plan_order(
    tmp_path: Path, root: Path, fresh_state: object
) -> None:
    data = tmp_path / "data"
    fresh_state.into(data)  # type: ignore[attr-defined]
    settings = Settings(
        data=data, state_url=f"sqlite:///{data / 'state.db'}", actor="t", batch_size=1
    )
    engine = Engine(settings)
    try:
        prepared = engine.prepare(write_profile(tmp_path, THREE), root)
        result = engine.apply(prepared, prepared.plan)
        assert result is not None and result.outcome is Outcome.CONVERGED
        journal = engine.store.run_actions(result.run_id)
        assert [j.action.resource_id for j in journal] == ["a", "b", "c"]
        assert [j.status for j in journal] == ["succeeded"] * 3
        finished = [j.at for j in journal]
        assert None not in finished and finished == sorted(finished), "one batch at a time"
    finally:
        engine.close()


def test_a_failed_verification_restores_everything_the_run_changed(
    engine: Engine, tmp_path: Path, root: Path
) -> None:
    (root / "a.txt").write_text("before\n")
    failing = 'verify = { command = ["false"] }\n'
    body = file_resource("a", "a.txt", "declared a") + file_resource(
        "b", "b.txt", "declared b", failing
    )
    prepared = engine.prepare(write_profile(tmp_path, body), root, force=["a"])
    result = engine.apply(prepared, prepared.plan, confirmation="Executed")
    assert result is not None and result.outcome is Outcome.FAILED
    assert "restored" in result.message
    assert (root / "a.txt").read_text() == "before\n", "the earlier action is undone"
    assert not (root / "b.txt").exists()
    assert engine.store.applied(prepared.plan.target.key) == {}
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"], "no temp file left"


def test_nothing_to_do_runs_nothing(engine: Engine, tmp_path: Path, root: Path) -> None:
    profile = write_profile(tmp_path, THREE)
    first = engine.prepare(profile, root)
    assert engine.apply(first, first.plan) is not None
    again = engine.prepare(profile, root)
    assert engine.apply(again, again.plan) is None
    assert len(engine.store.runs()) == 1
