"""Compute a plan. Pure: no I/O, no clock, no randomness.

Everything kind-specific is the kind's ``plan``; this module only orders
resources, asks each kind for its decision, and assembles the plan whose
identity covers the observations it was computed from.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import replace

from trueup import kinds
from trueup.errors import UsageError
from trueup.kinds.base import Decision
from trueup.model import (
    ABSENT,
    HANDED_OVER,
    Action,
    ActionType,
    Applied,
    Observed,
    Plan,
    Resource,
    Target,
)


def topological_order(resources: Iterable[Resource]) -> list[Resource]:
    """Dependencies first, ties broken by id; a cycle is an error naming it."""
    by_id = {r.id: r for r in resources}
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
) -> Plan:
    """Decide one action per declared and per dropped resource, removals first."""
    ordered = topological_order(resources)
    declared = {r.id for r in ordered}
    heirs = _heirs(ordered, {rid: applied[rid] for rid in sorted(set(applied) - declared)})
    inherited: dict[str, Applied] = {}
    for rid, heir in heirs.items():  # the first dropped record, for an heir without its own
        if heir not in applied:
            inherited.setdefault(heir, applied[rid])
    actions: list[Action] = []
    for resource in ordered:
        seen = observed.get(resource.id, ABSENT)
        record = applied.get(resource.id)
        forced = resource.id in force
        moved = record is not None and _moved(record.resource, resource)
        if moved and not forced:
            assert record is not None
            decision = _moved_decision(record.resource, resource)
        elif resource.id in inherited:
            was = inherited[resource.id].resource
            decision = _recorded(
                kinds.get(resource.kind).plan(resource, seen, inherited[resource.id], forced),
                f"taken over from {was.id!r}",
            )
        else:
            decision = kinds.get(resource.kind).plan(
                resource, seen, None if moved else record, forced
            )
            if moved:
                assert record is not None
                decision = _recorded(
                    decision, f"{record.resource.target} (applied before) is left as it is"
                )
                decision = replace(
                    decision,
                    payload={**decision.payload, "moved": {"from": _where(record.resource)}},
                )
        actions.append(_action(resource, decision, resource.depends_on))
    decided = {a.resource_id: a for a in actions}
    dropped: list[Action] = []
    for rid in sorted(set(applied) - declared):
        record = applied[rid]
        successor = heirs.get(rid)
        if successor is not None and (
            decided[successor].type.applies
            or (successor in applied and not _moved(record.resource, applied[successor].resource))
        ):
            decision = Decision(
                ActionType.REMOVE_RESOURCE,
                f"forget: {record.resource.target} is declared as {successor!r} now",
                {HANDED_OVER: successor},
            )
        elif successor is not None:  # not applied yet (drift...): keep the record
            decision = Decision(
                ActionType.NO_OP,
                f"kept until {successor!r}, declared at its target now, is applied",
            )
        else:
            decision = kinds.get(record.resource.kind).plan(
                None, observed.get(rid, ABSENT), record, rid in force
            )
        dropped.append(_action(record.resource, decision, (), dropped=True))
    # Removals first: they free what a declaration may take next (a renamed app's
    # domain or name at a provider). A handed-over id is forgotten last, once the
    # id that took its place has been applied.
    clearing = [
        a for a in dropped if a.type is ActionType.REMOVE_RESOURCE and HANDED_OVER not in a.payload
    ]
    actions = clearing + actions + [a for a in dropped if a not in clearing]
    return Plan(
        target=target,
        source=source,
        declaration=declaration,
        observed={rid: obs.identity() for rid, obs in sorted(observed.items())},
        actions=tuple(actions),
        force=tuple(sorted(force)),
    )


def _moved(was: Resource, now: Resource) -> bool:
    """A declared id now names another target or kind than the one trueup applied.

    The applied record describes something else: as the third side of a
    three-way comparison it would be wrong, and the old target is not this
    resource's to touch any more.
    """
    if not kinds.get(now.kind).restorable:
        return False  # a remote object is known by the id recorded, whatever it is called
    return was.target != now.target or was.kind != now.kind


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


def _heirs(declared: Iterable[Resource], dropped: Mapping[str, Applied]) -> dict[str, str]:
    """Dropped ids whose target and kind a declared id names now (a renamed resource).

    Removing the old id's target would delete what the new one declares, so
    the old id is only forgotten once the new one is applied (or already
    recorded there: an interrupted rename, an id moved there with --overwrite).
    A new id without a record of its own takes the old record over: its
    three-way comparison is against what trueup wrote.
    """
    by_place = {(r.target, r.kind): r.id for r in declared if kinds.get(r.kind).restorable}
    heirs = {}
    for rid, record in dropped.items():
        heir = by_place.get((record.resource.target, record.resource.kind))
        if heir is not None:
            heirs[rid] = heir
    return heirs


def _recorded(decision: Decision, note: str) -> Decision:
    """A decision about a record made under another target or id, noted in its summary.

    Already as declared, it is verified and recorded (verify-only): the
    record must be rewritten, or every later plan would meet the old one again.
    """
    kind = ActionType.VERIFY_ONLY if decision.type is ActionType.NO_OP else decision.type
    return replace(decision, type=kind, summary=f"{decision.summary}; {note}")


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
        before=tuple(sorted(before)),
        destroys=decision.destroys,
        migrates=decision.migrates,
    )
