"""DNS records for the Cloudflare fake, with the real API's quirks.

Quirks kept on purpose: names come back fully qualified ("portal" in zone
acme.test is "portal.acme.test", "@" is the apex); creating is not
idempotent (an identical record is error 81058, but an identical CNAME and
a CNAME clash are 81057, "already exists");
proxied records always report ``ttl: 1``; list filters match the fully
qualified name only; a page past the end is an empty success.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any

from trueup.testing._util import cf_time, hex_id
from trueup.testing.cloudflare import envelope as env
from trueup.testing.cloudflare.base import CloudflareStore
from trueup.testing.store import JSON

RECORD_TYPES = frozenset(
    [
        "A",
        "AAAA",
        "CAA",
        "CERT",
        "CNAME",
        "DNSKEY",
        "DS",
        "HTTPS",
        "LOC",
        "MX",
        "NAPTR",
        "NS",
        "OPENPGPKEY",
        "PTR",
        "SMIMEA",
        "SRV",
        "SSHFP",
        "SVCB",
        "TLSA",
        "TXT",
        "URI",
    ]
)
PROXIABLE = frozenset({"A", "AAAA", "CNAME"})
PRIORITY_TYPES = frozenset({"MX", "SRV", "URI"})  # "required for MX, SRV and URI"
HOSTNAME_CONTENT = frozenset({"CNAME", "MX", "NS", "PTR"})
_LABEL = re.compile(r"^(\*|[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)$")
ORDER_KEYS = ("type", "name", "content", "ttl", "proxied")


def qualify(name: str, zone_name: str) -> str:
    """Cloudflare's name rule: relative names get the zone appended, ``@`` is the apex."""
    text = name.strip().rstrip(".").lower()
    if text in ("@", zone_name):
        return zone_name
    if text.endswith("." + zone_name):
        return text
    return f"{text}.{zone_name}"


def _valid_name(fqdn: str) -> bool:
    return len(fqdn) <= 253 and all(_LABEL.match(label) for label in fqdn.split("."))


def _same_content(rtype: str, a: str, b: str) -> bool:
    if rtype in HOSTNAME_CONTENT:
        return a.rstrip(".").lower() == b.rstrip(".").lower()
    if rtype in ("A", "AAAA"):
        try:
            return ipaddress.ip_address(a) == ipaddress.ip_address(b)
        except ValueError:
            return a == b
    return a == b


class DnsMixin(CloudflareStore):
    """``/zones/{zone}/dns_records`` behaviour."""

    def records(self, zone_id: str) -> list[JSON]:
        """Test helper: the zone's records as the API would return them."""
        with self._read() as data:
            return [dict(r) for r in data["records"].get(zone_id, {}).values()]

    def add_record(self, zone_id: str, **fields: Any) -> JSON:
        """Test helper: create a record with the API's validation (raises on error)."""
        return self.create_record(zone_id, fields, records_path(zone_id))

    # -- API ---------------------------------------------------------------------------

    def list_records(
        self, zone_id: str, params: dict[str, str], path: str
    ) -> tuple[list[JSON], dict[str, int]]:
        with self._read() as data:
            self._zone(data, zone_id, path)
            records = [dict(r) for r in data["records"][zone_id].values()]
        predicates = _filters(params)
        if predicates:
            combine = any if params.get("match", "all").lower() == "any" else all
            records = [r for r in records if combine(p(r) for p in predicates)]
        order = params.get("order")
        if order in ORDER_KEYS:
            records.sort(key=lambda r: (r[order], r["created_on"]))
        else:
            records.sort(key=lambda r: (r["type"], r["name"], r["content"], r["created_on"]))
        if params.get("direction", "asc").lower() == "desc":
            records.reverse()
        return env.paginate(
            records,
            params.get("page"),
            params.get("per_page"),
            default_per_page=100,
            max_per_page=5000,
        )

    def get_record(self, zone_id: str, record_id: str, path: str) -> JSON:
        with self._read() as data:
            return dict(self._record(data, zone_id, record_id, path))

    def create_record(self, zone_id: str, body: Any, path: str) -> JSON:
        with self._write() as data:
            zone = self._zone(data, zone_id, path)
            candidate = _validated(body, zone["name"])
            self._check_conflicts(data, zone_id, candidate, exclude=None)
            now = cf_time()
            record_id = hex_id()
            record = {
                "id": record_id,
                "zone_id": zone_id,
                "zone_name": zone["name"],
                **candidate,
                "locked": False,
                "meta": {
                    "auto_added": False,
                    "managed_by_apps": False,
                    "managed_by_argo_tunnel": False,
                },
                "created_on": now,
                "modified_on": now,
            }
            data["records"][zone_id][record_id] = record
            return dict(record)

    def replace_record(
        self, zone_id: str, record_id: str, body: Any, path: str, *, partial: bool
    ) -> JSON:
        """PUT overwrites every field; PATCH merges the given ones into the record."""
        with self._write() as data:
            zone = self._zone(data, zone_id, path)
            record = self._record(data, zone_id, record_id, path)
            if partial:
                if not isinstance(body, dict):
                    raise env.error(400, env.MALFORMED_JSON, "Malformed JSON in request body")
                merged = {k: record.get(k) for k in _EDITABLE if k in record}
                merged.update(body)
                body = merged
            candidate = _validated(body, zone["name"])
            self._check_conflicts(data, zone_id, candidate, exclude=record_id)
            for key in _EDITABLE:
                record.pop(key, None)
            record.update(candidate)
            record["modified_on"] = cf_time()
            return dict(record)

    def delete_record(self, zone_id: str, record_id: str, path: str) -> JSON:
        with self._write() as data:
            self._zone(data, zone_id, path)
            self._record(data, zone_id, record_id, path)
            del data["records"][zone_id][record_id]
            return {"id": record_id}

    # -- internals ---------------------------------------------------------------------

    def _record(self, data: JSON, zone_id: str, record_id: str, path: str) -> JSON:
        self._zone(data, zone_id, path)
        record: JSON | None = data["records"][zone_id].get(record_id)
        if record is None:
            raise env.error(404, env.RECORD_NOT_FOUND, "Record does not exist.")
        return record

    def _check_conflicts(
        self, data: JSON, zone_id: str, candidate: JSON, exclude: str | None
    ) -> None:
        same_name = [
            r
            for rid, r in data["records"][zone_id].items()
            if rid != exclude and r["name"] == candidate["name"]
        ]
        for other in same_name:
            if (
                other["type"] == candidate["type"]
                and _same_content(candidate["type"], other["content"], candidate["content"])
                and other.get("priority") == candidate.get("priority")
            ):
                if candidate["type"] == "CNAME":  # one per name: "already exists", not "identical"
                    raise env.error(400, env.RECORD_CLASH, "Record already exists.")
                raise env.error(400, env.RECORD_IDENTICAL, "An identical record already exists.")
        for other in same_name:
            if candidate["type"] == "CNAME" or other["type"] == "CNAME":
                raise env.error(
                    400, env.RECORD_CLASH, "A record with the same name already exists."
                )


_EDITABLE = (
    "type",
    "name",
    "content",
    "ttl",
    "proxied",
    "proxiable",
    "comment",
    "tags",
    "settings",
    "priority",
    "data",
)


def records_path(zone_id: str) -> str:
    return f"/client/v4/zones/{zone_id}/dns_records"


def _validated(body: Any, zone_name: str) -> JSON:
    """Check a create/overwrite body and return the stored fields."""
    if not isinstance(body, dict):
        raise env.error(400, env.MALFORMED_JSON, "Malformed JSON in request body")
    rtype = str(body.get("type") or "").upper()
    if rtype not in RECORD_TYPES:
        raise env.error(400, env.TYPE_INVALID, "Invalid DNS record type.")
    raw_name = body.get("name")
    if not isinstance(raw_name, str) or not raw_name.strip():
        raise env.error(400, env.DNS_NAME_INVALID, "DNS name is invalid.")
    name = qualify(raw_name, zone_name)
    if not _valid_name(name):
        raise env.error(400, env.DNS_NAME_INVALID, "DNS name is invalid.")
    content = body.get("content")
    if content is None and isinstance(body.get("data"), dict):
        content = ""
    if not isinstance(content, str) or (not content and "data" not in body):
        raise env.error(400, env.CONTENT_REQUIRED, "Content for the record is required.")
    if rtype == "A" and not _is_ip(content, 4):
        raise env.error(
            400, env.A_CONTENT_INVALID, "Content for A record must be a valid IPv4 address."
        )
    if rtype == "AAAA" and not _is_ip(content, 6):
        raise env.error(
            400, env.AAAA_CONTENT_INVALID, "Content for AAAA record must be a valid IPv6 address."
        )
    if rtype in HOSTNAME_CONTENT:
        content = content.rstrip(".")
    ttl = body.get("ttl", 1)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not (ttl == 1 or 60 <= ttl <= 86400):
        raise env.error(400, env.INVALID_TTL, "Invalid TTL")
    proxied = body.get("proxied", False)
    if proxied is None:
        proxied = False
    if not isinstance(proxied, bool):
        raise env.error(400, env.RECORD_NOT_PROXIABLE, "proxied must be a boolean.")
    if proxied and rtype not in PROXIABLE:
        raise env.error(400, env.RECORD_NOT_PROXIABLE, "This record type cannot be proxied.")
    out: JSON = {
        "name": name,
        "type": rtype,
        "content": content,
        "proxiable": rtype in PROXIABLE,
        "proxied": proxied,
        "ttl": 1 if proxied else ttl,
        "settings": body.get("settings") if isinstance(body.get("settings"), dict) else {},
        "comment": body.get("comment") if isinstance(body.get("comment"), str) else None,
        "tags": [t for t in body.get("tags") or [] if isinstance(t, str)],
    }
    if rtype in PRIORITY_TYPES:
        priority = body.get("priority")
        if (
            isinstance(priority, bool)
            or not isinstance(priority, int)
            or not 0 <= priority <= 65535
        ):
            raise env.error(
                400,
                env.PRIORITY_REQUIRED,
                f"{rtype} records require a priority between 0 and 65535.",
            )
        out["priority"] = priority
    if isinstance(body.get("data"), dict):
        out["data"] = body["data"]
    return out


def _is_ip(text: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False


def _filters(params: dict[str, str]) -> list[Callable[[JSON], bool]]:
    """Translate Cloudflare's dotted query filters into predicates."""
    preds: list[Callable[[JSON], bool]] = []

    def text_filter(field: str, op: str, value: str) -> None:
        wanted = value.rstrip(".").lower() if field == "name" else value

        def pred(r: JSON) -> bool:
            have = str(r.get(field, ""))
            have = have.lower() if field == "name" else have
            if op == "exact":
                return have == wanted
            if op == "contains":
                return wanted.lower() in have.lower()
            if op == "startswith":
                return have.lower().startswith(wanted.lower())
            return have.lower().endswith(wanted.lower())

        preds.append(pred)

    if params.get("type"):
        wanted_type = params["type"].upper()
        preds.append(lambda r: r["type"] == wanted_type)
    for field in ("name", "content"):
        exact = params.get(f"{field}.exact") or params.get(field)
        if exact:
            text_filter(field, "exact", exact)
        for op in ("contains", "startswith", "endswith"):
            value = params.get(f"{field}.{op}")
            if value:
                text_filter(field, op, value)
    if params.get("proxied") in ("true", "false"):
        flag = params["proxied"] == "true"
        preds.append(lambda r: r["proxied"] is flag)
    return preds
