"""Email Routing kinds: the routing switch, forwarding rules, catch-all, destinations.

The mail level of an org is the routing switch: ``forward`` enables Email
Routing (Cloudflare takes over the zone's MX records: mail moves, so the
step migrates), ``none`` disables it (the MX records go: mail to the domain
stops arriving, so the step also destroys). Destination addresses are
account-wide and confirmed by their recipient; an unconfirmed one is a
declared field trueup cannot make true, so it needs a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from trueup.kinds.base import Decision, ObserveContext
from trueup.model import ActionType, Applied, Observed, Resource
from trueup.providers.cloudflare.client import rule_address
from trueup.providers.cloudflare.session import CloudflareSession
from trueup.providers.remote import RemoteKind, recorded_id

JSON = dict[str, Any]


def _domain(resource: Resource) -> str:
    return resource.target.partition(":")[2]


class _ZoneSettingKind(RemoteKind):
    """A setting every zone has: writing it creates nothing; undeclared, it is left as is."""

    provider = "cloudflare"
    removal = "forget"
    #: The id of the setting when Cloudflare's answer carries neither an id nor a tag.
    fallback_id: ClassVar[str]

    def ident(self, raw: JSON) -> str:
        return str(raw.get("id") or raw.get("tag") or self.fallback_id)

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> JSON:
        return self.update(resource, payload, session)


class EmailRoutingKind(_ZoneSettingKind):
    name = "cloudflare.email_routing"
    fallback_id = "routing"

    def noun(self, resource: Resource) -> str:
        return f"email routing of {_domain(resource)}"

    def desired(self, resource: Resource) -> JSON:
        return {"enabled": bool(resource.spec["enabled"])}

    def find(
        self, resource: Resource, applied: Applied | None, session: CloudflareSession
    ) -> JSON | None:
        return session.routing

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        return {"enabled": bool(raw.get("enabled"))}

    def extra(self, raw: JSON) -> JSON:
        return {"status": raw.get("status")}

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        decision = super().plan(resource, observed, applied, force)
        if resource is None or decision.type is not ActionType.WRITE_CONFIG:
            return decision
        domain = _domain(resource)
        summary = (
            f"turn email routing of {domain} on (mail level forward): Cloudflare takes over "
            "the domain's MX records"
            if resource.spec["enabled"]
            else f"turn email routing of {domain} off (mail level none): its MX records are "
            "removed and mail to the domain stops arriving"
        )
        return Decision(
            decision.type, summary, decision.payload, decision.destroys, decision.migrates
        )

    def flags(self, op: str, live: JSON | None, desired: JSON | None) -> tuple[bool, bool]:
        if op == "update" and desired is not None:
            # Enabling moves mail delivery to Cloudflare; disabling removes the
            # domain's mail routing (its MX records) as well.
            return (not desired["enabled"], True)
        return (False, False)

    def read_back(
        self, resource: Resource, object_id: str | None, session: CloudflareSession
    ) -> JSON | None:
        return session.read.routing(session.zone_id)

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> JSON:
        settings = session.write.set_routing(
            session.zone_id, session.zone_name, bool(resource.spec["enabled"])
        )
        return {"id": self.ident(settings), "zone": session.zone_id}


def _forward_to(actions: Any) -> tuple[str, list[str]]:
    for action in actions or []:
        kind = str(action.get("type", ""))
        values = sorted(str(v).lower() for v in action.get("value") or [])
        return kind, values
    return "drop", []


def _actions(action: str, forward_to: list[str]) -> list[JSON]:
    """A rule's actions: forward to the addresses, or drop the mail."""
    return [{"type": action, "value": forward_to}] if action == "forward" else [{"type": "drop"}]


def _rule_body(address: str, action: str, forward_to: list[str], enabled: bool) -> JSON:
    return {
        "matchers": [{"type": "literal", "field": "to", "value": address}],
        "actions": _actions(action, forward_to),
        "enabled": enabled,
        "name": f"trueup: {address}",
        "priority": 0,
    }


class EmailRuleKind(RemoteKind):
    name = "cloudflare.email_rule"
    provider = "cloudflare"

    def noun(self, resource: Resource) -> str:
        return f"mail route {resource.spec['address']}"

    def desired(self, resource: Resource) -> JSON:
        spec = resource.spec
        return {
            "address": spec["address"].lower(),
            "action": "forward",
            "forward_to": sorted(a.lower() for a in spec["forward_to"]),
            "enabled": True,
        }

    def find(
        self, resource: Resource, applied: Applied | None, session: CloudflareSession
    ) -> JSON | None:
        known = recorded_id(applied)
        if known and known in session.rules:
            return session.rules[known]
        wanted = resource.spec["address"].lower()
        for rule in sorted(session.rules.values(), key=lambda r: str(r["id"])):
            if rule_address(rule) == wanted:
                return rule
        return None

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        action, forward_to = _forward_to(raw.get("actions"))
        return {
            "address": rule_address(raw),
            "action": action,
            "forward_to": forward_to,
            "enabled": bool(raw.get("enabled")),
        }

    def read_back(
        self, resource: Resource, object_id: str | None, session: CloudflareSession
    ) -> JSON | None:
        return session.read.rule(session.zone_id, object_id) if object_id else None

    def _body(self, resource: Resource) -> JSON:
        want = self.desired(resource)
        return _rule_body(want["address"], "forward", want["forward_to"], True)

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> JSON:
        address = resource.spec["address"].lower()
        rule = session.write.create_rule(session.zone_id, self._body(resource), address)
        return {"id": rule["id"], "zone": session.zone_id}

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> JSON:
        rule = session.write.put_rule(session.zone_id, payload["id"], self._body(resource))
        return {"id": rule["id"], "zone": session.zone_id}

    def delete(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> None:
        session.write.delete_rule(session.zone_id, payload["id"])

    def scope(self, ctx: ObserveContext) -> list[Observed]:
        session: CloudflareSession | None = ctx.services.get("cloudflare")
        if session is None or not session.mail_read:
            return []
        return [
            Observed(
                "present",
                None,
                {
                    "id": str(rule["id"]),
                    "description": f"{self.name} {rule_address(rule) or rule.get('name', '')}",
                },
            )
            for rule in session.rules.values()
        ]


class CatchAllKind(_ZoneSettingKind):
    name = "cloudflare.catch_all"
    fallback_id = "catch_all"

    def noun(self, resource: Resource) -> str:
        return f"catch-all of {_domain(resource)}"

    def desired(self, resource: Resource) -> JSON:
        spec = resource.spec
        forward = sorted(a.lower() for a in spec.get("forward_to", []))
        return {"action": spec["action"], "forward_to": forward, "enabled": True}

    def find(
        self, resource: Resource, applied: Applied | None, session: CloudflareSession
    ) -> JSON | None:
        return session.catch_all

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        action, forward_to = _forward_to(raw.get("actions"))
        return {"action": action, "forward_to": forward_to, "enabled": bool(raw.get("enabled"))}

    def read_back(
        self, resource: Resource, object_id: str | None, session: CloudflareSession
    ) -> JSON | None:
        return session.read.catch_all(session.zone_id)

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> JSON:
        want = self.desired(resource)
        body = {
            "matchers": [{"type": "all"}],
            "actions": _actions(want["action"], want["forward_to"]),
            "enabled": True,
            "name": "trueup: catch-all",
        }
        result = session.write.put_catch_all(session.zone_id, body)
        return {"id": self.ident(result), "zone": session.zone_id}


class EmailAddressKind(RemoteKind):
    name = "cloudflare.email_address"
    provider = "cloudflare"
    # Destination addresses belong to the account and may serve other zones:
    # one this org stops declaring is left alone.
    removal = "forget"

    def noun(self, resource: Resource) -> str:
        return f"destination address {resource.spec['email']}"

    def desired(self, resource: Resource) -> JSON:
        return {"email": resource.spec["email"].lower()}

    def find(
        self, resource: Resource, applied: Applied | None, session: CloudflareSession
    ) -> JSON | None:
        return session.addresses.get(resource.spec["email"].lower())

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        return {"email": str(raw.get("email", "")).lower()}

    def extra(self, raw: JSON) -> JSON:
        return {"verified": raw.get("verified") is not None}

    def settled(self, resource: Resource, observed: Observed) -> Decision | None:
        if observed.detail.get("verified"):
            return None
        email = resource.spec["email"]
        return Decision(
            ActionType.HUMAN_ACTION,
            f"{email} has not confirmed yet: Cloudflare mailed it a link; "
            "forwarding to it starts once the recipient clicks it",
            {"failed_fields": ["verified"]},
        )

    def read_back(
        self, resource: Resource, object_id: str | None, session: CloudflareSession
    ) -> JSON | None:
        return session.read.address(session.account, object_id) if object_id else None

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> JSON:
        address = session.write.create_address(session.account, resource.spec["email"].lower())
        if address.get("verified") is None:
            session.unmet.append(f"{resource.id}: verified")
        return {"id": address["id"], "account": session.account}
