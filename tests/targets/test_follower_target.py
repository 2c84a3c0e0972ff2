"""A follower's revision through the Pipeline: a profile's plan and run, then its report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trueup.engine import Engine
from trueup.execute.executor import RunResult
from trueup.model import Outcome, Plan
from trueup.pipeline import Pipeline
from trueup.targets.follower import FollowerTarget


def laid_out(tmp_path: Path) -> Path:
    folder = tmp_path / "revision"
    folder.mkdir(parents=True)
    (folder / "notes.md").write_text("notes\n")
    document: dict[str, Any] = {
        "profile": {"id": "team", "name": "Team", "groups": ["laptops"]},
        "resource": [
            {
                "id": "notes",
                "kind": "file",
                "target": "notes.md",
                "source": "notes.md",
                "groups": ["laptops"],
            }
        ],
    }
    (folder / "profile.json").write_text(json.dumps(document))
    return folder / "profile.json"


def test_an_apply_reports_its_plan_and_result_once(engine: Engine, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    reports: list[tuple[Plan, RunResult | None]] = []
    target = FollowerTarget(engine, root, lambda plan, result: reports.append((plan, result)))
    pipeline = Pipeline(engine, target)
    prepared = pipeline.plan(laid_out(tmp_path))
    assert prepared.target.key == f"profile:team@{root.resolve()}"
    assert reports == []  # planning reports nothing: sync decides what a plan-only sync says
    result = pipeline.apply(prepared)
    assert result is not None and result.outcome is Outcome.CONVERGED
    assert (root / "notes.md").read_text() == "notes\n"
    assert [(plan.digest, r) for plan, r in reports] == [(prepared.plan.digest, result)]
    settled = pipeline.apply(pipeline.plan(laid_out(tmp_path / "again")))
    assert settled is None and len(reports) == 2 and reports[1][1] is None
