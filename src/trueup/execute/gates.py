"""The gates every apply passes before anything changes, in this order.

1. authorization: the actor holds ``apply`` (or ``plan``) on the target;
2. staleness: the plan recomputed now is the plan being applied;
3. confirmation: a step that destroys or migrates data needs the target's
   display name typed exactly (``--yes`` never counts);
4. the lock: one active run per target, a database row.

``Gates`` runs them for one target and audits every refusal before raising
it, so the org side and the machine side refuse, and record, the same way.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from trueup.errors import ConflictError, ExitCode, TrueupError, UsageError
from trueup.model import Action, Plan, Target
from trueup.state.store import RunInfo, RunLocked, Store

if TYPE_CHECKING:
    from trueup.authz import Actor


class ConfirmationRequired(UsageError):
    """A destroying or migrating step was not confirmed by typing the target's name."""


class NobodyToConfirm(ConfirmationRequired):
    """A destroying step met by a run that may not ask (``--no-input``: a timer, CI).

    Nothing is wrong with the command; a person has to decide, so it is
    human action (exit 3), and the next step is the command they run.
    """

    exit_code = ExitCode.HUMAN_ACTION


class StalePlan(ConflictError):
    """The plan no longer matches live state: recompute it and review it again."""


def acquire(store: Store, target: Target, plan: Plan, actor: str) -> RunInfo:
    """Take the target's lock (a run row), or refuse naming whoever holds it."""
    try:
        return store.start_run(
            target, plan.digest, plan.source, actor, plan.force, plan.declaration
        )
    except RunLocked as locked:
        raise locked_error(locked.holder, target) from None


def locked_error(holder: RunInfo | None, target: Target) -> ConflictError:
    if holder is None:
        return ConflictError(f"{target.name} is locked by another run that just finished; retry")
    alive = holder.holder_alive
    state = {
        True: "is still running",
        False: "was interrupted (its process is gone)",
        None: "runs on another host",
    }[alive]
    if holder.job and holder.status == "running":
        state = "is being worked on" if alive else "lost its worker (its lease ran out)"
    hint = (
        "wait for it to finish"
        if alive and holder.status == "running"
        else f"run `trueup recover {holder.id}` to finish it, or `trueup abandon {holder.id}`"
    )
    if holder.status == "interrupted":
        state = "was interrupted"
    elif holder.status == "queued":
        state, hint = "is queued for a worker", "wait for a worker to run it (trueup jobs list)"
    elif holder.status == "failed":
        state = "failed and waits to be resumed"
        hint = (
            f"fix the cause, then `trueup jobs resume {holder.id}`, or `trueup abandon {holder.id}`"
        )
    elif holder.job and not alive:
        hint = "another worker takes it over; or `trueup abandon " + holder.id + "`"
    return ConflictError(
        f"{target.name} is locked by run {holder.id} (host {holder.host}, pid {holder.pid}, "
        f"since {holder.started_at}), which {state}",
        hint=hint,
        data={"holder": holder.to_json()},
    )


def check_fresh(expected: Plan, actual: Plan) -> None:
    """Refuse a plan whose inputs moved since it was computed; say what moved."""
    if expected.digest == actual.digest:
        return
    moved: list[str] = []
    if expected.declaration != actual.declaration:
        moved.append("the declaration changed")
    for rid in sorted(set(expected.observed) | set(actual.observed)):
        before, after = expected.observed.get(rid), actual.observed.get(rid)
        if before != after:
            what = "appeared" if before is None else "disappeared" if after is None else "changed"
            moved.append(f"{rid}: live state {what}")
    if not moved:
        moved.append("the planned actions differ")
    raise StalePlan(
        "the plan is stale: " + "; ".join(moved[:10]) + (" …" if len(moved) > 10 else ""),
        hint="compute the plan again and review it: "
        + replan_command(expected.target.kind, expected.source, expected.target.location),
        data={"moved": moved, "expected": expected.digest, "actual": actual.digest},
    )


def target_command(verb: str, kind: str, source: str, location: str, *extra: str) -> str:
    """The whole ``trueup [org] VERB`` command for a target, quoted, ready to paste."""
    if kind == "org":
        return shlex.join(["trueup", "org", verb, source, *extra])
    return shlex.join(["trueup", verb, source, "--root", location, *extra])


def replan_command(kind: str, source: str, location: str) -> str:
    """The whole command that plans a target again, ready to paste."""
    return target_command("plan", kind, source, location)


def needs_confirmation(actions: Iterable[Action]) -> list[Action]:
    return [a for a in actions if a.destroys or a.migrates]


def confirm_command(plan: Plan) -> str:
    """The apply of ``plan``'s target with its name typed, ready to paste."""
    return target_command(
        "apply", plan.target.kind, plan.source, plan.target.location, "--confirm", plan.target.name
    )


def unattended(refused: ConfirmationRequired, command: str) -> NobodyToConfirm:
    """``refused`` as met by a run nobody can answer: a person runs ``command``."""
    return NobodyToConfirm(
        f"{refused.message}; --no-input leaves nobody to type the name",
        hint=f"a person reviews the plan, then runs: {command}",
        data=refused.data,
    )


def check_confirmation(actions: Sequence[Action], target: Target, typed: str | None) -> None:
    """Destroying or migrating steps need the display name typed exactly (trimmed)."""
    risky = needs_confirmation(actions)
    if not risky:
        return
    what = "; ".join(f"{a.resource_id}: {a.summary}" for a in risky[:5])
    more = f" and {len(risky) - 5} more" if len(risky) > 5 else ""
    if typed is None:
        problem = "confirmation required"
    elif typed.strip() == target.name.strip():
        return
    else:
        problem = f"the typed name {typed.strip()!r} is not {target.name!r}"
    raise ConfirmationRequired(
        f"{problem}: {len(risky)} step(s) destroy or migrate data ({what}{more}); "
        "--yes alone never confirms them",
        hint=f"type the target's name to confirm: --confirm {_quote(target.name)}",
        data={"steps": [a.to_json() for a in risky]},
    )


def _quote(name: str) -> str:
    return "'" + name.replace("'", "'\\''") + "'"


class Gates:
    """The gates of one apply (or plan) of one target; every refusal is audited."""

    def __init__(
        self,
        store: Store,
        actor: Actor,
        target: Target,
        event: str = "plan.applied",
        plan_digest: str | None = None,
    ) -> None:
        self.store = store
        self.actor = actor
        self.target = target
        self.event = event
        self.plan_digest = plan_digest

    def refuse(self, error: TrueupError, run_id: str | None = None) -> TrueupError:
        """Audit ``error`` as this event's refusal and hand it back to raise.

        ``run_id`` names the run a refusal ended (a recovery that released it),
        so the row says which run lost its lock and why.
        """
        from trueup import audit

        audit.record(
            self.store,
            self.event,
            "refused",
            self.actor,
            self.target,
            reason=error.message,
            plan_digest=self.plan_digest,
            run_id=run_id,
        )
        return error

    def authorize(self, permission: str) -> None:
        from trueup import authz

        try:
            authz.require(self.store, self.actor, permission, self.target.key)
        except TrueupError as exc:
            raise self.refuse(exc) from None

    def fresh(self, expected: Plan, actual: Plan) -> None:
        try:
            check_fresh(expected, actual)
        except TrueupError as exc:
            raise self.refuse(exc) from None

    def confirm(self, actions: Sequence[Action], typed: str | None) -> None:
        try:
            check_confirmation(actions, self.target, typed)
        except TrueupError as exc:
            raise self.refuse(exc) from None

    def lock(self, plan: Plan) -> RunInfo:
        try:
            return acquire(self.store, self.target, plan, self.actor.key)
        except TrueupError as exc:
            raise self.refuse(exc) from None
