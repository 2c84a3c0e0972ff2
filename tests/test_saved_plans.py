"""Saved plans: written atomically, never over another file, read back only if intact."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from trueup.errors import UsageError
from trueup.model import Action, ActionType, Plan, Target
from trueup.saved_plans import is_saved_plan, load_saved_plan, plan_command, save_plan
from trueup.session import Session
from trueup.settings import Settings

WRITE = Action("n", "file", ActionType.WRITE_FILE, "create n")


@pytest.fixture
def session(tmp_path: Path, fresh_state: object) -> Iterator[Session]:
    data = tmp_path / "data"
    fresh_state.into(data)  # type: ignore[attr-defined]
    opened = Session(Settings(data=data, state_url=f"sqlite:///{data / 'state.db'}", actor="t"))
    yield opened
    opened.close()


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    source = tmp_path / "profile.toml"
    source.write_text("[profile]\n")
    return Plan(Target("profile", "p", "P", str(tmp_path)), str(source), "d1", {}, (WRITE,))


def test_a_saved_plan_reads_back_as_the_same_plan(
    session: Session, plan: Plan, tmp_path: Path
) -> None:
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    assert is_saved_plan(path)
    assert load_saved_plan(session, path).digest == plan.digest


def test_a_mistyped_out_file_never_replaces_a_profile(plan: Plan) -> None:
    profile = Path(plan.source)
    with pytest.raises(UsageError, match="not a trueup saved plan"):
        save_plan(plan, profile)
    assert profile.read_text() == "[profile]\n"


def test_an_edited_plan_is_refused_as_damaged(session: Session, plan: Plan, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    document = json.loads(path.read_text())
    document["plan"]["actions"][0]["summary"] = "delete everything"
    path.write_text(json.dumps(document, sort_keys=True))
    with pytest.raises(UsageError, match="does not match its digest"):
        load_saved_plan(session, path)


def test_a_plan_whose_declaration_is_gone_is_refused(
    session: Session, plan: Plan, tmp_path: Path
) -> None:
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    Path(plan.source).unlink()
    with pytest.raises(UsageError, match="not there any more"):
        load_saved_plan(session, path)


def test_the_command_to_plan_again_names_the_targets_kind(plan: Plan) -> None:
    assert plan_command(plan).startswith(f"trueup plan PROFILE --root {plan.target.location}")
    org = Plan(Target("org", "acme", "Acme", "acme.test"), "acme.toml", "d", {}, ())
    assert plan_command(org).startswith("trueup org plan")
