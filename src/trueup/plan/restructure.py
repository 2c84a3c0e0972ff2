"""Restructured trees: what the planner knows about kinds whose targets are paths.

A file, a folder of files and a config file live at paths under the root, and
paths nest: a dropped file may lie where a folder is declared now, a renamed
resource names the target an old id wrote, a removal may have to leave a
declared place empty. That path logic is shared by every file-like kind, so it
lives here once, over the small ``PathKind`` protocol those kinds implement;
a kind that is not one (a remote object, known by its provider id) is never
restructured, renamed by target or "moved". The planner (planner.py) calls
these functions; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any, ClassVar, Protocol, runtime_checkable

from trueup import kinds
from trueup.kinds.base import Decision
from trueup.model import ABSENT, OVERSIZED, Applied, Observed, Resource
from trueup.paths import find_overlaps, within


@runtime_checkable
class PathKind(Protocol):
    """What a kind whose target is a path tells the planner about restructuring."""

    #: Its target is a folder other targets may lie in: what trueup wrote there
    #: under another id is taken over, not removed first.
    holds_paths: ClassVar[bool]

    def written(self, applied: Applied) -> list[Any] | None:
        """What trueup wrote at this record's target as one tree entry (kinds/tree.py):
        ``["file", digest, executable]`` or ``["link", target]``; ``None`` for anything
        else. A folder declared around a dropped record takes it over."""

    def inherit(
        self, resource: Resource, records: Sequence[tuple[Applied, list[Any] | None]]
    ) -> Applied | None:
        """A record for ``resource``, newly declared around the targets of dropped
        ``records`` (each with what its kind says it ``written``), under which what
        trueup wrote there is trueup's to update; ``None`` leaves those files foreign
        to it (a differing one is then drift)."""

    def left_empty(self, observed: Observed, removed: AbstractSet[str]) -> bool:
        """Whether what stands at this resource's place, as ``observed``, is nothing but
        the paths ``removed`` (relative to it) and their folders; ``False``: cannot tell."""

    def clears(self, applied: Applied, decision: Decision) -> bool:
        """Whether ``decision``, the removal of a dropped resource, leaves its target
        empty, so a resource declared at or below that place is planned as if nothing
        were there. ``False`` keeps it a conflict for a person."""


_path_kinds: dict[str, PathKind | None] = {}


def path_kind(name: str) -> PathKind | None:
    """The kind called ``name`` if its targets are paths (cached: asked per resource)."""
    try:
        return _path_kinds[name]
    except KeyError:
        kind = kinds.get(name)
        found = _path_kinds[name] = kind if isinstance(kind, PathKind) else None
        return found


def _path_kind(resource: Resource) -> PathKind:
    kind = path_kind(resource.kind)
    assert kind is not None, resource.kind  # only path kinds overlap (see covered)
    return kind


def moved(was: Resource, now: Resource) -> bool:
    """A declared id now names another target or kind than the one trueup applied.

    The applied record describes something else: as the third side of a
    three-way comparison it would be wrong, and the old target is not this
    resource's to touch any more. A remote object is known by the id recorded,
    whatever it is called: it never moves.
    """
    if path_kind(now.kind) is None:
        return False
    return was.target != now.target or was.kind != now.kind


def covered(dropped: Mapping[str, Resource], declared: Iterable[Resource]) -> dict[str, str]:
    """Dropped ids whose target is, holds or lies in a declared one's, and that id.

    One sorted pass over every target (paths.find_overlaps), not a pair at a time.
    """
    local = [r for r in declared if path_kind(r.kind) is not None]
    gone = {rid: r for rid, r in dropped.items() if path_kind(r.kind) is not None}
    if not gone:
        return {}
    pairs = find_overlaps(
        [*((r.id, r.target) for r in local), *((rid, r.target) for rid, r in gone.items())]
    )
    found: dict[str, str] = {}
    for a, b in pairs:
        if a in gone and b not in gone:
            found.setdefault(a, b)
        elif b in gone and a not in gone:
            found.setdefault(b, a)
    return found


def clearing(
    covered: Mapping[str, str],
    declared: Mapping[str, Resource],
    applied: Mapping[str, Applied],
    observed: Mapping[str, Observed],
    force: frozenset[str],
) -> dict[str, Decision]:
    """Dropped ids in the way of a declared one that are removed first, and how.

    A dropped file where a folder is declared now (or one above a declared
    target) goes first when its kind's own removal would take it and leave
    nothing there (``PathKind.clears``); the declared resource is then planned as
    absent. One that lies inside a declared folder is not in its way: it is
    handed over. Those inside a declared file's place go first, with the
    folders they leave empty (``Decision.frees``), when nothing else is in that folder.
    Anything else in the way stays a conflict for a person.
    """
    found: dict[str, Decision] = {}
    inside: dict[str, list[str]] = {}  # a declared id -> dropped ids in its place
    for rid, covering in covered.items():
        record = applied[rid]
        place, resource = record.resource.target, declared[covering]
        seen = observed.get(rid, ABSENT)
        within_it = place != resource.target and within(place, {resource.target})
        if seen.state == OVERSIZED or (within_it and _path_kind(resource).holds_paths):
            continue
        decision = kinds.get(record.resource.kind).plan(None, seen, record, rid in force)
        if not _path_kind(record.resource).clears(record, decision):
            continue
        if within_it:
            inside.setdefault(covering, []).append(rid)
            decision = replace(decision, frees=resource.target)
        found[rid] = decision
    for covering, rids in inside.items():
        resource = declared[covering]
        leaving = {
            part
            for rid in rids
            for part in _and_parents(
                applied[rid].resource.target.removeprefix(resource.target + "/")
            )
        }
        seen = observed.get(covering, ABSENT)
        if not _path_kind(resource).left_empty(seen, leaving):  # something else is there
            for rid in rids:
                del found[rid]
    return found


def _and_parents(rel: str) -> list[str]:
    """``a/b/c`` -> ``a/b/c``, ``a/b``, ``a``."""
    parts = rel.split("/")
    return ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]


def adopted(
    covered: Mapping[str, str],
    declared: Iterable[Resource],
    applied: Mapping[str, Applied],
    inherited: Mapping[str, Applied],
) -> dict[str, Applied]:
    """Records for newly declared folders made of the dropped records inside them
    (``PathKind.inherit``): what trueup wrote there under other ids is trueup's."""
    inside: dict[str, list[Applied]] = {}
    by_id = {r.id: r for r in declared}
    for rid, covering in covered.items():
        resource = by_id[covering]
        record = applied[rid]
        if (
            covering not in applied
            and covering not in inherited
            and within(record.resource.target, {resource.target})
        ):
            inside.setdefault(covering, []).append(record)
    found = {}
    for covering, records in inside.items():
        resource = by_id[covering]
        written = [(record, _path_kind(record.resource).written(record)) for record in records]
        taken = _path_kind(resource).inherit(resource, written)
        if taken is not None:
            found[covering] = taken
    return found


def heirs(declared: Iterable[Resource], dropped: Mapping[str, Applied]) -> dict[str, str]:
    """Dropped ids whose target and kind a declared id names now (a renamed resource).

    Removing the old id's target would delete what the new one declares, so
    the old id is only forgotten once the new one is applied (or already
    recorded there: an interrupted rename, an id moved there with --overwrite).
    A new id without a record of its own takes the old record over: its
    three-way comparison is against what trueup wrote.
    """
    by_place = {(r.target, r.kind): r.id for r in declared if path_kind(r.kind) is not None}
    heirs = {}
    for rid, record in dropped.items():
        heir = by_place.get((record.resource.target, record.resource.kind))
        if heir is not None:
            heirs[rid] = heir
    return heirs
