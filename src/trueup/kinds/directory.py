"""The directory kind: a folder mirrored from a source folder.

mirror-owned (default) adds and updates the declared files and removes only
files trueup wrote earlier that are still unmodified; a declared file that
someone else wrote, or changed since trueup did, is a drift conflict and the
folder is left as it is (``--overwrite`` takes the declared version). replace
is a true mirror.
"""

from __future__ import annotations

from trueup.kinds import tree
from trueup.kinds.base import BY_HAND, Decision, ObserveContext
from trueup.model import ActionType, Applied, Observed, Resource


class DirectoryKind(tree.TreeKind):
    name = "directory"
    policies = ("mirror-owned", "replace")

    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        return tree.observe_tree(resource, ctx, managed_only=resource.policy == "mirror-owned")

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if resource is None:
            assert applied is not None
            return tree.removal(applied, observed, whole=applied.resource.policy == "replace")
        live = observed.detail.get("files", {})
        whole = resource.policy == "replace"
        # What the mirror removes: everything not declared (replace), or what trueup
        # wrote and nobody changed since (mirror-owned).
        removable = list(live) if whole else tree.owned_unmodified(applied, live) if applied else []
        blocked = tree.in_the_way(resource.spec["files"], observed, whole, removable)
        if blocked:
            return Decision(
                ActionType.DRIFT_CONFLICT,
                f"drift: {blocked}; left exactly as it is",
                BY_HAND,
                drift={
                    "observed": observed.digest,
                    "applied": applied.digest if applied else None,
                    "desired": resource.spec["digest"],
                },
            )
        if whole:
            return tree.mirror(resource, observed, applied, removable, "folder")
        clobbered = [] if force else tree.clobbered(resource.spec["files"], live, applied)
        if clobbered:
            return Decision(
                ActionType.DRIFT_CONFLICT,
                f"drift: {tree.listed(clobbered)} changed locally or not written by trueup; "
                "left exactly as it is",
                tree.changed_payload([{"path": rel, "change": "modified"} for rel in clobbered]),
                drift={
                    "observed": observed.digest,
                    "applied": applied.digest if applied else None,
                    "desired": resource.spec["digest"],
                },
            )
        return tree.mirror(resource, observed, applied, removable, "folder")
