"""The Pipeline: one order of gates, one re-observation rule, for any target.

Driven here through the smallest target there is (``NoteTarget``): a plan
handed in, and a list of what the pipeline asked of it. Profiles and orgs
are driven end to end by tests/scenarios; this file is the rule book.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from trueup.errors import TrueupError, UsageError
from trueup.execute.gates import ConfirmationRequired, Gates
from trueup.model import Action, ActionType, Plan, Target
from trueup.pipeline import Consent, Pipeline, ask_consent, open_saved
from trueup.saved_plans import save_plan
from trueup.session import Session
from trueup.settings import Settings
from trueup.state.store import RunInfo
from trueup.targets.base import Progress

TARGET = Target("note", "n1", "Notes", "/nowhere")


def plan_of(*actions: Action, observed: str = "seen") -> Plan:
    return Plan(TARGET, "/nowhere/notes.toml", "d1", {"n": observed}, actions)


WRITE = Action("n", "note", ActionType.WRITE_FILE, "write note")
DELETE = Action("gone", "note", ActionType.REMOVE_RESOURCE, "delete note", destroys=True)
SAME = Action("n", "note", ActionType.NO_OP, "unchanged")


@dataclass
class Noted:
    target: Target
    plan: Plan
    history: str


@dataclass
class NoteTarget:
    """A target whose plan is whatever ``plans`` says next; it records every call."""

    session: Session
    plans: list[Plan]
    calls: list[str] = field(default_factory=list)

    def _noted(self) -> Noted:
        plan = self.plans.pop(0) if len(self.plans) > 1 else self.plans[0]
        return Noted(TARGET, plan, self.session.store.run_history(TARGET.key))

    def load(self, source: Path, force: Iterable[str], permission: str | None) -> Noted:
        self.calls.append("load")
        return self._noted()

    def reload(self, prepared: Noted, run: RunInfo) -> Noted:
        self.calls.append("reload")
        return self._noted()

    def has_work(self, plan: Plan) -> bool:
        return bool(plan.changes)

    def guard(self, prepared: Noted, gates: Gates) -> None:
        self.calls.append("guard")

    def settled(self, prepared: Noted, gates: Gates) -> str | None:
        self.calls.append("settled")
        return None

    def started(self, run: RunInfo, prepared: Noted) -> None:
        self.calls.append("started")

    def execute(
        self, run: RunInfo, prepared: Noted, first_seq: int, progress: Progress | None
    ) -> str | None:
        self.calls.append("execute")
        self.session.store.set_run_status(run.id, "finished", "converged", "done")
        return run.id


@pytest.fixture
def session(tmp_path: Path, fresh_state: object) -> Iterator[Session]:
    data = tmp_path / "data"
    fresh_state.into(data)  # type: ignore[attr-defined]
    opened = Session(Settings(data=data, state_url=f"sqlite:///{data / 'state.db'}", actor="t"))
    yield opened
    opened.close()


def pipeline(session: Session, *plans: Plan) -> tuple[Pipeline[Noted, str | None], NoteTarget]:
    target = NoteTarget(session, list(plans))
    return Pipeline(session, target), target


# -- when the target is observed again ---------------------------------------
def test_a_plan_moments_old_is_applied_without_observing_again(session: Session) -> None:
    run, target = pipeline(session, plan_of(WRITE))
    prepared = run.target.load(Path("notes.toml"), (), "apply")
    assert run.apply(prepared) is not None
    assert target.calls == ["load", "guard", "started", "execute"]


def test_a_person_pausing_to_review_makes_the_pipeline_observe_again(session: Session) -> None:
    run, target = pipeline(session, plan_of(WRITE))
    prepared = run.target.load(Path("notes.toml"), (), "apply")
    run.apply(prepared, paused=True)
    assert target.calls == ["load", "guard", "reload", "started", "execute"]


def test_another_run_of_the_target_since_the_plan_makes_it_observe_again(
    session: Session,
) -> None:
    run, target = pipeline(session, plan_of(WRITE))
    prepared = run.target.load(Path("notes.toml"), (), "apply")
    other = session.gates(TARGET, "plan.applied").lock(prepared.plan)
    session.store.set_run_status(other.id, "finished", "converged", "someone else's run")
    run.apply(prepared)
    assert "reload" in target.calls


def test_a_plan_that_moved_meanwhile_is_refused_and_changes_nothing(session: Session) -> None:
    reviewed, moved = plan_of(WRITE), plan_of(WRITE, observed="edited since")
    run, target = pipeline(session, reviewed, moved)
    prepared = run.target.load(Path("notes.toml"), (), "apply")
    with pytest.raises(TrueupError):
        run.apply(prepared, paused=True)
    assert "execute" not in target.calls
    [refused] = session.store.runs(TARGET.key, 10)
    assert (refused.status, refused.outcome) == ("refused", "refused")
    assert session.store.holder(TARGET.key) is None  # the lock went with it


# -- the gates, in order ---------------------------------------------------------
def test_nothing_to_do_is_settled_without_taking_the_lock(session: Session) -> None:
    run, target = pipeline(session, plan_of(SAME))
    prepared = run.target.load(Path("notes.toml"), (), "apply")
    assert run.apply(prepared) is None
    assert target.calls == ["load", "guard", "settled"]
    assert session.store.last_run(TARGET.key) is None


def test_a_destroying_step_is_refused_before_the_target_is_touched(session: Session) -> None:
    run, target = pipeline(session, plan_of(DELETE))
    prepared = run.target.load(Path("notes.toml"), (), "apply")
    with pytest.raises(ConfirmationRequired):
        run.apply(prepared)
    assert target.calls == ["load"]
    run.apply(prepared, confirmation="Notes")
    assert target.calls[-1] == "execute"


def test_a_saved_plan_is_applied_only_while_it_still_holds(session: Session) -> None:
    saved = plan_of(WRITE)
    run, _ = pipeline(session, plan_of(WRITE, observed="edited since"))
    with pytest.raises(TrueupError):
        run.prepare_apply(Path("notes.toml"), saved=saved)
    run, _ = pipeline(session, saved)
    prepared, expected = run.prepare_apply(Path("notes.toml"), saved=saved)
    assert expected is saved and prepared.plan.digest == saved.digest


# -- what a person agrees to -----------------------------------------------------
@dataclass
class Person:
    """Answers as told, and remembers what it was asked."""

    name: str = ""
    agrees: bool = True
    asked: list[str] = field(default_factory=list)

    def ask(self, prompt: str) -> str:
        self.asked.append(prompt)
        return self.name

    def confirm(self, prompt: str) -> bool:
        self.asked.append(prompt)
        return self.agrees


def consent(plan: Plan, person: Person, **given: object) -> Consent:
    options: dict[str, object] = {"typed": None, "yes": False, "no_input": False}
    options.update(given)
    options.setdefault("interactive", True)
    return ask_consent(plan, person, **options)  # type: ignore[arg-type]


def test_a_plan_that_changes_nothing_asks_nothing() -> None:
    person = Person()
    assert consent(plan_of(SAME), person) == Consent(None)
    assert person.asked == []


def test_a_person_asked_yes_or_no_has_paused_the_plan() -> None:
    assert consent(plan_of(WRITE), Person()) == Consent(None, paused=True)
    assert consent(plan_of(WRITE), Person(agrees=False)).declined


def test_yes_answers_the_question_and_nothing_pauses() -> None:
    person = Person()
    assert consent(plan_of(WRITE), person, yes=True) == Consent(None)
    assert person.asked == []


def test_a_destroying_step_asks_for_the_targets_name_even_with_yes() -> None:
    person = Person(name="Notes")
    assert consent(plan_of(DELETE), person, yes=True) == Consent("Notes", paused=True)
    assert "Notes" in person.asked[0]


def test_without_a_terminal_an_unanswered_apply_is_refused() -> None:
    with pytest.raises(UsageError, match="no terminal to ask on"):
        consent(plan_of(WRITE), Person(), interactive=False)


def test_no_input_never_asks_and_leaves_the_typed_name_to_the_gate() -> None:
    person = Person()
    assert consent(plan_of(DELETE), person, no_input=True) == Consent(None)
    assert person.asked == []


# -- saved plans on the command line ---------------------------------------------
def saved_file(tmp_path: Path, target: Target) -> Path:
    source = tmp_path / "declared.toml"
    source.write_text("")
    plan = Plan(target, str(source), "d1", {}, (WRITE,))
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    return path


def test_a_declaration_is_no_saved_plan(session: Session, tmp_path: Path) -> None:
    declaration = tmp_path / "profile.toml"
    declaration.write_text("")
    assert open_saved(session, declaration, "profile") is None


def test_a_saved_plan_is_not_changed_by_overwrite(session: Session, tmp_path: Path) -> None:
    path = saved_file(tmp_path, Target("profile", "p", "P", str(tmp_path)))
    with pytest.raises(UsageError, match="--overwrite does not change it"):
        open_saved(session, path, "profile", overwrite=["n"])


def test_a_saved_plan_names_the_command_for_its_kind(session: Session, tmp_path: Path) -> None:
    org_plan = saved_file(tmp_path, Target("org", "acme", "Acme", "acme.test"))
    with pytest.raises(UsageError, match="saved org plan"):
        open_saved(session, org_plan, "profile")
    assert open_saved(session, org_plan, "org") is not None


def test_a_saved_plan_is_for_its_own_root(session: Session, tmp_path: Path) -> None:
    path = saved_file(tmp_path, Target("profile", "p", "P", str(tmp_path)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(UsageError, match="is for root"):
        open_saved(session, path, "profile", root=elsewhere)
    assert open_saved(session, path, "profile", root=tmp_path) is not None
