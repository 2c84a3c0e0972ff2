"""Email Routing for the Cloudflare fake: settings, rules, catch-all, addresses.

Enabling routing (``POST .../email/routing/dns``) adds and locks the MX and
SPF records Cloudflare needs, and disabling removes them again, as the real
API documents; clients that list DNS records must expect them (they carry
``meta.email_routing: true``). Destination addresses are account-scoped and
stay ``verified: null`` until the recipient confirms; tests confirm with
`EmailMixin.verify_address`.
"""

from __future__ import annotations

import re
from typing import Any

from trueup.testing._util import cf_time, hex_id
from trueup.testing.cloudflare import envelope as env
from trueup.testing.cloudflare.base import CloudflareStore
from trueup.testing.store import JSON

ROUTING_MX = (
    ("route1.mx.cloudflare.net", 13),
    ("route2.mx.cloudflare.net", 37),
    ("route3.mx.cloudflare.net", 86),
)
ROUTING_SPF = "v=spf1 include:_spf.mx.cloudflare.net ~all"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
ACTION_TYPES = frozenset({"forward", "drop", "worker"})


class EmailMixin(CloudflareStore):
    """``/zones/{zone}/email/routing/...`` and ``/accounts/{acc}/email/routing/addresses``."""

    # -- test helpers ------------------------------------------------------------------

    def verify_address(self, email: str) -> None:
        """Pretend the recipient clicked the confirmation link."""
        self._seed_verify(email)

    def add_address(self, email: str, *, verified: bool = False) -> JSON:
        """Seed a destination address (optionally already verified)."""
        address = self.create_address(self.account_id, {"email": email}, "")
        if verified:
            self.verify_address(email)
            with self._read() as data:
                address = dict(data["addresses"][self.account_id][address["id"]])
        return address

    def _seed_address(self, email: str) -> None:
        self.add_address(email)

    def _seed_verify(self, email: str) -> None:
        with self._write() as data:
            for address in data["addresses"].get(data["account"]["id"], {}).values():
                if address["email"] == email.lower():
                    address["verified"] = cf_time()
                    address["modified"] = address["verified"]
                    return
        raise ValueError(f"no destination address {email!r}")

    # -- settings ----------------------------------------------------------------------

    def _email(self, data: JSON, zone: JSON) -> JSON:
        """The zone's email-routing block, created on first touch."""
        block: JSON | None = data["email"].get(zone["id"])
        if block is None:
            now = cf_time()
            tag = hex_id()
            catch_all_tag = hex_id()
            block = {
                "settings": {
                    "id": tag,
                    "tag": tag,
                    "name": zone["name"],
                    "enabled": False,
                    "created": now,
                    "modified": now,
                    "skip_wizard": True,
                    "status": "unconfigured",
                },
                "rules": {},
                "catch_all": {
                    "id": catch_all_tag,
                    "tag": catch_all_tag,
                    "name": "",
                    "enabled": False,
                    "matchers": [{"type": "all"}],
                    "actions": [{"type": "drop"}],
                },
            }
            data["email"][zone["id"]] = block
        return block

    def routing_settings(self, zone_id: str, path: str) -> JSON:
        with self._write() as data:
            return dict(self._email(data, self._zone(data, zone_id, path))["settings"])

    def routing_dns(self, zone_id: str, path: str) -> list[JSON]:
        """The records Email Routing needs at the apex."""
        with self._read() as data:
            zone = self._zone(data, zone_id, path)
        wanted: list[JSON] = [
            {"type": "MX", "name": zone["name"], "content": host, "priority": prio, "ttl": 1}
            for host, prio in ROUTING_MX
        ]
        wanted.append({"type": "TXT", "name": zone["name"], "content": ROUTING_SPF, "ttl": 1})
        return wanted

    def enable_routing(self, zone_id: str, path: str, body: Any) -> JSON:
        """``POST .../dns`` names the zone in its body (``name``); the deprecated
        ``.../enable`` passes ``{"name": None}``: it takes no body."""
        with self._write() as data:
            zone = self._zone(data, zone_id, path)
            name = body.get("name", "") if isinstance(body, dict) else ""
            if name is not None and name != zone["name"]:
                raise env.error(
                    400, env.EMAIL_INVALID_INPUT, f"name: expected the zone's name {zone['name']}"
                )
            block = self._email(data, zone)
            records = data["records"][zone_id]
            foreign_mx = any(
                r["type"] == "MX"
                and r["name"] == zone["name"]
                and not r["meta"].get("email_routing")
                for r in records.values()
            )
            present = {
                (r["type"], r["content"])
                for r in records.values()
                if r["meta"].get("email_routing")
            }
            now = cf_time()
            for wanted in self.routing_dns(zone_id, path):
                if (wanted["type"], wanted["content"]) in present:
                    continue
                record_id = hex_id()
                records[record_id] = {
                    "id": record_id,
                    "zone_id": zone_id,
                    "zone_name": zone["name"],
                    **wanted,
                    "proxiable": False,
                    "proxied": False,
                    "settings": {},
                    "comment": None,
                    "tags": [],
                    "locked": True,
                    "meta": {"auto_added": False, "email_routing": True, "read_only": True},
                    "created_on": now,
                    "modified_on": now,
                }
            settings = block["settings"]
            settings.update(
                enabled=True,
                status="misconfigured" if foreign_mx else "ready",
                modified=now,
            )
            return dict(settings)

    def disable_routing(self, zone_id: str, path: str) -> tuple[JSON, list[JSON]]:
        """The settings after it, and the records it removed.

        ``DELETE .../dns`` answers the settings (the current API) or, with
        ``routing_delete_lists``, the removed records (older API versions).
        """
        with self._write() as data:
            zone = self._zone(data, zone_id, path)
            block = self._email(data, zone)
            records = data["records"][zone_id]
            removed = [rid for rid, r in records.items() if r["meta"].get("email_routing")]
            gone = [records.pop(record_id) for record_id in removed]
            block["settings"].update(enabled=False, status="unconfigured", modified=cf_time())
            return dict(block["settings"]), gone

    # -- rules -------------------------------------------------------------------------

    def list_rules(
        self, zone_id: str, params: dict[str, str], path: str
    ) -> tuple[list[JSON], dict[str, int]]:
        with self._write() as data:
            rules = [
                dict(r)
                for r in self._email(data, self._zone(data, zone_id, path))["rules"].values()
            ]
        if params.get("enabled") in ("true", "false"):
            flag = params["enabled"] == "true"
            rules = [r for r in rules if r["enabled"] is flag]
        rules.sort(key=lambda r: int(r["priority"]))
        return env.paginate(
            rules, params.get("page"), params.get("per_page"), default_per_page=20, max_per_page=50
        )

    def create_rule(self, zone_id: str, body: Any, path: str) -> JSON:
        with self._write() as data:
            block = self._email(data, self._zone(data, zone_id, path))
            fields = _rule_fields(body, catch_all=False)
            rule_id = hex_id()
            rule = {"id": rule_id, "tag": rule_id, **fields}
            block["rules"][rule_id] = rule
            return dict(rule)

    def get_rule(self, zone_id: str, rule_id: str, path: str) -> JSON:
        with self._write() as data:
            return dict(self._rule(data, zone_id, rule_id, path))

    def update_rule(self, zone_id: str, rule_id: str, body: Any, path: str) -> JSON:
        with self._write() as data:
            rule = self._rule(data, zone_id, rule_id, path)
            rule.update(_rule_fields(body, catch_all=False))
            return dict(rule)

    def delete_rule(self, zone_id: str, rule_id: str, path: str) -> JSON:
        with self._write() as data:
            rule = self._rule(data, zone_id, rule_id, path)
            del data["email"][zone_id]["rules"][rule_id]
            return dict(rule)

    def get_catch_all(self, zone_id: str, path: str) -> JSON:
        with self._write() as data:
            return dict(self._email(data, self._zone(data, zone_id, path))["catch_all"])

    def update_catch_all(self, zone_id: str, body: Any, path: str) -> JSON:
        with self._write() as data:
            block = self._email(data, self._zone(data, zone_id, path))
            fields = _rule_fields(body, catch_all=True)
            fields.pop("priority", None)
            block["catch_all"].update(fields)
            return dict(block["catch_all"])

    def _rule(self, data: JSON, zone_id: str, rule_id: str, path: str) -> JSON:
        block = self._email(data, self._zone(data, zone_id, path))
        rule: JSON | None = block["rules"].get(rule_id)
        if rule is None:
            raise env.error(404, env.EMAIL_RULE_NOT_FOUND, "Rule not found")
        return rule

    # -- destination addresses -----------------------------------------------------------

    def list_addresses(
        self, account_id: str, params: dict[str, str], path: str
    ) -> tuple[list[JSON], dict[str, int]]:
        with self._read() as data:
            self._account(data, account_id, path)
            items = [dict(a) for a in data["addresses"].get(account_id, {}).values()]
        if params.get("verified") in ("true", "false"):
            want = params["verified"] == "true"
            items = [a for a in items if (a["verified"] is not None) is want]
        if params.get("direction", "asc").lower() == "desc":
            items.reverse()
        return env.paginate(
            items, params.get("page"), params.get("per_page"), default_per_page=20, max_per_page=50
        )

    def create_address(self, account_id: str, body: Any, path: str) -> JSON:
        email = body.get("email") if isinstance(body, dict) else None
        if not isinstance(email, str) or not _EMAIL.match(email.strip()):
            raise env.error(400, env.EMAIL_INVALID_INPUT, "Invalid email address")
        email = email.strip().lower()
        with self._write() as data:
            self._account(data, account_id, path)
            book = data["addresses"].setdefault(account_id, {})
            if any(a["email"] == email for a in book.values()):
                raise env.error(400, env.ADDRESS_EXISTS, "Destination address already exists.")
            now = cf_time()
            address_id = hex_id()
            address = {
                "id": address_id,
                "tag": address_id,
                "email": email,
                "verified": None,
                "created": now,
                "modified": now,
            }
            book[address_id] = address
            return dict(address)

    def get_address(self, account_id: str, address_id: str, path: str) -> JSON:
        with self._read() as data:
            return dict(self._address(data, account_id, address_id, path))

    def delete_address(self, account_id: str, address_id: str, path: str) -> JSON:
        with self._write() as data:
            address = self._address(data, account_id, address_id, path)
            del data["addresses"][account_id][address_id]
            return dict(address)

    def _address(self, data: JSON, account_id: str, address_id: str, path: str) -> JSON:
        self._account(data, account_id, path)
        address: JSON | None = data["addresses"].get(account_id, {}).get(address_id)
        if address is None:
            raise env.error(404, env.ADDRESS_NOT_FOUND, "Destination address not found")
        return address


def _rule_fields(body: Any, *, catch_all: bool) -> JSON:
    """Validate a rule (or catch-all) body; returns the stored fields."""
    if not isinstance(body, dict):
        raise env.error(400, env.MALFORMED_JSON, "Malformed JSON in request body")
    matchers = body.get("matchers")
    if not isinstance(matchers, list) or not matchers:
        raise env.error(400, env.EMAIL_INVALID_INPUT, "matchers: at least one matcher is required")
    for matcher in matchers:
        if not isinstance(matcher, dict):
            raise env.error(400, env.EMAIL_INVALID_INPUT, "matchers: invalid matcher")
        if catch_all:
            if matcher.get("type") != "all":
                raise env.error(
                    400, env.EMAIL_INVALID_INPUT, "catch-all matchers must be of type all"
                )
        elif (
            matcher.get("type") != "literal"
            or matcher.get("field") != "to"
            or not isinstance(matcher.get("value"), str)
            or not matcher["value"]
        ):
            raise env.error(
                400,
                env.EMAIL_INVALID_INPUT,
                "matchers: expected {type: literal, field: to, value: <address>}",
            )
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions:
        raise env.error(400, env.EMAIL_INVALID_INPUT, "actions: at least one action is required")
    for action in actions:
        if not isinstance(action, dict) or action.get("type") not in ACTION_TYPES:
            raise env.error(
                400, env.EMAIL_INVALID_INPUT, "actions: type must be forward, drop or worker"
            )
        value = action.get("value")
        if action["type"] != "drop" and (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise env.error(400, env.EMAIL_INVALID_INPUT, "actions: value must list destinations")
        if action["type"] == "forward" and isinstance(value, list) and len(value) > 1:
            # "Currently limited to a single value" (the API's own schema).
            raise env.error(
                400, env.EMAIL_INVALID_INPUT, "actions: forward takes a single destination address"
            )
    enabled = body.get("enabled", True)
    priority = body.get("priority", 0)
    if not isinstance(enabled, bool):
        raise env.error(400, env.EMAIL_INVALID_INPUT, "enabled must be a boolean")
    if isinstance(priority, bool) or not isinstance(priority, int) or priority < 0:
        raise env.error(400, env.EMAIL_INVALID_INPUT, "priority must be a non-negative integer")
    name = body.get("name", "")
    return {
        "name": name if isinstance(name, str) else "",
        "priority": priority,
        "enabled": enabled,
        "matchers": [dict(m) for m in matchers],
        "actions": [dict(a) for a in actions],
    }
