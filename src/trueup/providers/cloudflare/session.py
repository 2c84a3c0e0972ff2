"""One run's view of one Cloudflare zone: read once, in parallel, then looked up.

The scope is the org's zone: its DNS records and its Email Routing (settings,
rules, catch-all) plus the account's destination addresses. Everything is
read concurrently at the start of a plan; kinds find their objects here
instead of asking the API once per resource.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trueup.errors import UsageError
from trueup.providers.cloudflare.client import CloudflareClient
from trueup.providers.http import fan_out
from trueup.providers.remote import Session

JSON = dict[str, Any]


class CloudflareSession(Session):
    provider = "cloudflare"
    read: CloudflareClient

    def __init__(
        self, read: CloudflareClient, write: CloudflareClient | None, zone_name: str
    ) -> None:
        super().__init__(read, write)
        self.zone_name = zone_name
        self.zone: JSON | None = None
        self.records: dict[str, JSON] = {}
        self.routing: JSON | None = None
        self.rules: dict[str, JSON] = {}
        self.catch_all: JSON | None = None
        self.addresses: dict[str, JSON] = {}
        self.mail_read = False

    @property
    def zone_id(self) -> str:
        if self.zone is None:
            raise UsageError(
                f"Cloudflare has no zone {self.zone_name} in this account",
                hint="add the zone in Cloudflare first; trueup manages its records, not the zone",
            )
        return str(self.zone["id"])

    @property
    def account(self) -> str:
        if self.read.account_id:
            return self.read.account_id
        if self.zone is None:
            return self.zone_id  # raises the "no zone" error
        return str(self.zone["account"]["id"])

    def scope_id(self) -> str | None:
        return str(self.zone["id"]) if self.zone else None

    def load(self, mail: bool) -> None:
        """Read the zone, then its records and (when mail is managed) its routing."""
        self.zone = self.read.zone_by_name(self.zone_name)
        zone = self.zone_id
        tasks: list[tuple[str, Callable[[], Any]]] = [("records", lambda: self.read.records(zone))]
        if mail:
            tasks += [
                ("routing", lambda: self.read.routing(zone)),
                ("rules", lambda: self.read.rules(zone)),
                ("catch_all", lambda: self.read.catch_all(zone)),
                ("addresses", lambda: self.read.addresses(self.account)),
            ]
        results: dict[str, Any] = dict(fan_out(lambda task: (task[0], task[1]()), tasks))
        self.records = {str(r["id"]): r for r in results["records"]}
        if mail:
            self.mail_read = True
            self.routing = results["routing"]
            self.rules = {str(r["id"]): r for r in results["rules"]}
            self.catch_all = results["catch_all"]
            self.addresses = {str(a["email"]).lower(): a for a in results["addresses"]}
