"""A profile on a root: the machine side of the Pipeline.

Loading reads the profile and observes every target under the root through a
read-only file system (or answers from the memo of a converged plan);
execution writes through the executor with rollback material kept per run.
Recovery, which differs most between targets, is in profile_recovery.py.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trueup import audit, kinds
from trueup.canonical import sha256_hex
from trueup.declare.declared import Profile
from trueup.errors import UsageError, os_problem, user_paths
from trueup.fs import FileTooLargeError, ReadOnlyFS
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
from trueup.session import Session
from trueup.statcache import Witness
from trueup.state.store import RunInfo
from trueup.targets.base import Progress, check_overwrite, drift_items

if TYPE_CHECKING:  # what only a computed plan or a run needs loads with it, not with a memo's
    from trueup.execute.executor import RunResult
    from trueup.execute.gates import Gates
    from trueup.execute.rollback import RollbackStore
    from trueup.kinds.base import ObserveContext

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


class ProfileTarget:
    """A profile applied on one root (see targets.base.TargetAdapter)."""

    def __init__(self, session: Session, root: Path) -> None:
        self.session = session
        self.root = root

    def load(
        self, path: Path, force: Iterable[str] = (), permission: str | None = "plan"
    ) -> Prepared:
        """Load, observe and plan; read-only apart from the stat cache.

        ``permission`` is checked once the target is known and before anything
        is observed, so an unauthorised actor learns nothing about it.
        """
        root = _checked_root(self.root)
        started_ns = time.time_ns()
        memo = PlanMemo(
            self.session.settings.data / "cache" / "plans",
            path,
            root,
            {
                "force": sorted(force),
                "max_file_bytes": self.session.settings.max_file_bytes,
                # Applied records differ per store; the URL may hold a password.
                "state": sha256_hex(self.session.settings.state_url.encode()),
                # What other profiles applied on the root (plan/claims.py).
                "root_runs": self.session.store.root_history(str(root)),
            },
        )
        remembered = memo.recall()
        if remembered is not None:
            target = remembered.plan.target
            if permission is not None:
                self.session.gates(target, _EVENT[permission]).authorize(permission)
                permission = None
            history = self.session.store.run_history(target.key)
            if history == remembered.history and remembered.holds():
                return self._remembered(remembered, path, root, history)
        from trueup.declare.profile import load_profile
        from trueup.kinds.base import ObserveContext
        from trueup.plan.planner import compute_plan

        cache = self.session.store.load_stat_cache()
        witnesses: dict[str, Witness] = {}
        fs = ReadOnlyFS(cache, self.session.settings.max_file_bytes, witnesses)
        with user_paths(str(path)):  # the profile and its sources
            fs.follow(path)  # the profile, and every link on the way to it
            profile = load_profile(path, fs, self.session.settings.data / "cache" / "profiles")
        target = Target("profile", profile.id, profile.name, str(root))
        if permission is not None:
            self.session.gates(target, _EVENT[permission]).authorize(permission)
        history = self.session.store.run_history(target.key)
        applied = self.session.store.applied(target.key)
        beside = self.session.store.applied_beside(target)  # other profiles on the root
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
            beside,
            stop_dependents=True,
        )
        with self.session.store.if_writable():
            self.session.store.save_stat_cache(cache)
            self.session.store.replace_drift(target.key, drift_items(plan))
        summary = {"id": profile.id, "name": profile.name, "digest": profile.digest}
        if all(kinds.get(r.kind).witnessed for r in profile.resources):
            memo.keep(plan, summary, history, started_ns, witnesses)
        return Prepared(profile, target, root, resources, applied, observed, plan, fs, history)

    def _remembered(self, remembered: Remembered, path: Path, root: Path, history: str) -> Prepared:
        """A remembered plan changes nothing, so nothing needs its resources or records."""
        meta = remembered.profile
        profile = Profile(meta["id"], meta["name"], Path(os.path.abspath(path)), (), meta["digest"])
        fs = ReadOnlyFS(max_file_bytes=self.session.settings.max_file_bytes)
        plan = remembered.plan
        return Prepared(profile, plan.target, root, {}, {}, {}, plan, fs, history, True)

    def reload(self, prepared: Prepared, run: RunInfo) -> Prepared:
        plan = prepared.plan
        return ProfileTarget(self.session, prepared.root).load(
            Path(plan.source), plan.force, permission=None
        )

    def has_work(self, plan: Plan) -> bool:
        """Drift and steps for a person are a run too: the run records them."""
        return any(a.type is not ActionType.NO_OP for a in plan.actions)

    def guard(self, prepared: Prepared, gates: Gates) -> None:
        self.session.refuse_if_locked(prepared.target, prepared.plan.digest, gates)

    def settled(self, prepared: Prepared, gates: Gates) -> RunResult | None:
        plan = prepared.plan
        audit_applied(self.session, prepared.target, plan.digest, None)
        self.session.record_settled(plan, gates, Outcome.CONVERGED)
        return None

    def started(self, run: RunInfo, prepared: Prepared) -> None:
        self.session.store.record_revision(prepared.profile.id, prepared.profile.digest)

    def execute(
        self, run: RunInfo, prepared: Prepared, first_seq: int, progress: Progress | None
    ) -> RunResult | None:
        result = self.run_steps(run, prepared, first_seq, progress)
        audit_applied(self.session, prepared.target, prepared.plan.digest, result)
        return result

    def run_steps(
        self,
        run: RunInfo,
        prepared: Prepared,
        first_seq: int,
        progress: Progress | None = None,
        finish_run: bool = True,
    ) -> RunResult:
        """Execute the plan's steps under ``run`` from ``first_seq``.

        An apply, a recovery and a queued job's step all run a profile this
        way; a job's step leaves finishing the run to its worker (``finish_run``).
        """
        from trueup.execute.executor import Executor
        from trueup.fs import WritableFS

        cache = prepared.fs.cache
        fs = WritableFS(cache, self.session.settings.max_file_bytes, tag=run.id)
        executor = Executor(
            self.session.store,
            run,
            prepared.resources,
            prepared.applied,
            fs,
            rollback_for(self.session, run),
            prepared.root,
            progress,
            self.session.settings.batch_size,
            finish_run=finish_run,
        )
        result = executor.execute(prepared.plan, first_seq)
        self.session.store.save_stat_cache(cache)
        return result


def rollback_for(session: Session, run: RunInfo) -> RollbackStore:
    """Where a run of a profile keeps what it replaced, to restore on failure or recovery."""
    from trueup.execute.rollback import RollbackStore

    return RollbackStore(
        session.settings.data / "rollback" / run.id, Path(run.target.location), run.host
    )


def audit_applied(
    session: Session,
    target: Target,
    plan_digest: str,
    result: RunResult | None,
    event: str = "plan.applied",
) -> None:
    """An apply's (or a recovery's) outcome on the record; a failed or stopped run as failed."""
    failed = result is not None and result.outcome in (Outcome.FAILED, Outcome.INTERRUPTED)
    audit.record(
        session.store,
        event,
        "failed" if failed else "success",
        session.actor,
        target,
        reason=(result.message or result.outcome.value) if failed and result else None,
        plan_digest=plan_digest,
        run_id=result.run_id if result else None,
        detail={"outcome": result.outcome.value if result else "nothing to change"},
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


def _checked_root(root: Path) -> Path:
    root = root.expanduser()
    if not root.exists():
        raise UsageError(
            f"root {root} does not exist",
            hint=f"create it first: mkdir -p {root}   (or apply with --yes, which creates it)",
        )
    if not root.is_dir():
        raise UsageError(f"root {root} is not a directory")
    return Path(os.path.realpath(root))


def preview(prepared: Prepared, action: Action) -> str:
    """The diff a person reviews before applying ``action`` (read-only)."""
    if action.handed_over is not None:  # only forgotten: the target stays as it is
        return ""
    from trueup.kinds.base import ObserveContext

    resource = prepared.resources.get(action.resource_id)
    if resource is None:
        resource = prepared.applied[action.resource_id].resource
    ctx = ObserveContext(root=prepared.root, fs=prepared.fs, observed=prepared.observed)
    kind = kinds.get(action.kind)
    try:
        if action.type is ActionType.DRIFT_CONFLICT:
            return kind.discarded(action, resource, ctx)
        return kind.preview(action, resource, ctx)
    except TargetError:  # through a dropped link out of the root, removed first
        return f"{resource.target}: written once the link in its way is removed\n"
