"""What every provider kind shares: compare a declared view with a live view.

A remote kind reduces both sides to the same small JSON "view" (the fields
trueup manages, normalised the way the provider stores them) and compares
digests. The three sides of drift are the same as for files: the declared
view, the live view, and the digest trueup recorded when it last applied.
Live changed since then and differs from the declaration: drift, shown with
both values and never overwritten without ``--overwrite``.

Remote kinds keep no rollback material (``restorable = False``): a provider
API has no transaction to undo, so a failure leaves a checkpoint and the next
apply resumes from live state. Observation reads a per-run snapshot of the
org's scope (``ctx.services[provider]``), never one GET per resource.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from trueup.canonical import digest
from trueup.errors import UsageError
from trueup.kinds.base import ApplyContext, Decision, Kind, ObserveContext
from trueup.kinds.content import text_diff
from trueup.model import ABSENT, Action, ActionType, Applied, Evidence, Observed, Resource

if TYPE_CHECKING:
    from pydantic import BaseModel

JSON = dict[str, Any]


class Session:
    """One provider for one run: a read-only client, a writer at apply, a snapshot.

    ``ids`` maps resource ids to the provider ids learned during this run, so
    a child created after its parent finds the parent's id, and verification
    re-reads the object apply just created.
    """

    provider: ClassVar[str]

    def __init__(self, read: Any, write: Any | None) -> None:
        self.read = read
        self._write = write
        self.ids: dict[str, str] = {}
        #: Declared fields an apply could not make true (e.g. an unconfirmed address).
        self.unmet: list[str] = []

    @property
    def write(self) -> Any:
        if self._write is None:
            raise RuntimeError(f"{self.provider}: observation cannot write")
        return self._write

    def with_writer(self, write: Any) -> None:
        self._write = write

    def scope_id(self) -> str | None:
        """The provider's own id of the org's scope (zone, project, org), once it exists."""
        return None


class RemoteKind(Kind):
    """Base of the provider kinds; subclasses describe their object, not the algorithm."""

    provider: ClassVar[str]
    restorable = False
    concurrent = True
    policies = ("replace-if-unmodified",)
    #: What dropping the resource from the declaration does: delete it, or stop managing it.
    removal: ClassVar[str] = "delete"
    destroys_on_delete: ClassVar[bool] = False

    # -- what a subclass describes -------------------------------------------------
    def noun(self, resource: Resource) -> str:
        raise NotImplementedError

    def desired(self, resource: Resource) -> JSON:
        """The declared view: the managed fields, normalised like the provider."""
        raise NotImplementedError

    def find(self, resource: Resource, applied: Applied | None, session: Any) -> JSON | None:
        """The live object in the snapshot (by recorded id first, then by name)."""
        raise NotImplementedError

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        """The live view of a raw provider object, comparable with ``desired``."""
        raise NotImplementedError

    def ident(self, raw: JSON) -> str:
        return str(raw["id"])

    def extra(self, raw: JSON) -> JSON:
        """More observed detail a plan needs (never a secret value)."""
        return {}

    def read_back(self, resource: Resource, object_id: str | None, session: Any) -> JSON | None:
        """A fresh read of one object, for verification."""
        raise NotImplementedError

    def create(self, resource: Resource, payload: Mapping[str, Any], session: Any) -> JSON:
        raise NotImplementedError

    def update(self, resource: Resource, payload: Mapping[str, Any], session: Any) -> JSON:
        raise NotImplementedError

    def delete(self, resource: Resource, payload: Mapping[str, Any], session: Any) -> None:
        raise NotImplementedError

    def deleted(self, detail: Mapping[str, Any], session: Any) -> None:
        """Clear up what the record of an object just deleted kept outside the store."""

    def flags(self, op: str, live: JSON | None, desired: JSON | None) -> tuple[bool, bool]:
        """(destroys, migrates) of one step."""
        return (self.destroys_on_delete, False) if op == "delete" else (False, False)

    def settled(self, resource: Resource, observed: Observed) -> Decision | None:
        """A decision for a live object equal to the declaration (e.g. needs a person)."""
        return None

    # -- the seam ------------------------------------------------------------------
    def declaration_model(self) -> type[BaseModel]:
        raise UsageError(f"kind {self.name!r} is declared in an org file, not in a profile")

    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        session = service(ctx, self.provider)
        applied = applied_record(ctx, resource.id)
        raw = self.find(resource, applied, session)
        if raw is None:
            return ABSENT
        live = self.view(raw, resource, applied)
        detail = {"id": self.ident(raw), "live": live, **self.extra(raw)}
        return Observed("present", digest(live), detail)

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if resource is None:
            assert applied is not None
            return self._plan_removal(applied, observed, force)
        desired = self.desired(resource)
        noun = self.noun(resource)
        if observed.state == "absent":
            destroys, migrates = self.flags("create", None, desired)
            created = {"op": "create", "declared": desired}
            return Decision(ActionType.WRITE_CONFIG, f"create {noun}", created, destroys, migrates)
        if observed.digest == digest(desired):
            return self.settled(resource, observed) or Decision(ActionType.NO_OP, "up to date")
        live: JSON = dict(observed.detail.get("live", {}))
        fields = changed_fields(live, desired)
        payload: JSON = {
            "op": "update",
            "id": observed.detail.get("id"),
            "live": live,
            "declared": desired,
            "fields": fields,
        }
        if drifted(observed, applied) and not force:
            return Decision(
                ActionType.DRIFT_CONFLICT,
                f"drift: {noun} was changed outside trueup ({', '.join(fields)}); left as it is",
                payload,
                drift={
                    "observed": observed.digest,
                    "applied": applied.digest if applied else None,
                    "desired": digest(desired),
                },
            )
        destroys, migrates = self.flags("update", live, desired)
        summary = f"update {noun}: {', '.join(fields)}"
        return Decision(ActionType.WRITE_CONFIG, summary, payload, destroys, migrates)

    def unrecorded(self, resource: Resource, observed: Observed) -> Decision | None:
        """Recorded now, so a later change made by hand is drift, not an update over it."""
        return Decision(
            ActionType.VERIFY_ONLY,
            "up to date; recorded as managed from now on",
            {"op": "take", "id": observed.detail.get("id")},
        )

    def _plan_removal(self, applied: Applied, observed: Observed, force: bool) -> Decision:
        noun = self.noun(applied.resource)
        if observed.state == "absent":
            return Decision(
                ActionType.REMOVE_RESOURCE,
                # Not in the org's scope: deleted, or left where trueup no longer
                # looks (the old org, after the org was renamed).
                f"forget {noun} (not found in the org's scope; nothing is deleted)",
                {"op": "forget"},
            )
        if self.removal == "forget":
            return Decision(
                ActionType.REMOVE_RESOURCE,
                f"stop managing {noun} (no longer declared; left in place)",
                {"op": "forget"},
            )
        live = dict(observed.detail.get("live", {}))
        if drifted(observed, applied) and not force:
            return Decision(
                ActionType.DRIFT_CONFLICT,
                f"drift: {noun} is no longer declared, but was changed outside trueup; "
                "left in place",
                {"op": "delete", "id": observed.detail.get("id"), "live": live, "declared": None},
                drift={"observed": observed.digest, "applied": applied.digest, "desired": None},
            )
        destroys, migrates = self.flags("delete", live, None)
        return Decision(
            ActionType.REMOVE_RESOURCE,
            f"delete {noun} (no longer declared)",
            {"op": "delete", "id": observed.detail.get("id"), "live": live},
            destroys,
            migrates,
        )

    def apply(
        self, action: Action, resource: Resource, ctx: ApplyContext
    ) -> Mapping[str, Any] | None:
        session = service(ctx, self.provider)
        op = str(action.payload.get("op"))
        if op == "forget":
            return None
        if op == "delete":
            self.delete(resource, action.payload, session)
            session.ids.pop(resource.id, None)
            record = applied_record(ctx, resource.id)
            self.deleted(record.detail if record else {}, session)
            return None
        if op == "create":
            learned = self.create(resource, action.payload, session)
        elif op == "update":
            learned = self.update(resource, action.payload, session)
        else:
            learned = self.act(op, resource, action.payload, session)
        # Keep what earlier applies recorded (a secret's reference, where an
        # app lives) unless this call learned something newer.
        previous = applied_record(ctx, resource.id)
        merged = {**(previous.detail if previous else {}), **learned}
        if "id" in merged:
            session.ids[resource.id] = str(merged["id"])
        return merged

    def act(self, op: str, resource: Resource, payload: Mapping[str, Any], session: Any) -> JSON:
        """Steps other than create, update and delete (a kind's own, e.g. a re-key)."""
        raise ValueError(f"{self.name}: unknown step {op!r}")

    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        op = action.payload.get("op")
        if op == "forget":
            return Evidence("passed", "none", message="no longer managed")
        session = service(ctx, self.provider)
        object_id = session.ids.get(resource.id) or action.payload.get("id")
        raw = self.read_back(resource, object_id, session)
        if op == "delete":
            gone = raw is None
            return Evidence(
                "passed" if gone else "failed",
                "read-back",
                None,
                message="" if gone else "still present",
            )
        if raw is None:
            return Evidence("failed", "read-back", None, message=f"{self.noun(resource)} not found")
        live = self.view(raw, resource, applied_record(ctx, resource.id))
        desired = self.desired(resource)
        found = digest(live)
        if found == digest(desired):
            return Evidence("passed", "read-back", found)
        fields = ", ".join(changed_fields(live, desired))
        return Evidence(
            "failed", "read-back", found, message=f"{self.noun(resource)} differs: {fields}"
        )

    def record(self, action: Action, resource: Resource) -> Mapping[str, Any] | None:
        payload = action.payload
        if payload.get("op") in ("delete", "forget"):
            return None
        # Taken over as found (see unrecorded).
        return {"id": payload["id"]} if payload.get("op") == "take" and payload.get("id") else {}

    def preview(self, action: Action, resource: Resource, ctx: ObserveContext) -> str:
        payload = action.payload
        live = payload.get("live")
        declared = payload.get("declared")
        return text_diff(
            _pretty(live) if live is not None else None,
            _pretty(declared) if declared is not None else None,
            f"{self.name} {self.noun(resource)}",
        )


def _pretty(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def drifted(observed: Observed, applied: Applied | None) -> bool:
    """Live changed since trueup last verified it (an unverified record cannot drift)."""
    return applied is not None and applied.digest is not None and observed.digest != applied.digest


def changed_fields(live: Mapping[str, Any], desired: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(live) | set(desired) if live.get(k) != desired.get(k))


def service(ctx: ObserveContext, provider: str) -> Any:
    try:
        return ctx.services[provider]
    except KeyError:
        raise UsageError(
            f"no {provider} session for this run (is the org's section declared?)"
        ) from None


def applied_record(ctx: ObserveContext, resource_id: str) -> Applied | None:
    records: Mapping[str, Applied] = ctx.services.get("applied", {})
    return records.get(resource_id)


def recorded_id(applied: Applied | None, key: str = "id") -> str | None:
    if applied is None:
        return None
    value = applied.detail.get(key)
    return str(value) if value else None
