"""Two profiles on one root declaring the same thing: the first to apply keeps it.

Without this each profile takes the key (or file) back from the other at every
apply, a drift that never ends. Pure: a declared resource is checked against
the applied records of the other profiles on the same root (passed in by the
profile target), and what another profile applied there first is drift that
names it. A config file shared key by key is fine; the same key, or one key
nesting inside another, is not (``Kind.overlaps``). Whole files, skills and
folders may not be equal or nest across profiles either.
"""

from __future__ import annotations

from collections.abc import Mapping

from trueup import kinds
from trueup.kinds.base import BY_HAND, Decision
from trueup.model import ActionType, Applied, Resource
from trueup.paths import overlap_key, within
from trueup.plan import restructure

#: The other profiles' applied records on the root, by profile id.
Beside = Mapping[str, Mapping[str, Applied]]


def claimed(resource: Resource, own: Applied | None, beside: Beside) -> Decision | None:
    """Drift naming the other profile that applied part of what ``resource`` declares
    before this one did (``own``: this profile's record of it, if any)."""
    if not beside or restructure.path_kind(resource.kind) is None:
        return None
    for owner in sorted(beside):
        for rid in sorted(beside[owner]):
            record = beside[owner][rid]
            shared = _shared(resource, record.resource)
            if not shared:
                continue
            if (
                own is not None
                and own.applied_at < record.applied_at
                and _shared(own.resource, record.resource)
            ):
                continue  # applied here first: the other profile is the one to drift
            return _drift(resource, owner, record.resource, shared)
    return None


def _shared(resource: Resource, other: Resource) -> str | None:
    """What of ``resource`` ``other`` (another profile's) declares too, in words."""
    if restructure.path_kind(other.kind) is None:
        return None
    here, there = overlap_key(resource.target), overlap_key(other.target)
    if here == there:
        if resource.kind != other.kind:
            return f"{resource.target} (as a {other.kind} there)"
        pieces = kinds.get(resource.kind).overlaps(resource, other)
        if pieces == [resource.target]:
            return resource.target
        return f"key(s) {', '.join(pieces)} of {resource.target}" if pieces else None
    if within(here, {there}) or within(there, {here}):
        return f"{resource.target} (it nests with {other.kind} {other.target})"
    return None


def _drift(resource: Resource, owner: str, other: Resource, shared: str) -> Decision:
    return Decision(
        ActionType.DRIFT_CONFLICT,
        f"drift: {shared} is declared by profile {owner!r} too (its resource {other.id!r}), "
        "which applied it first on this root; left exactly as it is: declare it in one "
        "profile only",
        {**BY_HAND, "claimed_by": {"profile": owner, "resource": other.id}},
        drift={"observed": None, "applied": None, "desired": resource.spec.get("digest")},
    )
