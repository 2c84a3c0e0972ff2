"""Compute a plan. Pure: no I/O, no clock, no randomness.

Everything kind-specific is the kind's ``plan``; this module only orders
resources, asks each kind for its decision, and assembles the plan whose
identity covers the observations it was computed from. What paths nesting
means for file-like kinds (renames, overlaps, restructured trees) is
restructure.py's.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from trueup import kinds
from trueup.errors import UsageError
from trueup.kinds.base import BY_HAND, Decision
from trueup.model import (
    ABSENT,
    OVERSIZED,
    UNREADABLE,
    Action,
    ActionType,
    Applied,
    Observed,
    Plan,
    Resource,
    Target,
)
from trueup.paths import within
from trueup.plan import claims, restructure


def topological_order(resources: Iterable[Resource]) -> list[Resource]:
    """Dependencies first, ties broken by id; a cycle is an error naming it."""
    by_id = {r.id: r for r in resources}
    if not any(r.depends_on for r in by_id.values()):  # the usual case: ids in order
        return [by_id[rid] for rid in sorted(by_id)]
    indegree = {rid: 0 for rid in by_id}
    dependents: dict[str, list[str]] = {rid: [] for rid in by_id}
    for resource in by_id.values():
        for dep in resource.depends_on:
            if dep not in by_id:
                raise UsageError(f"resource {resource.id!r} depends on unknown resource {dep!r}")
            indegree[resource.id] += 1
            dependents[dep].append(resource.id)
    ready = [rid for rid, n in indegree.items() if n == 0]
    heapq.heapify(ready)
    ordered: list[Resource] = []
    while ready:
        rid = heapq.heappop(ready)
        ordered.append(by_id[rid])
        for child in dependents[rid]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, child)
    if len(ordered) != len(by_id):
        raise UsageError(f"dependency cycle: {' -> '.join(_find_cycle(by_id, indegree))}")
    return ordered


def _find_cycle(by_id: Mapping[str, Resource], indegree: Mapping[str, int]) -> list[str]:
    """Walk dependencies among the unresolved resources until one repeats."""
    stuck = sorted(rid for rid, n in indegree.items() if n > 0)
    path: list[str] = []
    current = stuck[0]
    while current not in path:
        path.append(current)
        current = next(d for d in sorted(by_id[current].depends_on) if indegree.get(d, 0) > 0)
    return [*path[path.index(current) :], current]


def compute_plan(
    target: Target,
    source: str,
    declaration: str,
    resources: Iterable[Resource],
    observed: Mapping[str, Observed],
    applied: Mapping[str, Applied],
    force: frozenset[str] = frozenset(),
    beside: claims.Beside | None = None,
    stop_dependents: bool = False,
) -> Plan:
    """Decide one action per declared and per dropped resource, removals first.

    ``beside``: the applied records of the other profiles on the same root; what
    one of them applied first is drift naming it (claims.py). ``stop_dependents``:
    what depends on a resource that waits for a person is not applied either
    (``blocked_dependents``).
    """
    ordered = topological_order(resources)
    declared = {r.id for r in ordered}
    gone = sorted(set(applied) - declared)
    heirs = restructure.heirs(ordered, {rid: applied[rid] for rid in gone})
    inherited: dict[str, Applied] = {}
    for rid, taker in heirs.items():  # the first dropped record, for an heir without its own
        if taker not in applied:
            inherited.setdefault(taker, applied[rid])
    covered = restructure.covered(
        {rid: applied[rid].resource for rid in gone if rid not in heirs}, ordered
    )
    inherited.update(restructure.adopted(covered, ordered, applied, inherited))
    clearing = restructure.clearing(covered, {r.id: r for r in ordered}, applied, observed, force)
    cleared = {applied[rid].resource.target for rid in clearing}
    emptied = {d.frees for d in clearing.values() if d.frees is not None}
    if cleared:  # planned, and checked before it is written, as what the removal leaves
        observed = {
            **observed,
            **{r.id: ABSENT for r in ordered if within(r.target, cleared) or r.target in emptied},
        }
    actions = [
        _action(
            resource,
            (beside and claims.claimed(resource, applied.get(resource.id), beside))
            or _decide(
                resource,
                observed.get(resource.id, ABSENT),
                applied.get(resource.id) or inherited.get(resource.id),
                resource.id in force,
            ),
            resource.depends_on,
        )
        for resource in ordered
    ]
    if stop_dependents:
        actions = blocked_dependents(actions)
    decided = {a.resource_id: a for a in actions}
    dropped: list[Action] = []
    for rid in gone:
        record = applied[rid]
        heir = heirs.get(rid)
        seen = observed.get(rid, ABSENT)
        covering = None if heir is not None else covered.get(rid)
        if rid in clearing:
            decision = clearing[rid]
        elif seen.state in (OVERSIZED, UNREADABLE):
            decision = _unreadable(seen)
        elif covering is not None and not (
            decided[covering].type.applies or covering in applied
        ):  # as for an heir: the record stays until the id declared there is applied
            decision = Decision(
                ActionType.NO_OP,
                f"kept until {covering!r}, declared where it is now, is applied",
            )
        elif covering is not None:
            # Another kind (or a folder around or inside it) is declared there now:
            # removing the old one would remove what the new one declares.
            decision = Decision(
                ActionType.REMOVE_RESOURCE,
                f"forget: {record.resource.target} is where {covering!r} is declared now "
                "(nothing is removed)",
                handed_over=covering,
            )
        elif heir is None:
            decision = kinds.get(record.resource.kind).plan(None, seen, record, rid in force)
        elif decided[heir].type.applies or (
            heir in applied and not restructure.moved(record.resource, applied[heir].resource)
        ):
            decision = Decision(
                ActionType.REMOVE_RESOURCE,
                f"forget: {record.resource.target} is declared as {heir!r} now",
                handed_over=heir,
            )
        else:  # the heir is not applied yet (drift...): keep the record
            decision = Decision(
                ActionType.NO_OP, f"kept until {heir!r}, declared at its target now, is applied"
            )
        dropped.append(_action(record.resource, decision, (), dropped=True))
    # Removals first: they free what a declaration may take next (a renamed app's
    # domain or name at a provider, a file's name for a folder). A handed-over id
    # is forgotten last, once the id that took its place has been applied.
    first = [a for a in dropped if a.type is ActionType.REMOVE_RESOURCE and a.handed_over is None]
    actions = first + actions + [a for a in dropped if a not in first]
    return Plan(
        target=target,
        source=source,
        declaration=declaration,
        observed={rid: obs.identity() for rid, obs in sorted(observed.items())},
        actions=tuple(actions),
        force=tuple(sorted(force)),
    )


#: What stops a dependency chain: the resource waits for a person (or for drift
#: to be decided), so nothing built on it may go ahead as if it were in place.
_STOPS = frozenset({ActionType.HUMAN_ACTION, ActionType.DRIFT_CONFLICT, ActionType.BLOCKED})


def blocked_dependents(actions: list[Action]) -> list[Action]:
    """The seam's stop rule (machine-sync.md): an action that would change something
    but depends, directly or not, on a resource that needs a person or is in drift
    becomes ``blocked``, journaled skipped with the reason, never applied.

    Independent actions go on. ``actions`` are in dependency order (dependencies
    first), so one pass carries a block down every chain.
    """
    stopped: dict[str, Action] = {}
    out = []
    for action in actions:
        waiting = [dep for dep in action.before if dep in stopped]
        if waiting and action.type.applies:
            first = stopped[waiting[0]]
            why = (
                "needs a person"
                if first.type is ActionType.HUMAN_ACTION
                else ("is in drift" if first.type is ActionType.DRIFT_CONFLICT else "is blocked")
            )
            action = replace(
                action,
                type=ActionType.BLOCKED,
                summary=f"blocked: depends on {first.resource_id!r}, which {why}; "
                f"not applied until it is resolved (it would have: {action.summary})",
                destroys=False,
                migrates=False,
            )
        if action.type in _STOPS:
            stopped[action.resource_id] = action
        out.append(action)
    return out


def _where(resource: Resource) -> str:
    return f"{resource.kind} {resource.target}"


def _moved_decision(was: Resource, now: Resource) -> Decision:
    if was.target == now.target:  # another kind at the same place: the old one is in the way
        how = (
            f"drop {now.id} from the profile and apply (trueup removes the {was.kind} it wrote "
            f"if unmodified), then declare the {now.kind}"
        )
    else:
        how = (
            f"give the new declaration a new id (the old one is then removed if unmodified), "
            f"or rerun with --overwrite {now.id} to manage {now.target} and leave "
            f"{was.target} as it is"
        )
    return Decision(
        ActionType.HUMAN_ACTION,
        f"declared as {_where(now)}, but trueup applied this id as {_where(was)}: {how}",
        {"moved": {"from": _where(was), "to": _where(now)}},
    )


def _decide(resource: Resource, seen: Observed, record: Applied | None, forced: bool) -> Decision:
    """A declared resource's decision, against the record of what trueup wrote there.

    ``record`` is the resource's own, or one it took over from a renamed id.
    """
    if seen.state in (OVERSIZED, UNREADABLE):
        return _unreadable(seen)
    kind = kinds.get(resource.kind)
    plan = kind.plan
    if record is None:
        decision = plan(resource, seen, None, forced)
        if decision.type is not ActionType.NO_OP or seen.state == "absent":
            return decision
        return kind.unrecorded(resource, seen) or decision
    if restructure.moved(record.resource, resource):
        if not forced:
            return _moved_decision(record.resource, resource)
        return _recorded(
            plan(resource, seen, None, forced),
            f"{record.resource.target} (applied before) is left as it is",
            moved={"from": _where(record.resource)},
        )
    decision = plan(resource, seen, record, forced)
    if record.resource.id == resource.id:
        if decision.type is ActionType.NO_OP and _stale(record, seen):
            # As declared, yet not as recorded (a run abandoned after it wrote):
            # the record is refreshed, or the next change would look like drift.
            return _recorded(decision, "its record is refreshed")
        return decision
    return _recorded(decision, f"taken over from {record.resource.id!r}")


def _unreadable(seen: Observed) -> Decision:
    """A live file too big to read, or that trueup may not read, cannot be compared, so
    nothing is decided about it.

    Only this resource waits for a person; the rest of the plan goes on.
    """
    if seen.state == UNREADABLE:
        return Decision(
            ActionType.DRIFT_CONFLICT,
            f"drift: {seen.detail['reason']}: trueup may not read it, so it is not compared "
            "and left exactly as it is; give your user access to it (or move it away), then "
            "plan again",
            BY_HAND,
        )
    return Decision(
        ActionType.HUMAN_ACTION,
        f"{seen.detail['reason']}: not read, so not compared; rerun with a larger "
        "--max-file-bytes, or shrink or move the file by hand",
    )


def _stale(record: Applied, seen: Observed) -> bool:
    return (
        restructure.path_kind(record.resource.kind) is not None
        and record.digest is not None
        and seen.digest is not None
        and seen.digest != record.digest
    )


def _recorded(decision: Decision, note: str, **payload: Any) -> Decision:
    """A decision about a record made under another target or id, noted in its summary.

    Already as declared, it is verified and recorded (verify-only): the
    record must be rewritten, or every later plan would meet the old one again.
    """
    kind = ActionType.VERIFY_ONLY if decision.type is ActionType.NO_OP else decision.type
    return replace(
        decision,
        type=kind,
        summary=f"{decision.summary}; {note}",
        payload={**decision.payload, **payload},
    )


def _action(
    resource: Resource, decision: Decision, before: tuple[str, ...], dropped: bool = False
) -> Action:
    payload = dict(decision.payload)
    if decision.drift is not None:
        payload["drift"] = dict(decision.drift)
    if dropped:  # no longer declared: there is no declared version to take
        payload["dropped"] = True
    return Action(
        resource_id=resource.id,
        kind=resource.kind,
        type=decision.type,
        summary=decision.summary,
        payload=payload,
        before=tuple(sorted(before)) if before else (),
        destroys=decision.destroys,
        migrates=decision.migrates,
        handed_over=decision.handed_over,
        frees=decision.frees,
        exclusive=decision.exclusive,
    )
