"""The Session: the store, the actor, the gates and the audit log every target shares."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from trueup import audit, authz
from trueup.errors import ConflictError, NotAuthorizedError, UsageError
from trueup.model import Outcome, Plan, Target
from trueup.session import Session
from trueup.settings import Settings

TARGET = Target("note", "n1", "Notes", "/nowhere")
PLAN = Plan(TARGET, "/nowhere/notes.toml", "d1", {}, ())


@pytest.fixture
def session(tmp_path: Path, fresh_state: object) -> Iterator[Session]:
    data = tmp_path / "data"
    fresh_state.into(data)  # type: ignore[attr-defined]
    opened = Session(Settings(data=data, state_url=f"sqlite:///{data / 'state.db'}", actor="t"))
    yield opened
    opened.close()


def test_the_store_opens_only_when_a_command_needs_it(tmp_path: Path) -> None:
    data = tmp_path / "never"
    session = Session(Settings(data=data, state_url=f"sqlite:///{data / 'state.db'}"))
    session.close()
    assert not data.exists()


def test_a_change_of_access_is_on_the_record_and_a_read_is_not(session: Session) -> None:
    session.access("grants.read", lambda: None, {})
    session.access("grant.added", lambda: None, {"permission": "apply"})
    assert [e.event for e in audit.entries(session.store)] == ["grant.added"]


def test_a_refused_change_of_access_is_on_the_record_as_refused(session: Session) -> None:
    def refuse() -> None:
        raise NotAuthorizedError("not an admin")

    with pytest.raises(NotAuthorizedError):
        session.access("grant.added", refuse, {})
    [entry] = audit.entries(session.store)
    assert (entry.event, entry.outcome) == ("grant.added", "refused")


def test_what_the_actor_may_not_plan_it_does_not_see(session: Session) -> None:
    assert session.may_see(TARGET.key)  # no grants yet: authorization is off
    authz.add_grant(session.store, session.actor, session.actor.key, "admin", "*")
    authz.add_grant(session.store, session.actor, "human:ann", "plan", "profile:*")
    ann = Session(session.settings, session.store)
    ann._actor = authz.parse_actor("human:ann")  # as resolved from her OS user name
    assert ann.may_see("profile:p@/home/ann") and not ann.may_see(TARGET.key)


def test_an_unnamed_run_to_recover_must_be_the_only_one(session: Session) -> None:
    with pytest.raises(UsageError, match="no interrupted run"):
        session.find_run(None)
    run = session.gates(TARGET, "plan.applied").lock(PLAN)
    assert session.find_run(None).id == run.id
    with pytest.raises(UsageError, match="no run 'nope'"):
        session.find_run("nope")


def test_an_apply_is_refused_while_another_run_holds_the_target(session: Session) -> None:
    session.refuse_if_locked(TARGET, PLAN.digest)  # nobody holds it
    session.gates(TARGET, "plan.applied").lock(PLAN)
    with pytest.raises(ConflictError):
        session.refuse_if_locked(TARGET, PLAN.digest)
    [entry] = audit.entries(session.store)
    assert entry.outcome == "refused"


def test_a_settled_apply_is_recorded_only_when_the_last_run_said_otherwise(
    session: Session,
) -> None:
    gates = session.gates(TARGET, "plan.applied", PLAN.digest)
    session.record_settled(PLAN, gates, Outcome.CONVERGED)
    assert session.store.last_run(TARGET.key) is None  # no history to correct
    failed = gates.lock(PLAN)
    session.store.set_run_status(failed.id, "finished", Outcome.FAILED.value, "broke")
    session.record_settled(PLAN, gates, Outcome.CONVERGED)
    last = session.store.last_run(TARGET.key)
    assert last is not None and last.outcome == Outcome.CONVERGED.value
