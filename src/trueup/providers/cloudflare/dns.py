"""The ``cloudflare.dns_record`` kind: one DNS record of the org's zone.

A record is identified by type and fully qualified name (plus content when
the declaration has several records of one type and name, as MX and TXT
often do), so a record edited in the dashboard shows as drift with both
contents, not as one record missing and another unmanaged.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from trueup.kinds.base import ObserveContext
from trueup.model import Applied, Observed, Resource
from trueup.providers.cloudflare.session import CloudflareSession
from trueup.providers.remote import RemoteKind, recorded_id

JSON = dict[str, Any]
HOSTNAME_TYPES = frozenset({"CNAME", "MX", "NS", "PTR"})
_PLAIN_IPV4 = re.compile(
    r"(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
)
PRIORITY_TYPES = frozenset({"MX", "URI", "SRV"})


def normal_content(rtype: str, content: str) -> str:
    """Content as Cloudflare stores it, so equal records compare equal."""
    if rtype in HOSTNAME_TYPES:
        return content.rstrip(".").lower()
    if rtype == "A" and _PLAIN_IPV4.fullmatch(content):
        return content  # already canonical: skip the (slow) ipaddress parse
    if rtype in ("A", "AAAA"):
        try:
            return str(ipaddress.ip_address(content))
        except ValueError:
            return content
    return content


def record_view(raw: Mapping[str, Any], with_comment: bool) -> JSON:
    rtype = str(raw["type"])
    proxied = bool(raw.get("proxied") or False)
    view: JSON = {
        "type": rtype,
        "name": str(raw["name"]).rstrip(".").lower(),
        "content": normal_content(rtype, str(raw.get("content", ""))),
        "ttl": 1 if proxied else int(raw.get("ttl") or 1),
        "proxied": proxied,
    }
    if rtype in PRIORITY_TYPES:
        view["priority"] = raw.get("priority")
    if with_comment:
        view["comment"] = raw.get("comment") or None
    return view


def is_routing_record(raw: Mapping[str, Any]) -> bool:
    """MX/SPF records Email Routing adds and locks: they belong to mail routing."""
    return bool((raw.get("meta") or {}).get("email_routing"))


_SIDE_BY_SIDE = frozenset({"TXT", "MX", "SRV", "CAA"})


class DnsRecordKind(RemoteKind):
    name = "cloudflare.dns_record"
    provider = "cloudflare"

    def noun(self, resource: Resource) -> str:
        spec = resource.spec
        return f"{spec['type']} record {spec['name']}"

    def desired(self, resource: Resource) -> JSON:
        return record_view(resource.spec, "comment" in resource.spec)

    def find(
        self, resource: Resource, applied: Applied | None, session: CloudflareSession
    ) -> JSON | None:
        known = recorded_id(applied)
        if known and known in session.records:
            return session.records[known]
        spec = resource.spec
        wanted = normal_content(spec["type"], spec["content"])
        candidates = sorted(
            (
                r
                for r in session.records.values()
                if r.get("type") == spec["type"]
                and str(r.get("name", "")).lower() == spec["name"]
                and not is_routing_record(r)
            ),
            key=lambda r: (
                normal_content(spec["type"], str(r.get("content", ""))) != wanted,
                str(r.get("created_on", "")),
                str(r["id"]),
            ),
        )
        if not candidates:
            return None
        best = candidates[0]
        same = normal_content(spec["type"], str(best.get("content", ""))) == wanted
        # A name holds several TXT, MX, SRV or CAA records side by side (a site
        # verification, an SPF policy): one trueup never wrote is somebody
        # else's, left unmanaged, and trueup adds its own beside it.
        by_content = spec.get("match") == "content" or spec["type"] in _SIDE_BY_SIDE
        if by_content and not same:
            return None
        return best

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        return record_view(raw, "comment" in resource.spec)

    def read_back(
        self, resource: Resource, object_id: str | None, session: CloudflareSession
    ) -> JSON | None:
        return session.read.record(session.zone_id, object_id) if object_id else None

    def _body(self, resource: Resource) -> JSON:
        spec = resource.spec
        body: JSON = {
            "type": spec["type"],
            "name": spec["name"],
            "content": spec["content"],
            "ttl": spec.get("ttl", 1),
            "proxied": spec.get("proxied", False),
        }
        for key in ("priority", "comment"):
            if key in spec:
                body[key] = spec[key]
        return body

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> JSON:
        record = session.write.create_record(session.zone_id, self._body(resource))
        return {"id": record["id"], "zone": session.zone_id}

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> JSON:
        record = session.write.put_record(session.zone_id, payload["id"], self._body(resource))
        return {"id": record["id"], "zone": session.zone_id}

    def delete(
        self, resource: Resource, payload: Mapping[str, Any], session: CloudflareSession
    ) -> None:
        session.write.delete_record(session.zone_id, payload["id"])

    def scope(self, ctx: ObserveContext) -> list[Observed]:
        session: CloudflareSession | None = ctx.services.get("cloudflare")
        if session is None or session.zone is None:
            return []
        return [
            Observed(
                "present",
                None,
                {
                    "id": str(raw["id"]),
                    "description": (
                        f"{self.name} {raw['type']} {raw['name']} {raw.get('content', '')}"
                    ),
                },
            )
            for raw in session.records.values()
            if not is_routing_record(raw)
        ]
