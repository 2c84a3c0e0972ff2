"""The ``coolify.signing_key`` kind: the chat app's re-keyable signing key.

The key lives only in the chat app's environment (Coolify); trueup never
stores or shows it, only its digest and a generation number. Declaring a
higher generation re-keys: a new random key replaces the old one, so every
session and signature made with the old key stops working (destroys) and
the chat service re-signs what it keeps (migrates).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from trueup.canonical import sha256_hex
from trueup.kinds.base import INTENT, ApplyContext, Decision, ObserveContext
from trueup.model import ABSENT, Action, ActionType, Applied, Evidence, Observed, Resource
from trueup.providers.coolify.apps import app_uuid
from trueup.providers.coolify.session import CoolifySession
from trueup.providers.remote import RemoteKind, applied_record, drifted, service
from trueup.redact import register_secret

JSON = dict[str, Any]


def key_digest(value: str) -> str:
    return sha256_hex(value.encode("utf-8"))


def _app_of(session: CoolifySession, ctx: ObserveContext, spec: Mapping[str, Any]) -> str | None:
    """The uuid of the chat app the key belongs to, once it exists."""
    return app_uuid(session, ctx, spec["app_resource"], spec["app"], spec["environment"])


def _key_entry(envs: list[JSON], key: str) -> JSON | None:
    """The app's (non-preview) environment variable holding the key."""
    for item in envs:
        if item.get("key") == key and not item.get("is_preview"):
            return item
    return None


class SigningKeyKind(RemoteKind):
    name = "coolify.signing_key"
    provider = "coolify"
    removal = "forget"

    def noun(self, resource: Resource) -> str:
        return f"signing key of {resource.spec['app']}"

    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        session: CoolifySession = service(ctx, self.provider)
        spec = resource.spec
        uuid = _app_of(session, ctx, spec)
        if uuid is None:
            return ABSENT
        item = _key_entry(session.envs.get(uuid, []), spec["key"])
        if item is None:
            return Observed("absent", None, {"app": uuid})
        value = str(item.get("value") or "")
        register_secret(value)
        return Observed("present", key_digest(value), {"id": str(item["uuid"]), "app": uuid})

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if resource is None:
            return Decision(
                ActionType.REMOVE_RESOURCE, "stop managing the signing key", {"op": "forget"}
            )
        intent = applied.detail.get(INTENT) if applied else None
        if applied is None or not intent or observed.digest != intent.get("digest"):
            return self._decide(resource, observed, applied, force)
        # The live key is the one a run that died during its call was writing:
        # trueup's own, so neither drift nor a reason to re-key again.
        adopted = replace(
            applied,
            digest=observed.digest,
            detail={
                **{k: v for k, v in applied.detail.items() if k != INTENT},
                "app": intent["app"],
                "generation": intent["generation"],
            },
        )
        decision = self._decide(resource, observed, adopted, force)
        if decision.type is not ActionType.NO_OP:
            return decision
        return Decision(
            ActionType.VERIFY_ONLY,
            f"record the {self.noun(resource)} (generation {intent['generation']}) that an "
            "interrupted run wrote",
            {"op": "adopt", "digest": observed.digest, **adopted.detail},
        )

    def _decide(
        self, resource: Resource, observed: Observed, applied: Applied | None, force: bool
    ) -> Decision:
        noun = self.noun(resource)
        wanted = int(resource.spec["generation"])
        if observed.state == "absent":
            return Decision(
                ActionType.WRITE_CONFIG,
                f"set a new {noun} (generation {wanted})",
                {"op": "set-key", "generation": wanted},
            )
        if drifted(observed, applied) and not force:
            return Decision(
                ActionType.DRIFT_CONFLICT,
                f"drift: {noun} was changed outside trueup; left as it is",
                {"op": "set-key", "live": {"key": "(changed)"}, "declared": {"generation": wanted}},
                drift={
                    "observed": observed.digest,
                    "applied": applied.digest if applied else None,
                    "desired": None,
                },
            )
        current = int(applied.detail.get("generation", 1)) if applied else 1
        if current == wanted and not (force and drifted(observed, applied)):
            return Decision(ActionType.NO_OP, "up to date")
        return Decision(
            ActionType.WRITE_CONFIG,
            f"re-key {noun} (generation {current} -> {wanted}): sessions and signatures made "
            "with the old key stop working",
            {
                "op": "set-key",
                "generation": wanted,
                "live": {"generation": current},
                "declared": {"generation": wanted},
            },
            destroys=True,
            migrates=True,
        )

    def apply(
        self, action: Action, resource: Resource, ctx: ApplyContext
    ) -> Mapping[str, Any] | None:
        if action.payload.get("op") != "set-key":
            return None
        session: CoolifySession = service(ctx, self.provider)
        spec = resource.spec
        uuid = _app_of(session, ctx, spec)
        if uuid is None:
            raise RuntimeError(f"coolify: chat app {spec['app']!r} does not exist")
        key = secrets.token_urlsafe(48)
        register_secret(key)
        generation = int(spec["generation"])
        ctx.intend({"digest": key_digest(key), "app": uuid, "generation": generation})
        session.write.upsert_envs(uuid, [{"key": spec["key"], "value": key}])
        session.key_digests[resource.id] = key_digest(key)
        session.write.lifecycle(uuid, "restart")
        previous = applied_record(ctx, resource.id)
        return {**(previous.detail if previous else {}), "app": uuid, "generation": generation}

    def record(self, action: Action, resource: Resource) -> Mapping[str, Any] | None:
        payload = action.payload
        if payload.get("op") == "adopt":
            return {k: v for k, v in payload.items() if k not in ("op", "digest")}
        return super().record(action, resource)

    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        op = action.payload.get("op")
        if op not in ("set-key", "adopt"):
            return Evidence("passed", "none", message="no longer managed")
        session: CoolifySession = service(ctx, self.provider)
        spec = resource.spec
        uuid = _app_of(session, ctx, spec)
        item = _key_entry(session.read.envs(uuid) if uuid else [], spec["key"])
        if item is None:
            return Evidence("failed", "read-back", None, message=f"{self.noun(resource)} not found")
        found = key_digest(str(item.get("value") or ""))
        expected = (
            action.payload["digest"] if op == "adopt" else session.key_digests.get(resource.id)
        )
        ok = found == expected
        return Evidence(
            "passed" if ok else "failed",
            "read-back",
            found,
            message="" if ok else "the key read back is not the one written",
        )

    def preview(self, action: Action, resource: Resource, ctx: ObserveContext) -> str:
        return ""
