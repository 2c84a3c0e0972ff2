"""Who acts, against which store, behind which gates: what every target's run shares.

A profile on a root and an org are planned and applied by the same person
against the same store, with the same authorization, lock and audit log.
What differs between them lives in their target adapters (trueup.targets);
this module knows no target kind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from trueup import audit, authz
from trueup.errors import ApplyFailedError, NotAuthorizedError, UsageError
from trueup.execute.gates import Gates, locked_error
from trueup.model import Outcome, Plan, Target
from trueup.redact import redact_url
from trueup.settings import Settings
from trueup.state.store import ACTIVE, RunInfo, Store

#: What grant, token and audit-log access is recorded against (no run's target).
ACCESS = Target("access", "grants", "grants, tokens and the audit log", "")
T = TypeVar("T")


class Session:
    """The store, the actor, the gates and the audit log of one trueup process.

    The store opens on first use, so commands that never touch it (``--help``,
    a usage error) stay fast; the actor is resolved once, on first use too.
    """

    #: Whether a claimed service must be named by a grant or a token (the command
    #: line sets it: a mistyped ``--actor`` is refused rather than acting as nobody).
    claims_named = False

    def __init__(self, settings: Settings, store: Store | None = None) -> None:
        self.settings = settings
        self._store: Store | None = store
        self._actor: authz.Actor | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self.settings.open_data()
            self._store = Store.open(self.settings.state_url)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    @property
    def actor(self) -> authz.Actor:
        """Who acts: a token's service, a claimed ``--actor``, else the OS user.

        A refused identity (an unknown or revoked token, a service's name
        without its token) is audited as the OS user who tried it.
        """
        if self._actor is None:
            claim = self.settings.actor if self.settings.actor != authz.os_user_name() else None
            token = os.environ.get(authz.TOKEN_ENV)
            try:
                self._actor = authz.resolve_actor(self.store, claim, token, self.claims_named)
            except NotAuthorizedError as exc:
                audit.record(
                    self.store,
                    "actor.claimed",
                    "refused",
                    authz.os_actor(),
                    ACCESS,
                    reason=exc.message,
                    detail={"claim": claim},
                )
                raise
        return self._actor

    def reauthenticate(self) -> authz.Actor:
        """``actor`` resolved again: a long-lived process (a worker) notices a token
        revoked since it started, and stops acting as it."""
        self._actor = None
        return self.actor

    def may_see(self, target_key: str) -> bool:
        """Whether the actor may know of a target at all: what it may not plan, it does not see."""
        return authz.allowed(self.store, self.actor, "plan", target_key)

    def access(self, event: str, act: Callable[[], T], detail: Mapping[str, Any]) -> T:
        """Read or change grants and tokens as ``self.actor``; a refusal is audited.

        So is every change (``event`` names it); reads succeed silently.
        """
        actor = self.actor
        try:
            result = act()
        except NotAuthorizedError as exc:
            audit.record(
                self.store, event, "refused", actor, ACCESS, reason=exc.message, detail=detail
            )
            raise
        if not event.endswith(".read"):
            audit.record(self.store, event, "success", actor, ACCESS, detail=detail)
        return result

    def gates(self, target: Target, event: str, plan_digest: str | None = None) -> Gates:
        return Gates(self.store, self.actor, target, event, plan_digest)

    # -- runs ---------------------------------------------------------------
    def refuse_if_locked(
        self, target: Target, plan_digest: str, gates: Gates | None = None
    ) -> None:
        """Refuse (and audit) an apply while another run holds the target.

        Checked before the plan is shown too: a plan computed in the middle of
        another run's changes says little, and "converged" followed by a
        refusal says less.
        """
        holder = self.store.holder(target.key)
        if holder is not None:
            gates = gates or self.gates(target, "plan.applied", plan_digest)
            raise gates.refuse(locked_error(holder, target))

    def record_settled(self, plan: Plan, gates: Gates, outcome: Outcome) -> None:
        """Record an apply with nothing to do whose ``outcome`` the last run does not tell.

        Otherwise ``status`` would go on reporting that failed, interrupted or
        abandoned run (or the fields an org waited for) after an apply found
        everything as declared. Nothing is recorded when the last run tells the
        same (a run row would only grow the history) or another run holds the
        target (it is for recover or abandon to settle).
        """
        key = plan.target.key
        last = self.store.last_run(key)
        if last is None or last.outcome == outcome.value or self.store.holder(key) is not None:
            return
        run = gates.lock(plan)
        self.store.set_run_status(run.id, "finished", outcome.value, "nothing to change")

    def find_run(self, run_id: str | None) -> RunInfo:
        """The unfinished run to act on. Unnamed, it is the only one of a target the
        actor may see: the ids of others' runs are not listed to choose from."""
        if run_id:
            run = self.store.run(run_id)
            if run is None:
                raise UsageError(f"no run {run_id!r} in {redact_url(self.settings.state_url)}")
            if run.status not in ACTIVE:
                raise UsageError(f"run {run_id} is {run.status}; only unfinished runs need this")
            return run
        blocked = [r for r in self.store.blocked_runs() if self.may_see(r.target.key)]
        if not blocked:
            raise UsageError("no interrupted run to act on")
        if len(blocked) > 1:
            ids = ", ".join(r.id for r in blocked)
            raise UsageError(f"several unfinished runs ({ids}); name one")
        return blocked[0]

    def take(self, run: RunInfo) -> None:
        """Hold an unfinished run, unless its holder lives or another process took it."""
        if run.status == "running" and run.holder_alive is not False:
            raise locked_error(run, run.target)
        self.store.take_over(run)

    def interrupted_outside_actions(self, run: RunInfo) -> ApplyFailedError:
        """Ctrl-C between actions (the executor restores one caught within an action)."""
        now = self.store.run(run.id)
        if now is not None and now.status in ACTIVE:
            self.store.set_run_status(
                run.id, "interrupted", Outcome.INTERRUPTED.value, "interrupted between actions"
            )
            return ApplyFailedError(
                f"interrupted: run {run.id} may have applied part of its plan",
                hint=f"trueup recover {run.id}   (or: trueup abandon {run.id})",
            )
        outcome = now.outcome if now is not None else "unknown"
        return ApplyFailedError(
            f"interrupted after run {run.id} ended ({outcome}); nothing is left to recover",
            hint="trueup status",
        )
