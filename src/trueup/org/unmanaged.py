"""Unmanaged items: live in the org's scope, named by no declared resource.

They are shown and never turned into steps (so never deleted). An item that
belongs to another unmanaged item (a role of an unmanaged project) is not
listed separately: its parent already is. Their identities join the plan's
observed digests, so one appearing or changing makes a saved plan stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trueup import kinds
from trueup.canonical import digest
from trueup.kinds.base import ObserveContext
from trueup.model import Observed


@dataclass(frozen=True, slots=True)
class Unmanaged:
    provider: str
    id: str
    description: str

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
                provider, ident, str(item.detail["description"])
            )
    return sorted(found.values(), key=lambda u: u.description)
