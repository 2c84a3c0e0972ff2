"""The skill kind: an agent skill folder, installed whole.

Skills are edited by people and agents alike, so the default is
replace-if-unmodified: a skill changed since trueup installed it is a drift
conflict and stays exactly as it is until someone decides.
"""

from __future__ import annotations

from trueup.kinds import tree
from trueup.kinds.base import BY_HAND, Decision, ObserveContext
from trueup.model import ActionType, Applied, Observed, Resource


class SkillKind(tree.TreeKind):
    name = "skill"
    policies = ("replace-if-unmodified", "replace")

    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        return tree.observe_tree(resource, ctx, managed_only=False)

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if resource is None:
            assert applied is not None
            return tree.removal(applied, observed, whole=True)
        live = observed.detail.get("files", {})
        if observed.state == "directory" and observed.digest == resource.spec["digest"]:
            return Decision(ActionType.NO_OP, "up to date")
        # Installed whole: everything live goes, once the skill may be replaced at all.
        blocked = tree.in_the_way(resource.spec["files"], observed, True, list(live))
        unmodified = applied is not None and observed.digest == applied.digest
        if blocked or not (
            observed.state == "absent" or unmodified or force or resource.policy == "replace"
        ):
            if blocked:
                why, payload = blocked, BY_HAND
            else:
                # Against what trueup installed, or (never installed) what is declared.
                desired = resource.spec["files"]
                reference = applied.detail.get("files", {}) if applied else desired
                changed = tree.changed_files(live, reference, desired)
                why = (
                    "modified since trueup installed it"
                    if applied
                    else "differs and trueup never wrote it"
                )
                why += f" ({tree.described(changed)})" if changed else ""
                payload = tree.changed_payload(changed)
            return Decision(
                ActionType.DRIFT_CONFLICT,
                f"drift: {why}; left exactly as it is",
                payload,
                drift={
                    "observed": observed.digest,
                    "applied": applied.digest if applied else None,
                    "desired": resource.spec["digest"],
                },
            )
        return tree.mirror(resource, observed, applied, list(live), "skill")
