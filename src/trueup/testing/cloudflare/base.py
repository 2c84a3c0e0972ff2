"""Cloudflare fake state: the account and its zones, shared by the DNS and
email-routing parts (which live in their own modules to stay small)."""

from __future__ import annotations

import os
from typing import Any

from trueup.testing._util import cf_time, hex_id
from trueup.testing.cloudflare import envelope as env
from trueup.testing.store import JSON, JsonStore

API_PREFIX = "/client/v4"


class CloudflareStore(JsonStore):
    """One account with zones; DNS records, email routing and addresses hang off it."""

    def __init__(
        self,
        state_file: str | os.PathLike[str] | None = None,
        *,
        account_name: str = "Fake Account",
    ) -> None:
        self._account_name = account_name
        #: ``DELETE .../email/routing/dns`` answers the removed records (a list), as
        #: older API versions do, instead of the settings.
        self.routing_delete_lists = False
        super().__init__(state_file)

    def _initial(self) -> JSON:
        return {
            "account": {"id": hex_id(), "name": self._account_name},
            "token_id": hex_id(),
            "zones": {},
            "records": {},
            "email": {},
            "addresses": {},
        }

    # -- seeding helpers (test thread) -------------------------------------------------

    @property
    def account_id(self) -> str:
        """The one account every zone and destination address belongs to."""
        with self._read() as data:
            return str(data["account"]["id"])

    def add_zone(self, name: str, *, status: str = "active") -> str:
        """Create a zone (or return the id of the existing one with that name)."""
        zone_name = name.strip().rstrip(".").lower()
        if not zone_name:
            raise ValueError("zone name must not be empty")
        with self._write() as data:
            for zone in data["zones"].values():
                if zone["name"] == zone_name:
                    return str(zone["id"])
            now = cf_time()
            zone_id = hex_id()
            data["zones"][zone_id] = {
                "id": zone_id,
                "name": zone_name,
                "status": status,
                "paused": False,
                "type": "full",
                "development_mode": 0,
                "name_servers": ["ada.ns.cloudflare.com", "bob.ns.cloudflare.com"],
                "original_name_servers": None,
                "original_registrar": None,
                "original_dnshost": None,
                "created_on": now,
                "modified_on": now,
                "activated_on": now if status == "active" else None,
                "meta": {"step": 2, "phishing_detected": False},
                "owner": {"id": None, "type": "user", "email": None},
                "account": dict(data["account"]),
                "permissions": ["#dns_records:edit", "#dns_records:read", "#zone:read"],
                "plan": {"id": "0feeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "name": "Free Website"},
            }
            data["records"][zone_id] = {}
            return zone_id

    def zone_id(self, name: str) -> str | None:
        """The id of the zone with this name, if any."""
        wanted = name.strip().rstrip(".").lower()
        with self._read() as data:
            for zone in data["zones"].values():
                if zone["name"] == wanted:
                    return str(zone["id"])
        return None

    def seed(self, payload: JSON) -> JSON:
        """``POST /_fake/seed``: ``{"zones": [names], "verify_addresses": [emails]}``."""
        unknown = set(payload) - {"zones", "verify_addresses", "addresses"}
        if unknown:
            raise ValueError(f"unknown seed field(s): {', '.join(sorted(unknown))}")
        zones = {name: self.add_zone(name) for name in payload.get("zones", [])}
        for email in payload.get("addresses", []):
            self._seed_address(email)
        for email in payload.get("verify_addresses", []):
            self._seed_verify(email)
        return {"account_id": self.account_id, "zones": zones}

    def _seed_address(self, email: str) -> None:
        raise NotImplementedError

    def _seed_verify(self, email: str) -> None:
        raise NotImplementedError

    # -- API-side helpers ----------------------------------------------------------------

    def _zone(self, data: JSON, zone_id: str, path: str) -> JSON:
        if not env.is_identifier(zone_id):
            raise env.invalid_identifier(path)
        zone: JSON | None = data["zones"].get(zone_id)
        if zone is None:
            raise env.unknown_object(path)
        return zone

    def _account(self, data: JSON, account_id: str, path: str) -> JSON:
        if not env.is_identifier(account_id):
            raise env.invalid_identifier(path)
        if data["account"]["id"] != account_id:
            raise env.unknown_object(path)
        return dict(data["account"])

    def list_zones(self, params: dict[str, str]) -> tuple[list[JSON], dict[str, int]]:
        with self._read() as data:
            zones = list(data["zones"].values())
        name = params.get("name")
        if name:
            zones = [z for z in zones if z["name"] == name.strip().rstrip(".").lower()]
        status = params.get("status")
        if status:
            zones = [z for z in zones if z["status"] == status]
        account = params.get("account.id")
        if account:
            zones = [z for z in zones if z["account"]["id"] == account]
        zones.sort(key=lambda z: str(z["name"]))
        if params.get("direction") == "desc":
            zones.reverse()
        return env.paginate(
            [dict(z) for z in zones],
            params.get("page"),
            params.get("per_page"),
            default_per_page=20,
            max_per_page=50,
        )

    def get_zone(self, zone_id: str, path: str) -> JSON:
        with self._read() as data:
            return dict(self._zone(data, zone_id, path))

    def list_accounts(self) -> list[JSON]:
        with self._read() as data:
            return [self._account_view(data)]

    def get_account(self, account_id: str, path: str) -> JSON:
        with self._read() as data:
            self._account(data, account_id, path)
            return self._account_view(data)

    def _account_view(self, data: JSON) -> JSON:
        account: dict[str, Any] = dict(data["account"])
        account.update({"type": "standard", "settings": {"enforce_twofactor": False}})
        return account

    def token_status(self) -> JSON:
        with self._read() as data:
            return {"id": data["token_id"], "status": "active"}
