"""The machine side, end to end: declare, observe, plan, gate, execute, record.

The CLI calls these functions and renders what they return; nothing here
prints or prompts (a ``confirm`` callback is passed in).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from trueup import audit, authz, kinds
from trueup.canonical import as_json, digest, sha256_hex
from trueup.crashpoints import reach
from trueup.declare.profile import Profile, load_profile
from trueup.errors import (
    ApplyFailedError,
    ConflictError,
    NotAuthorizedError,
    UsageError,
    os_problem,
    user_paths,
)
from trueup.execute.executor import (
    ActionResult,
    Executor,
    Restored,
    RunResult,
    in_flight,
    restore_interrupted,
    signals_interrupt,
)
from trueup.execute.gates import Gates, locked_error
from trueup.execute.leftovers import sweep_abandoned
from trueup.execute.rollback import RollbackStore
from trueup.fs import FileTooLargeError, ReadOnlyFS, Witness, WritableFS
from trueup.kinds.base import ObserveContext
from trueup.model import (
    OVERSIZED,
    UNREADABLE,
    Action,
    ActionType,
    Applied,
    Observed,
    Outcome,
    Plan,
    Resource,
    Target,
)
from trueup.paths import RootResolver, TargetError, find_overlaps, within
from trueup.plan.memo import PlanMemo, Remembered
from trueup.plan.planner import compute_plan
from trueup.redact import redact_url
from trueup.settings import Settings
from trueup.state.store import ACTIVE, RunAction, RunInfo, Store

SAVED_PLAN_SCHEMA = "trueup.saved-plan/1"
#: What grant, token and audit-log access is recorded against (no run's target).
ACCESS = Target("access", "grants", "grants, tokens and the audit log", "")
T = TypeVar("T")
# Any version: a plan saved by another trueup is named as such, not read as a profile.
_SAVED_PLAN_END = re.compile(rb'"schema"\s*:\s*"trueup\.saved-plan/[^"\\]*"\s*}\s*$')

# The audit event a refused permission is recorded under.
_EVENT = {"plan": "plan.computed", "apply": "plan.applied"}


@dataclass
class Prepared:
    """Everything a plan was computed from, kept so apply can use the same inputs."""

    profile: Profile
    target: Target
    root: Path
    resources: dict[str, Resource]
    applied: dict[str, Applied]
    observed: dict[str, Observed]
    plan: Plan
    fs: ReadOnlyFS
    #: The target's run history when observation began (``Store.run_history``).
    history: str
    #: Answered by plan/memo.py: nothing was resolved or observed, and
    #: ``profile.resources``, ``resources``, ``applied`` and ``observed`` are empty.
    remembered: bool = False


class Engine:
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

    def may_see(self, target_key: str) -> bool:
        """Whether the actor may know of a target at all: what it may not plan, it does not see."""
        return authz.allowed(self.store, self.actor, "plan", target_key)

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
                self._actor = authz.resolve_actor(self.store, claim, token)
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

    # -- plan ---------------------------------------------------------------
    def prepare(
        self,
        path: Path,
        root: Path,
        force: Iterable[str] = (),
        permission: str | None = "plan",
    ) -> Prepared:
        """Load, observe and plan; read-only apart from the stat cache.

        ``permission`` is checked once the target is known and before anything
        is observed, so an unauthorised actor learns nothing about it.
        """
        root = _checked_root(root)
        started_ns = time.time_ns()
        memo = PlanMemo(
            self.settings.data / "cache" / "plans",
            path,
            root,
            {
                "force": sorted(force),
                "max_file_bytes": self.settings.max_file_bytes,
                # Applied records differ per store; the URL may hold a password.
                "state": sha256_hex(self.settings.state_url.encode()),
            },
        )
        remembered = memo.recall()
        if remembered is not None:
            target = remembered.plan.target
            if permission is not None:
                self.gates(target, _EVENT[permission]).authorize(permission)
                permission = None
            history = self.store.run_history(target.key)
            if history == remembered.history and remembered.holds():
                return self._remembered(remembered, path, root, history)
        cache = self.store.load_stat_cache()
        witnesses: dict[str, Witness] = {}
        fs = ReadOnlyFS(cache, self.settings.max_file_bytes, witnesses)
        with user_paths(str(path)):  # the profile and its sources
            fs.follow(path)  # the profile, and every link on the way to it
            profile = load_profile(path, fs, self.settings.data / "cache" / "profiles")
        target = Target("profile", profile.id, profile.name, str(root))
        if permission is not None:
            self.gates(target, _EVENT[permission]).authorize(permission)
        history = self.store.run_history(target.key)
        applied = self.store.applied(target.key)
        resources = {r.id: r for r in profile.resources}
        check_overwrite(force, resources, applied, profile.path)
        ctx = ObserveContext(root=root, fs=fs)
        dropped = [a.resource for rid, a in applied.items() if rid not in resources]
        observed = observe_all(
            [*profile.resources, *dropped], ctx, str(profile.path), {r.target for r in dropped}
        )
        if ctx.resolver.links:  # folders linked inside the root: targets may meet there
            _refuse_linked_overlaps(profile.path, resources, applied, ctx.resolver)
        plan = compute_plan(
            target,
            str(profile.path),
            profile.digest,
            profile.resources,
            observed,
            applied,
            frozenset(force),
        )
        with self.store.if_writable():
            self.store.save_stat_cache(cache)
            self.store.replace_drift(target.key, drift_items(plan))
        summary = {"id": profile.id, "name": profile.name, "digest": profile.digest}
        memo.keep(plan, summary, history, started_ns, witnesses)
        return Prepared(profile, target, root, resources, applied, observed, plan, fs, history)

    def _remembered(self, remembered: Remembered, path: Path, root: Path, history: str) -> Prepared:
        """A remembered plan changes nothing, so nothing needs its resources or records."""
        meta = remembered.profile
        profile = Profile(meta["id"], meta["name"], Path(os.path.abspath(path)), (), meta["digest"])
        fs = ReadOnlyFS(max_file_bytes=self.settings.max_file_bytes)
        plan = remembered.plan
        return Prepared(profile, plan.target, root, {}, {}, {}, plan, fs, history, True)

    def plan(self, path: Path, root: Path, force: Iterable[str] = ()) -> Prepared:
        """A plan for a person to review; computing it is audited."""
        prepared = self.prepare(path, root, force)
        with self.store.if_writable():
            audit.record(
                self.store,
                "plan.computed",
                "success",
                self.actor,
                prepared.target,
                plan_digest=prepared.plan.digest,
            )
        return prepared

    def check_fresh(self, expected: Plan, prepared: Prepared) -> None:
        """Refuse (and audit) a saved plan that live state has moved away from."""
        self.gates(prepared.target, "plan.applied", expected.digest).fresh(expected, prepared.plan)

    @staticmethod
    def preview(prepared: Prepared, action: Action) -> str:
        """The diff a person reviews before applying ``action`` (read-only)."""
        if action.handed_over is not None:  # only forgotten: the target stays as it is
            return ""
        resource = prepared.resources.get(action.resource_id)
        if resource is None:
            resource = prepared.applied[action.resource_id].resource
        ctx = ObserveContext(root=prepared.root, fs=prepared.fs)
        try:
            return kinds.get(action.kind).preview(action, resource, ctx)
        except TargetError:  # through a dropped link out of the root, removed first
            return f"{resource.target}: written once the link in its way is removed\n"

    # -- apply --------------------------------------------------------------
    def apply(
        self,
        prepared: Prepared,
        expected: Plan | None = None,
        progress: Callable[[int], None] | None = None,
        confirmation: str | None = None,
        paused: bool = False,
    ) -> RunResult | None:
        """Run the plan behind the gates; ``None`` when there is nothing to do.

        Gates in order (execute/gates.py): authorization, staleness, typed
        confirmation of destroying steps, the lock. Refusals and the result
        are audited as ``plan.applied``.

        Once the lock is held, everything is observed and planned again and
        must give the same plan, when it may have moved: ``paused`` (a person
        reviewed the plan, so time passed) or another run of the target
        started since ``prepared`` was observed. Otherwise the plan is
        milliseconds old and no trueup touched the target since: observing
        10,000 files a second time would only double the cost of an apply
        (each write still re-checks its source's digest).
        """
        plan = prepared.plan
        gates = self.gates(prepared.target, "plan.applied", plan.digest)
        gates.authorize("apply")
        if expected is not None:
            gates.fresh(expected, plan)
        gates.confirm(plan.actions, confirmation)
        self.refuse_if_locked(prepared, gates)
        if not any(a.type is not ActionType.NO_OP for a in plan.actions):
            self._audit_applied(prepared.target, plan.digest, None)
            self.record_settled(plan, gates, Outcome.CONVERGED)
            return None
        # While the run holds the lock, SIGTERM ends it as Ctrl-C would.
        with signals_interrupt(KeyboardInterrupt):
            run = gates.lock(plan)
            try:
                reach("run-started")
                fresh = prepared
                history = self.store.run_history(prepared.target.key, run.id)
                if paused or history != prepared.history:
                    fresh = self.prepare(
                        Path(plan.source), prepared.root, plan.force, permission=None
                    )
                    gates.fresh(plan, fresh.plan)
                self.store.record_revision(prepared.profile.id, prepared.profile.digest)
            except BaseException:  # a stale plan, or Ctrl-C: nothing was changed
                self.store.set_run_status(run.id, "refused", "refused", "stopped before any change")
                raise
            try:
                result = self._execute(run, fresh, 0, progress)
            except KeyboardInterrupt:
                raise self._interrupted_outside_actions(run) from None
        self._audit_applied(prepared.target, plan.digest, result)
        return result

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

    def refuse_if_locked(self, prepared: Prepared, gates: Gates | None = None) -> None:
        """Refuse (and audit) an apply while another run holds the target.

        Checked before the plan is shown too: a plan computed in the middle of
        another run's changes says little, and "converged" followed by a
        refusal says less.
        """
        holder = self.store.holder(prepared.target.key)
        if holder is not None:
            gates = gates or self.gates(prepared.target, "plan.applied", prepared.plan.digest)
            raise gates.refuse(locked_error(holder, prepared.target))

    def _interrupted_outside_actions(self, run: RunInfo) -> ApplyFailedError:
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

    def _audit_applied(
        self,
        target: Target,
        plan_digest: str,
        result: RunResult | None,
        event: str = "plan.applied",
    ) -> None:
        failed = result is not None and result.outcome in (Outcome.FAILED, Outcome.INTERRUPTED)
        audit.record(
            self.store,
            event,
            "failed" if failed else "success",
            self.actor,
            target,
            reason=(result.message or result.outcome.value) if failed and result else None,
            plan_digest=plan_digest,
            run_id=result.run_id if result else None,
            detail={"outcome": result.outcome.value if result else "nothing to change"},
        )

    def _execute(
        self,
        run: RunInfo,
        prepared: Prepared,
        first_seq: int,
        progress: Callable[[int], None] | None,
    ) -> RunResult:
        cache = prepared.fs.cache
        fs = WritableFS(cache, self.settings.max_file_bytes, tag=run.id)
        executor = Executor(
            self.store,
            run,
            prepared.resources,
            prepared.applied,
            fs,
            self.rollback_for(run),
            prepared.root,
            progress,
            self.settings.batch_size,
        )
        result = executor.execute(prepared.plan, first_seq)
        self.store.save_stat_cache(cache)
        return result

    def rollback_for(self, run: RunInfo) -> RollbackStore:
        return RollbackStore(
            self.settings.data / "rollback" / run.id, Path(run.target.location), run.host
        )

    # -- interrupted runs ---------------------------------------------------
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

    def recover(
        self, run_id: str | None, progress: Callable[[int], None] | None = None
    ) -> RunResult:
        """Restore what was in flight, then redo the rest of the run and verify it."""
        run = self.find_run(run_id)
        if run.target.kind == "org" and not run.job:
            from trueup.org.engine import OrgEngine

            org = OrgEngine(self.settings, self)
            try:
                return org.recover(run).run_result()
            finally:
                org.close_services()
        gates = self.gates(run.target, "run.recovered", run.plan_digest)
        gates.authorize("apply")  # before saying anything of the run
        if run.job:
            raise UsageError(
                f"run {run.id} is a queued job: workers resume it from its checkpoint",
                hint=f"trueup jobs resume {run.id}   (or: trueup abandon {run.id})",
            )
        try:
            # A signal outside an action ends the recovery as it ends an apply:
            # the run is left interrupted, for another recover.
            with signals_interrupt(KeyboardInterrupt):
                result = self._recover(run, progress)
        except ConflictError as exc:  # its holder is still alive: refused, and recorded
            raise gates.refuse(exc) from None
        except KeyboardInterrupt:
            raise self._interrupted_outside_actions(run) from None
        self._audit_applied(run.target, run.plan_digest or "", result, "run.recovered")
        return result

    def _recover(self, run: RunInfo, progress: Callable[[int], None] | None) -> RunResult:
        rollback = self.rollback_for(run)
        journaled = self.store.run_actions(run.id)
        # Before the run is taken over: a recovery in the wrong place leaves it as it is.
        rollback.check(ref for _, ref in in_flight(journaled))
        self.take(run)
        fs = WritableFS(max_file_bytes=self.settings.max_file_bytes, tag=run.id)
        restored = restore_interrupted(self.store, run, rollback, fs, journaled)
        self.store.event(
            run.id,
            "run.recovered",
            {
                "restored": restored.in_flight,
                "kept_as_changed": restored.kept,
                "temp_swept": restored.swept,
            },
        )
        source = Path(run.declaration or "")
        if not run.declaration or not source.exists():
            return self._not_redone(
                run,
                rollback,
                restored,
                f"as its declaration {source} no longer exists: to finish it, put that "
                "file back, then trueup plan and apply",
            )
        started = self.store.last_event(run.id, "run.started") or {}
        prepared = self.prepare(source, Path(run.target.location), started.get("force", ()))
        surprises = unplanned(prepared.plan, journaled)
        if started.get("declared") not in (None, prepared.plan.declaration):
            # "create file" reads the same whatever the content: compare what was declared.
            surprises.insert(0, f"{source} changed after the run planned it")
        if surprises:
            # Nobody reviewed these: the run was to do something else there.
            return self._not_redone(
                run,
                rollback,
                restored,
                f"as it is not what the run planned any more ({surprises[0]}): review it with "
                "trueup plan, then apply",
            )
        return self._execute(run, prepared, self.store.next_seq(run.id), progress)

    def _not_redone(
        self, run: RunInfo, rollback: RollbackStore, restored: Restored, why: str
    ) -> RunResult:
        """Finish a recovered run without redoing the rest: a person decides what comes next."""
        kept = f" (kept as changed after the run: {', '.join(restored.kept)})"
        message = (
            f"recovered: in-flight actions restored{kept if restored.kept else ''}; the rest "
            f"was not redone, {why}"
        )
        outcome = Outcome.HUMAN_ACTION_REQUIRED
        self.store.set_run_status(run.id, "finished", outcome.value, message)
        rollback.discard()
        done = [
            ActionResult(a.seq, a.action, a.status, message=a.message or "")
            for a in self.store.run_actions(run.id)
            if a.status == "succeeded"
        ]
        return RunResult(run.id, outcome, done, message)

    def abandon(self, run_id: str | None) -> RunInfo:
        """Release an unfinished run's lock, leaving targets exactly as they are."""
        run = self.find_run(run_id)
        gates = self.gates(run.target, "run.abandoned", run.plan_digest)
        gates.authorize("apply")
        try:
            self.take(run)
        except ConflictError as exc:
            raise gates.refuse(exc) from None
        rollback = self.rollback_for(run)
        fs = WritableFS(tag=run.id)
        rollback.sweep_temp_files(fs)
        rollback.remove_empty_folders(fs)
        fs.close()
        sweep_abandoned(self.store, run)  # the material may be gone: the targets are known
        self.store.set_run_status(
            run.id, "abandoned", "abandoned", "abandoned by " + self.actor.key
        )
        rollback.discard()
        audit.record(
            self.store,
            "run.abandoned",
            "success",
            self.actor,
            run.target,
            plan_digest=run.plan_digest,
            run_id=run.id,
        )
        found = self.store.run(run.id)
        assert found is not None
        return found

    # -- saved plans --------------------------------------------------------
    @staticmethod
    def save_plan(plan: Plan, path: Path) -> None:
        """Write a saved plan, atomically; never over a file that is not one.

        A mistyped ``-o`` must not replace the profile, one of its sources or
        anything else that happens to be there.
        """
        if path.is_dir():
            raise UsageError(f"-o {path}: is a folder", hint="name a file, e.g. -o plan.json")
        if path.exists() and not is_saved_plan(path):
            raise UsageError(
                f"-o {path}: refusing to overwrite a file that is not a trueup saved plan",
                hint="name a new file, e.g. -o plan.json",
            )
        document = {"schema": SAVED_PLAN_SCHEMA, "digest": plan.digest, "plan": plan.body()}
        data = json.dumps(document, indent=2, sort_keys=True, default=as_json).encode()
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise UsageError(
                f"-o {path}: cannot write the plan there: {exc.strerror or exc}",
                hint="name a file in a folder that exists and that you can write to",
            ) from None

    def load_saved_plan(self, path: Path) -> Plan:
        try:
            document = json.loads(path.read_bytes())
            schema = document.get("schema")
            if schema != SAVED_PLAN_SCHEMA:
                raise ValueError(
                    f"it is a {schema!r} plan, and this trueup reads {SAVED_PLAN_SCHEMA} only: "
                    "compute the plan again with this trueup"
                    if str(schema).startswith("trueup.saved-plan/")
                    else f"schema is {schema!r}, not {SAVED_PLAN_SCHEMA}"
                )
            plan = Plan.from_body(document["plan"])
            texts = (plan.source, plan.declaration, plan.target.location, plan.target.id)
            if not all(isinstance(text, str) for text in texts):
                raise ValueError("its source, declaration and target must be strings")
            recorded = document["digest"]
        except KeyError as exc:  # str(KeyError) is only the quoted key
            raise UsageError(f"{path}: not a trueup saved plan: no field {exc}") from None
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise UsageError(f"{path}: not a trueup saved plan: {exc}") from None
        if digest(document["plan"]) != recorded or plan.digest != recorded:
            # Bad input, not a world that moved: the file was edited or damaged. The
            # target it names is audited with the refusal, as the digest it claims.
            raise self.gates(plan.target, "plan.applied", str(recorded)).refuse(
                UsageError(
                    f"{path}: the plan's content does not match its digest (the file was "
                    "edited or damaged); nothing was changed",
                    hint=f"compute the plan again: {_plan_command(plan)}",
                )
            )
        if not os.path.exists(plan.source):  # its target is known: the refusal is audited
            raise self.gates(plan.target, "plan.applied", plan.digest).refuse(
                UsageError(
                    f"{path}: the plan was computed from {plan.source}, which is not there "
                    "any more; nothing was changed",
                    hint="put it back, or compute the plan again from where it is: "
                    + _plan_command(plan),
                )
            )
        return plan


def _plan_command(plan: Plan) -> str:
    """The command that computes a plan like ``plan`` again."""
    if plan.target.kind == "org":
        return "trueup org plan ORG.toml -o PLAN.json"
    return f"trueup plan PROFILE --root {plan.target.location} -o PLAN.json"


def is_saved_plan(path: Path) -> bool:
    """Whether ``path`` is a saved plan: its last member is a saved-plan ``schema``.

    Keys are sorted, so ``schema`` comes last; right before the closing brace
    of a valid document it is a member of the outermost object, which no
    profile has (a profile mentioning the schema's name elsewhere is a profile).
    Read from the end only: a saved plan of 10,000 actions is megabytes.
    """
    if path.suffix.lower() != ".json":
        return False
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4096))
            tail = handle.read(4096)
    except OSError:
        return False
    return _SAVED_PLAN_END.search(tail) is not None


def check_overwrite(
    force: Iterable[str], declared: Iterable[str], applied: Iterable[str], source: Path
) -> None:
    """Refuse an ``--overwrite`` id that names nothing: a typo must not pass unnoticed."""
    unknown = sorted(set(force) - set(declared) - set(applied))
    if unknown:
        raise UsageError(
            f"--overwrite {unknown[0]}: no resource has that id in {source} "
            "or among those trueup applied here",
            hint="use the id of a resource the plan reports as drift",
        )


def _refuse_linked_overlaps(
    where: Path,
    declared: Mapping[str, Resource],
    applied: Mapping[str, Applied],
    resolver: RootResolver,
) -> None:
    """Refuse two targets that are one place once symlinked folders are followed.

    Dropped resources count too: removing one there would remove the other.
    """
    places = {r.id: r for r in (a.resource for a in applied.values())}
    places.update(declared)  # a declared resource is where it is declared now
    clashes = find_overlaps((r.id, resolver.canonical(r.target)) for r in places.values())
    if not clashes:
        return
    a, b = clashes[0]
    gone = next((rid for rid in (a, b) if rid not in declared), None)
    other = b if gone == a else a
    raise UsageError(
        f"{where}: resources {a!r} and {b!r} have overlapping targets once "
        "the symlinked folders under the root are followed"
        + (f" ({gone!r} is no longer declared)" if gone else ""),
        hint=f"apply once without {other!r}, so that {gone!r} is removed, then declare it"
        if gone
        else "declare each place once, by one path",
    )


def observe_all(
    resources: Iterable[Resource],
    ctx: ObserveContext,
    where: str,
    dropped: Set[str] = frozenset(),
) -> dict[str, Observed]:
    """Observe every resource; an error names ``where`` (the profile) and the resource.

    A target reached through a link that leads out of the root is refused,
    unless the link is the target of a ``dropped`` resource: trueup made that
    link and may remove it first (planner._clearing), and if it may not, the
    target is blocked, a conflict for a person like any other obstacle.
    """
    observed = {}
    for resource in resources:
        try:  # a plain try, not a context manager: this runs once per resource
            observed[resource.id] = kinds.get(resource.kind).observe(resource, ctx)
        except FileTooLargeError as exc:  # live, not declared: the rest can still be planned
            observed[resource.id] = Observed(OVERSIZED, None, {"reason": exc.message})
        except TargetError as exc:
            if resource.target not in dropped and within(resource.target, dropped):
                observed[resource.id] = Observed("blocked", None, {"reason": str(exc)})
                continue
            raise UsageError(f"{where}: resource {resource.id!r}: field 'target': {exc}") from None
        except UsageError as exc:
            raise UsageError(
                f"{where}: resource {resource.id!r}: {exc.message}", hint=exc.hint
            ) from None
        except PermissionError as exc:  # this target waits for a person; the rest goes on
            observed[resource.id] = Observed(UNREADABLE, None, {"reason": os_problem(exc)})
        except OSError as exc:  # the target is the user's to fix (see errors.user_paths)
            raise UsageError(
                f"{where}: resource {resource.id!r}: field 'target': {os_problem(exc)}"
            ) from None
    return observed


def unplanned(plan: Plan, journaled: Sequence[RunAction]) -> list[str]:
    """Changes a recovery would make that the interrupted run did not plan.

    A file somebody wrote or edited after the crash turns "create file" into
    "update file" (or into drift): redoing that unasked could overwrite their
    work, so it waits for a person to review a fresh plan. A run stopped
    before it journaled anything changed nothing: its plan is simply redone.
    """
    if not journaled:
        return []
    planned = {(a.action.resource_id, a.action.type, a.action.summary) for a in journaled}
    # What each target looked like to the run's plan: a target that looks
    # otherwise now (an edit after the crash, kept by the restore) is not the
    # one the run was to change, even where the action reads the same.
    seen = {a.action.resource_id: a.observed for a in journaled if a.observed is not None}
    surprises = []
    for action in plan.actions:
        if not action.changes_target:  # verifying or forgetting overwrites nobody's work
            continue
        rid = action.resource_id
        if (rid, action.type, action.summary) not in planned:
            surprises.append(f"{rid}: {action.summary}")
        elif rid in seen and plan.observed.get(rid) != seen[rid]:
            surprises.append(f"{rid}: its target changed after the run planned to {action.summary}")
    return surprises


def drift_items(plan: Plan) -> list[dict[str, Any]]:
    return [
        {
            "rid": action.resource_id,
            "summary": action.summary,
            "observed": action.payload.get("drift", {}).get("observed"),
            "applied": action.payload.get("drift", {}).get("applied"),
            "desired": action.payload.get("drift", {}).get("desired"),
        }
        for action in plan.actions
        if action.type is ActionType.DRIFT_CONFLICT
    ]


def _checked_root(root: Path) -> Path:
    root = root.expanduser()
    if not root.exists():
        raise UsageError(f"root {root} does not exist", hint=f"create it first: mkdir -p {root}")
    if not root.is_dir():
        raise UsageError(f"root {root} is not a directory")
    return Path(os.path.realpath(root))
