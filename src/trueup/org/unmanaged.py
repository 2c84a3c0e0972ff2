"""Unmanaged items: live in the org's scope, named by no declared resource.

They are shown and never turned into steps (so never deleted). An item that
belongs to another unmanaged item (a role of an unmanaged project) is not
listed separately: its parent already is. Their identities join the plan's
observed digests, so one appearing or changing makes a saved plan stale.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trueup import kinds
from trueup.canonical import digest
from trueup.kinds.base import ObserveContext
from trueup.model import ABSENT, Action, ActionType, Observed


@dataclass(frozen=True, slots=True)
class Unmanaged:
    provider: str
    id: str
    description: str
    #: The managed item it lives in (a role in a declared project), if any.
    parent: str | None = None
    #: Managed items whose deletion changes it (the roles a hand-made grant gives).
    uses: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"unmanaged:{self.provider}:{self.id}"

    def identity(self) -> str:
        return digest({"id": self.id, "description": self.description})

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "id": self.id, "description": self.description}


def claimed_ids(observed: Mapping[str, Observed]) -> set[str]:
    claimed: set[str] = set()
    for item in observed.values():
        if item.detail.get("id"):
            claimed.add(str(item.detail["id"]))
        claimed.update(str(c) for c in item.detail.get("claims", []))
    return claimed


def find_unmanaged(observed: Mapping[str, Observed], ctx: ObserveContext) -> list[Unmanaged]:
    claimed = claimed_ids(observed)
    found: dict[str, Unmanaged] = {}
    for name in kinds.provider_names():
        provider = name.partition(".")[0]
        if provider not in ctx.services:
            continue
        for item in kinds.get(name).scope(ctx):
            ident = str(item.detail["id"])
            parent = item.detail.get("parent")
            if ident in claimed or (parent is not None and str(parent) not in claimed):
                continue
            found[f"{provider}:{ident}"] = Unmanaged(
                provider,
                ident,
                str(item.detail["description"]),
                str(parent) if parent is not None else None,
                tuple(str(u) for u in item.detail.get("uses", ())),
            )
    return sorted(found.values(), key=lambda u: u.description)


def with_what_removals_take(
    actions: tuple[Action, ...], observed: Mapping[str, Observed], unmanaged: list[Unmanaged]
) -> tuple[Action, ...]:
    """Mark the removal of a managed item that holds unmanaged ones as destroying.

    Deleting a project at a provider deletes what is in it: a role or an app
    somebody made by hand there goes too, though trueup never manages it. And
    deleting a role takes it out of a grant somebody made by hand.
    """
    inside: dict[str, list[str]] = {}
    using: dict[str, list[str]] = {}
    for item in unmanaged:
        if item.parent is not None:
            inside.setdefault(item.parent, []).append(item.description)
        for used in item.uses:
            using.setdefault(used, []).append(item.description)
    marked = []
    for action in actions:
        ident = str(observed.get(action.resource_id, ABSENT).detail.get("id"))
        held, users = inside.get(ident), using.get(ident)
        if action.type is ActionType.REMOVE_RESOURCE and (held or users):
            told = (
                [f"with {len(held)} unmanaged item(s) in it: " + ", ".join(sorted(held))]
                if held
                else []
            )
            told += [f"which changes unmanaged {', '.join(sorted(users))}"] if users else []
            action = dataclasses.replace(
                action, summary=f"{action.summary}, {'; '.join(told)}", destroys=True
            )
        marked.append(action)
    return tuple(marked)
