"""One pipeline for every target: prepare → gates → execute → recover/abandon.

The order of the gates, when a plan is observed again, and what a person must
agree to are the same whether the target is a profile on a root or an org;
so they are written once, here, and a target adapter (trueup.targets) only
supplies loading, execution and its records. The CLI asks this module what
to do and renders the answer: it holds no policy of its own.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol

from trueup import audit
from trueup.crashpoints import reach
from trueup.errors import ConflictError, UsageError
from trueup.execute.gates import needs_confirmation, target_command
from trueup.model import Plan
from trueup.saved_plans import is_saved_plan, load_saved_plan
from trueup.session import Session
from trueup.state.store import RunInfo
from trueup.targets.base import P, Progress, R, TargetAdapter
from trueup.targets.profile import rollback_for

if TYPE_CHECKING:  # a plan, answered from memory or not, loads no executor (a run does)
    from trueup.execute.executor import RunResult


class Pipeline(Generic[P, R]):
    """Runs one target's plans through the gates, in the one order every target shares."""

    def __init__(self, session: Session, target: TargetAdapter[P, R]) -> None:
        self.session = session
        self.target = target

    def plan(self, source: Path, force: Iterable[str] = ()) -> P:
        """A plan for a person to review; computing it is audited."""
        prepared = self.target.load(source, force, "plan")
        store = self.session.store
        with store.if_writable():
            audit.record(
                store,
                "plan.computed",
                "success",
                self.session.actor,
                prepared.target,
                plan_digest=prepared.plan.digest,
            )
        return prepared

    def prepare_apply(
        self, source: Path, force: Iterable[str] = (), saved: Plan | None = None
    ) -> tuple[P, Plan]:
        """What an apply will run, and the plan a person agrees to.

        A ``saved`` plan is observed afresh and must still be what it says;
        otherwise the plan is the one computed now.
        """
        if saved is None:
            prepared = self.target.load(source, force, "apply")
            return prepared, prepared.plan
        prepared = self.target.load(Path(saved.source), saved.force, "apply")
        self.check_fresh(saved, prepared)
        return prepared, saved

    def check_fresh(self, expected: Plan, prepared: P) -> None:
        """Refuse (and audit) a saved plan that live state has moved away from."""
        gates = self.session.gates(prepared.target, "plan.applied", expected.digest)
        gates.fresh(expected, prepared.plan)

    def apply(
        self,
        prepared: P,
        expected: Plan | None = None,
        confirmation: str | None = None,
        paused: bool = False,
        progress: Progress | None = None,
    ) -> R:
        """Run the plan behind the gates: authorization, staleness, typed confirmation, lock.

        Refusals and the result are audited as ``plan.applied``. Once the lock
        is held, the target is observed and planned again, and must give the
        same plan, when it may have moved: ``paused`` (a person reviewed the
        plan, so time passed) or another run of the target started since
        ``prepared`` was observed. Otherwise the plan is moments old and no
        trueup touched the target since: observing it all a second time would
        only double the cost of an apply. One rule, for every target.
        """
        plan = prepared.plan
        session = self.session
        gates = session.gates(prepared.target, "plan.applied", plan.digest)
        gates.authorize("apply")
        if expected is not None:
            gates.fresh(expected, plan)
        gates.confirm(plan.actions, confirmation)
        self.target.guard(prepared, gates)
        if not self.target.has_work(plan):
            return self.target.settled(prepared, gates)
        from trueup.execute.executor import signals_interrupt

        store = session.store
        # While the run holds the lock, SIGTERM ends it as Ctrl-C would.
        with signals_interrupt(KeyboardInterrupt):
            run = gates.lock(plan)
            try:
                reach("run-started")
                fresh = prepared
                history = store.run_history(prepared.target.key, run.id)
                if paused or history != prepared.history:
                    fresh = self.target.reload(prepared, run)
                    gates.fresh(plan, fresh.plan)
                self.target.started(run, fresh)
            except BaseException:  # a stale plan, or Ctrl-C: nothing was changed
                store.set_run_status(run.id, "refused", "refused", "stopped before any change")
                raise
            try:
                return self.target.execute(run, fresh, 0, progress)
            except KeyboardInterrupt:
                raise session.interrupted_outside_actions(run) from None


# -- interrupted runs --------------------------------------------------------
def recover(session: Session, run_id: str | None, progress: Progress | None = None) -> RunResult:
    """Finish an unfinished run as its target recovers: a profile restores what was in
    flight and redoes the rest; an org resumes from live state (no rollback there)."""
    run = session.find_run(run_id)
    if run.target.kind == "org" and not run.job:
        from trueup.targets.org import OrgTarget  # providers load only when an org needs them

        org = OrgTarget(session)
        try:
            return org.recover(run).run_result()
        finally:
            org.close_services()
    from trueup.targets.profile_recovery import recover as recover_profile

    return recover_profile(session, run, progress)


def abandon(session: Session, run_id: str | None) -> RunInfo:
    """Release an unfinished run's lock, leaving targets exactly as they are."""
    run = session.find_run(run_id)
    gates = session.gates(run.target, "run.abandoned", run.plan_digest)
    gates.authorize("apply")
    try:
        session.take(run)
    except ConflictError as exc:
        raise gates.refuse(exc) from None
    from trueup.execute.leftovers import sweep_abandoned
    from trueup.fs import WritableFS

    rollback = rollback_for(session, run)
    fs = WritableFS(tag=run.id)
    rollback.sweep_temp_files(fs)
    rollback.remove_empty_folders(fs)
    fs.close()
    store = session.store
    sweep_abandoned(store, run)  # the material may be gone: the targets are known
    store.set_run_status(run.id, "abandoned", "abandoned", "abandoned by " + session.actor.key)
    rollback.discard()
    audit.record(
        store,
        "run.abandoned",
        "success",
        session.actor,
        run.target,
        plan_digest=run.plan_digest,
        run_id=run.id,
    )
    found = store.run(run.id)
    assert found is not None
    return found


# -- what a person agrees to ------------------------------------------------
class Asker(Protocol):
    """How a person is asked (the CLI's terminal); answers only, no policy."""

    def ask(self, prompt: str) -> str: ...
    def confirm(self, prompt: str) -> bool: ...


@dataclass(frozen=True)
class Consent:
    """What a person agreed to before an apply.

    ``paused``: someone was asked, so time passed since the plan was computed
    (the pipeline then observes again under the lock). ``declined``: they said no.
    """

    typed: str | None
    paused: bool = False
    declined: bool = False


def ask_consent(
    plan: Plan,
    asker: Asker,
    *,
    typed: str | None,
    yes: bool,
    no_input: bool,
    interactive: bool,
    noun: str = "target",
    with_yes: str = "the same command with --yes",
) -> Consent:
    """Ask what must be asked: the typed name for destroying steps, then a yes/no.

    ``--no-input`` never asks; without a terminal the apply is refused unless
    ``--yes`` (or a typed name) already answered, with ``with_yes`` (the
    command as typed, plus --yes) as the hint. A plan without changes needs
    no agreement.
    """
    paused = False
    if needs_confirmation(plan.actions) and typed is None and not no_input and interactive:
        paused = True
        typed = asker.ask(
            f"This plan destroys or migrates data. Type the {noun}'s name "
            f"({plan.target.name}) to confirm"
        )
    if plan.changes and not (yes or no_input or typed is not None):  # queued or not
        if not interactive:
            raise UsageError(
                "refusing to apply without confirmation: no terminal to ask on",
                hint="review the plan above, then run: " + with_yes,
            )
        paused = True
        if not asker.confirm(f"Apply {len(plan.changes)} change(s)?"):
            return Consent(typed, paused, declined=True)
    return Consent(typed, paused)


# -- saved plans ----------------------------------------------------------
def open_saved(
    session: Session,
    file: Path,
    kind: str,
    root: Path | None = None,
    overwrite: Iterable[str] = (),
) -> Plan | None:
    """The saved plan ``file`` is, for a ``kind`` apply; ``None`` when it is a declaration.

    A saved plan is applied exactly as planned: ``--overwrite`` cannot change
    it, a plan of another kind or another root is refused with the command
    that applies it.
    """
    if not is_saved_plan(file):
        return None
    saved = load_saved_plan(session, file)
    overwrite = list(overwrite)
    if kind == "org":
        if saved.target.kind != "org":
            raise UsageError(f"{file} is a saved {saved.target.kind} plan, not an org plan")
        return saved
    if overwrite:
        raise UsageError(
            "a saved plan is applied exactly as it was planned; --overwrite does not change it",
            hint="plan again with it, review, then apply the new plan: "
            + target_command(
                "plan",
                saved.target.kind,
                saved.source,
                saved.target.location,
                *(arg for rid in overwrite for arg in ("--overwrite", rid)),
                "-o",
                str(file),
            ),
        )
    if saved.target.kind == "org":
        raise UsageError(
            f"{file} is a saved org plan",
            hint=f"apply it with: {shlex.join(['trueup', 'org', 'apply', str(file)])}",
        )
    plan_root = Path(saved.target.location)
    if root is not None and root.resolve() != plan_root:
        raise UsageError(f"the saved plan is for root {plan_root}, not {root}")
    return saved
