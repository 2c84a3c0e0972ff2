"""Cloudflare API v4 over httpx, for one zone and its account.

Why not the official ``cloudflare`` SDK: it is heavy to import (hundreds of
generated modules, slow CLI start-up) and has its own retry loop, while
trueup needs every remote call to go through one layer that journals,
retries and counts uniformly (`trueup.providers.http`). The endpoints used
here are few and stable (reference/provider-apis.md), so plain HTTP is less
code than adapting the SDK.

Quirks handled: every answer is an envelope ``{success, errors, result}``;
lists page by ``page``/``per_page`` (pages after the first are fetched
concurrently once ``total_pages`` is known, and a client that never sees
``total_pages`` keeps asking until a page is empty, like the SDK); creating
an identical record fails with 81058, or 81057 ("already exists", what
Cloudflare answers for a CNAME and in older API versions), so both mean "look
it up by name and type"; only an identical one found there is "already there".
Enabling Email Routing sends the zone's name in the body; disabling it answers
the settings (current API) or the DNS records it removed (older versions, a
list): either is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from trueup.providers.http import (
    AmbiguousWrite,
    HttpClient,
    ProviderError,
    answer,
    fan_out,
    json_object,
)

JSON = dict[str, Any]
IDENTICAL_RECORD = 81058
#: "Record already exists": an identical record too, for some types and API versions.
RECORD_EXISTS = 81057
RECORD_PAGE = 100
EMAIL_PAGE = 50


def parse_error(response: httpx.Response) -> tuple[str, list[int | str]]:
    body = json_object(response)
    errors = body.get("errors") if body is not None else None
    if not errors:
        return response.reason_phrase or "error", []
    messages = [f"{e.get('message', '')} ({e.get('code')})" for e in errors if isinstance(e, dict)]
    codes: list[int | str] = [e["code"] for e in errors if isinstance(e, dict) and "code" in e]
    return "; ".join(messages), codes


class CloudflareClient:
    def __init__(self, http: HttpClient, account_id: str | None = None) -> None:
        self.http = http
        self.account_id = account_id

    def reader(self) -> CloudflareClient:
        return CloudflareClient(self.http.reader(), self.account_id)

    # -- plumbing -----------------------------------------------------------------
    def _result(self, response: httpx.Response) -> Any:
        body = answer(response, "cloudflare", dict)
        if not body.get("success", False):
            message, codes = parse_error(response)
            raise ProviderError(
                "cloudflare",
                response.request.method,
                response.request.url.path,
                response.status_code,
                message,
                codes,
            )
        return body.get("result")

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self._result(self.http.request("GET", path, params=params))

    def _send(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        return self._result(self.http.request(method, path, json=body, **kw))

    def list_all(
        self, path: str, per_page: int, params: Mapping[str, Any] | None = None
    ) -> list[JSON]:
        """Every page of a list; pages 2..n concurrently when the total is known."""
        base = dict(params or {}, per_page=per_page)
        response = self.http.request("GET", path, params={**base, "page": 1})
        first = answer(response, "cloudflare", dict)
        if not isinstance(first.get("result"), list):
            raise ProviderError(
                "cloudflare", "GET", path, response.status_code, "the answer holds no list"
            )
        items: list[JSON] = list(first["result"])
        total = (first.get("result_info") or {}).get("total_pages")
        if isinstance(total, int) and total > 1:
            pages = fan_out(
                lambda n: self._get(path, {**base, "page": n}) or [], range(2, total + 1)
            )
            for page in pages:
                items.extend(page)
            return items
        page = 1
        while len(items) >= page * per_page:  # no total: ask until a page is short or empty
            page += 1
            more = self._get(path, {**base, "page": page}) or []
            if not more:
                break
            items.extend(more)
        return items

    # -- zones --------------------------------------------------------------------
    def zone_by_name(self, name: str) -> JSON | None:
        found = self._get("/zones", {"name": name})
        return found[0] if found else None

    # -- DNS records --------------------------------------------------------------
    def records(self, zone: str) -> list[JSON]:
        return self.list_all(f"/zones/{zone}/dns_records", RECORD_PAGE)

    def record(self, zone: str, record_id: str) -> JSON | None:
        response = self.http.request(
            "GET", f"/zones/{zone}/dns_records/{record_id}", missing_ok=True
        )
        return None if response.status_code == 404 else self._result(response)

    def find_records(self, zone: str, rtype: str, name: str) -> list[JSON]:
        return self.list_all(
            f"/zones/{zone}/dns_records", RECORD_PAGE, {"type": rtype, "name.exact": name}
        )

    def create_record(self, zone: str, body: JSON) -> JSON:
        """Create, treating "an identical record already exists" as found.

        Replaying a create is safe here: Cloudflare refuses a duplicate with
        81058 or 81057, and then the existing record is looked up by name and
        type. 81057 with no identical record there is a real clash: its error
        stands.
        """
        try:
            created: JSON = self._send("POST", f"/zones/{zone}/dns_records", body)
            return created
        except ProviderError as exc:
            if IDENTICAL_RECORD not in exc.codes and RECORD_EXISTS not in exc.codes:
                raise
            refused = exc
        for record in self.find_records(zone, body["type"], body["name"]):
            if _same(record, body):
                return record
        if IDENTICAL_RECORD not in refused.codes:
            raise refused
        raise ProviderError(
            "cloudflare",
            "POST",
            f"/zones/{zone}/dns_records",
            400,
            "identical record reported but not found",
        )

    def put_record(self, zone: str, record_id: str, body: JSON) -> JSON:
        result: JSON = self._send("PUT", f"/zones/{zone}/dns_records/{record_id}", body)
        return result

    def delete_record(self, zone: str, record_id: str) -> None:
        self.http.request("DELETE", f"/zones/{zone}/dns_records/{record_id}", missing_ok=True)

    # -- email routing ------------------------------------------------------------
    def routing(self, zone: str) -> JSON:
        result: JSON = self._get(f"/zones/{zone}/email/routing")
        return result

    def set_routing(self, zone: str, zone_name: str, enabled: bool) -> JSON:
        """Turn Email Routing on (the body names the zone) or off; the settings after it."""
        path = f"/zones/{zone}/email/routing/dns"
        result = (
            self._send("POST", path, {"name": zone_name}) if enabled else self._send("DELETE", path)
        )
        if isinstance(result, dict):
            return result
        if isinstance(result, list) or result is None:  # the records it removed: read again
            return self.routing(zone)
        raise ProviderError(
            "cloudflare", "DELETE", path, 200, "the answer is neither the settings nor a list"
        )

    def rules(self, zone: str) -> list[JSON]:
        return self.list_all(f"/zones/{zone}/email/routing/rules", EMAIL_PAGE)

    def rule(self, zone: str, rule_id: str) -> JSON | None:
        response = self.http.request(
            "GET", f"/zones/{zone}/email/routing/rules/{rule_id}", missing_ok=True
        )
        return None if response.status_code == 404 else self._result(response)

    def create_rule(self, zone: str, body: JSON, address: str) -> JSON:
        """Rules have no uniqueness check, so an ambiguous create looks first."""
        for _ in range(3):
            try:
                created: JSON = self._send(
                    "POST", f"/zones/{zone}/email/routing/rules", body, replay="unsent-only"
                )
                return created
            except AmbiguousWrite:
                found = [r for r in self.rules(zone) if rule_address(r) == address]
                if found:
                    return found[0]
        raise ProviderError(
            "cloudflare",
            "POST",
            f"/zones/{zone}/email/routing/rules",
            None,
            "could not create the rule after 3 attempts",
        )

    def put_rule(self, zone: str, rule_id: str, body: JSON) -> JSON:
        result: JSON = self._send("PUT", f"/zones/{zone}/email/routing/rules/{rule_id}", body)
        return result

    def delete_rule(self, zone: str, rule_id: str) -> None:
        self.http.request("DELETE", f"/zones/{zone}/email/routing/rules/{rule_id}", missing_ok=True)

    def catch_all(self, zone: str) -> JSON:
        result: JSON = self._get(f"/zones/{zone}/email/routing/rules/catch_all")
        return result

    def put_catch_all(self, zone: str, body: JSON) -> JSON:
        result: JSON = self._send("PUT", f"/zones/{zone}/email/routing/rules/catch_all", body)
        return result

    # -- destination addresses (account-scoped) ----------------------------------
    def addresses(self, account: str) -> list[JSON]:
        return self.list_all(f"/accounts/{account}/email/routing/addresses", EMAIL_PAGE)

    def address(self, account: str, address_id: str) -> JSON | None:
        response = self.http.request(
            "GET", f"/accounts/{account}/email/routing/addresses/{address_id}", missing_ok=True
        )
        return None if response.status_code == 404 else self._result(response)

    def create_address(self, account: str, email: str) -> JSON:
        """Addresses are unique per account: "already exists" means found."""
        path = f"/accounts/{account}/email/routing/addresses"
        try:
            created: JSON = self._send("POST", path, {"email": email})
            return created
        except ProviderError as exc:
            if exc.status != 400 or "exist" not in exc.detail.lower():
                raise
        for item in self.addresses(account):
            if str(item.get("email", "")).lower() == email.lower():
                return item
        raise ProviderError("cloudflare", "POST", path, 400, "address reported but not found")

    def delete_address(self, account: str, address_id: str) -> None:
        self.http.request(
            "DELETE", f"/accounts/{account}/email/routing/addresses/{address_id}", missing_ok=True
        )


def rule_address(rule: Mapping[str, Any]) -> str | None:
    """The address a forwarding rule matches (``literal`` ``to``), lower-cased."""
    for matcher in rule.get("matchers") or []:
        if matcher.get("type") == "literal" and matcher.get("field") == "to":
            return str(matcher.get("value", "")).lower()
    return None


def _same(record: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    a, b = str(record.get("content", "")), str(body.get("content", ""))
    if body.get("type") in ("CNAME", "MX", "NS", "PTR"):
        a, b = a.rstrip(".").lower(), b.rstrip(".").lower()
    return a == b and record.get("priority") == body.get("priority")
