"""ZITADEL over httpx: organizations with the v2 API, the rest with Management v1.

ZITADEL moved organizations to v2 (``/v2/organizations``, v1's ``/orgs`` is
deprecated), and those calls use it. Projects, roles, OIDC applications and
project grants still need Management v1: their v2 services (project and
application v2beta) are not yet stable across the versions trueup supports.
Reading the org itself (``GET /management/v1/orgs/me``) stays v1 too.

Quirks handled: the org a call acts in is the ``x-zitadel-orgid`` header;
lists are ``POST .../_search`` pages of at most 1000 (``totalResult`` is a
string); names are unique per scope and a duplicate is gRPC code 6 (AlreadyExists,
HTTP 409), so replaying a create is safe and a conflict means "found"; an
update that changes nothing is code 9 (FailedPrecondition, HTTP 400) with one
of the "no changes" error ids, which counts as success. Both are told by code
and error id, never by the message: a real server translates it ("No changes
(COMMAND-1m88i)"), so the key ``Errors.NoChangesFound`` never reaches a client.
The OIDC ``clientSecret`` is returned once, by the
create call, and is handed straight to the caller (never logged or kept).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx

from trueup.providers.http import HttpClient, ProviderError, answer, fan_out, json_object

JSON = dict[str, Any]
ORG_HEADER = "x-zitadel-orgid"
MGMT = "/management/v1"
PAGE = 1000
EQUALS = "TEXT_QUERY_METHOD_EQUALS"


#: gRPC status codes (google.rpc.Code) ZITADEL's errors carry.
ALREADY_EXISTS = 6
FAILED_PRECONDITION = 9
#: The error ids of ZITADEL's "no changes" answers to the updates trueup sends:
#: project (COMMAND-1m88i), role (COMMAND-5M0cs), app name (COMMAND-2m8vx), OIDC
#: configuration (COMMAND-1m88i) and project grant (COMMAND-0o0pL).
NO_CHANGES = frozenset({"COMMAND-1m88i", "COMMAND-5M0cs", "COMMAND-2m8vx", "COMMAND-0o0pL"})
_TRAILING_ID = re.compile(r"\(([A-Za-z]+-[A-Za-z0-9]+)\)\s*$")


def parse_error(response: httpx.Response) -> tuple[str, list[int | str]]:
    """The message, and as codes the gRPC code and the error id (from details or the message)."""
    body = json_object(response)
    if body is None:
        return response.reason_phrase or "error", []
    message = str(body.get("message") or response.reason_phrase)
    codes: list[int | str] = []
    if isinstance(body.get("code"), int) and not isinstance(body.get("code"), bool):
        codes.append(body["code"])
    ident = _error_id(body, message)
    if ident:
        codes.append(ident)
    return message, codes


def _error_id(body: JSON, message: str) -> str | None:
    for detail in body.get("details") or []:
        if isinstance(detail, dict) and isinstance(detail.get("id"), str):
            return str(detail["id"])
    found = _TRAILING_ID.search(message)
    return found[1] if found else None


def _exists(exc: ProviderError) -> bool:
    return exc.status == 409 or ALREADY_EXISTS in exc.codes


def _unchanged(exc: ProviderError) -> bool:
    """An update that changed nothing: told by code and error id, whatever the language."""
    precondition = exc.status == 400 or FAILED_PRECONDITION in exc.codes
    return precondition and any(code in NO_CHANGES for code in exc.codes)


class ZitadelClient:
    def __init__(self, http: HttpClient) -> None:
        self.http = http

    def reader(self) -> ZitadelClient:
        return ZitadelClient(self.http.reader())

    def _call(self, method: str, path: str, org: str | None, body: Any = None, **kw: Any) -> JSON:
        headers = {ORG_HEADER: org} if org else None
        response = self.http.request(method, path, json=body, headers=headers, **kw)
        result: JSON = answer(response, "zitadel", dict) if response.content else {}
        return result

    def _update(self, method: str, path: str, org: str, body: Any) -> None:
        try:
            self._call(method, path, org, body)
        except ProviderError as exc:
            if not _unchanged(exc):
                raise

    def search(self, path: str, org: str | None, queries: list[JSON] | None = None) -> list[JSON]:
        """Every page of a ``_search``; pages after the first are read concurrently."""

        def page(offset: int) -> JSON:
            body: JSON = {"query": {"offset": str(offset), "limit": PAGE, "asc": True}}
            if queries:
                body["queries"] = queries
            return self._call("POST", path, org, body)

        first = page(0)
        items: list[JSON] = list(first.get("result") or [])
        total = int((first.get("details") or {}).get("totalResult") or 0)
        if total > PAGE:
            for more in fan_out(page, range(PAGE, total, PAGE)):
                items.extend(more.get("result") or [])
        return items

    def _maybe(self, path: str, org: str) -> JSON | None:
        response = self.http.request("GET", path, headers={ORG_HEADER: org}, missing_ok=True)
        if response.status_code == 404:
            return None
        found: JSON = answer(response, "zitadel", dict)
        return found

    def _create(
        self, path: str, org: str | None, body: JSON, find: Callable[[], JSON | None]
    ) -> JSON:
        try:
            return self._call("POST", path, org, body)
        except ProviderError as exc:
            if not _exists(exc):
                raise
        found = find()
        if found is None:
            raise ProviderError("zitadel", "POST", path, 409, "reported as existing but not found")
        return found

    # -- organizations --------------------------------------------------------------
    def org_by_name(self, name: str) -> JSON | None:
        found = self.search(
            "/v2/organizations/_search", None, [{"nameQuery": {"name": name, "method": EQUALS}}]
        )
        return found[0] if found else None

    def org(self, org_id: str) -> JSON | None:
        found = self._maybe(f"{MGMT}/orgs/me", org_id)
        return (found or {}).get("org")

    def create_org(self, name: str) -> str:
        """With v2 (``POST /v2/organizations``): ZITADEL deprecated v1's ``POST /orgs``."""
        created = self._create(
            "/v2/organizations", None, {"name": name}, lambda: self.org_by_name(name)
        )
        return str(created.get("organizationId") or created["id"])

    # -- projects -------------------------------------------------------------------
    def projects(self, org: str) -> list[JSON]:
        return self.search(f"{MGMT}/projects/_search", org)

    def project(self, org: str, project: str) -> JSON | None:
        return (self._maybe(f"{MGMT}/projects/{project}", org) or {}).get("project")

    def project_by_name(self, org: str, name: str) -> JSON | None:
        found = self.search(
            f"{MGMT}/projects/_search", org, [{"nameQuery": {"name": name, "method": EQUALS}}]
        )
        return found[0] if found else None

    def create_project(self, org: str, body: JSON) -> str:
        created = self._create(
            f"{MGMT}/projects", org, body, lambda: self.project_by_name(org, body["name"])
        )
        return str(created["id"])

    def update_project(self, org: str, project: str, body: JSON) -> None:
        self._update("PUT", f"{MGMT}/projects/{project}", org, body)

    def delete_project(self, org: str, project: str) -> None:
        self.http.request(
            "DELETE", f"{MGMT}/projects/{project}", headers={ORG_HEADER: org}, missing_ok=True
        )

    # -- roles ----------------------------------------------------------------------
    def roles(self, org: str, project: str) -> list[JSON]:
        return self.search(f"{MGMT}/projects/{project}/roles/_search", org)

    def add_role(self, org: str, project: str, body: JSON) -> None:
        try:
            self._call("POST", f"{MGMT}/projects/{project}/roles", org, body)
        except ProviderError as exc:
            if not _exists(exc):
                raise
            self.update_role(org, project, body["roleKey"], body)

    def update_role(self, org: str, project: str, key: str, body: JSON) -> None:
        update = {"displayName": body["displayName"], "group": body.get("group", "")}
        self._update("PUT", f"{MGMT}/projects/{project}/roles/{key}", org, update)

    def delete_role(self, org: str, project: str, key: str) -> None:
        self.http.request(
            "DELETE",
            f"{MGMT}/projects/{project}/roles/{key}",
            headers={ORG_HEADER: org},
            missing_ok=True,
        )

    # -- OIDC applications ----------------------------------------------------------
    def apps(self, org: str, project: str) -> list[JSON]:
        return self.search(f"{MGMT}/projects/{project}/apps/_search", org)

    def app(self, org: str, project: str, app: str) -> JSON | None:
        return (self._maybe(f"{MGMT}/projects/{project}/apps/{app}", org) or {}).get("app")

    def app_by_name(self, org: str, project: str, name: str) -> JSON | None:
        found = self.search(
            f"{MGMT}/projects/{project}/apps/_search",
            org,
            [{"nameQuery": {"name": name, "method": EQUALS}}],
        )
        return found[0] if found else None

    def create_oidc_app(self, org: str, project: str, body: JSON) -> JSON:
        """``{appId, clientId, clientSecret?}``; an existing app comes back without a secret."""
        path = f"{MGMT}/projects/{project}/apps/oidc"
        try:
            return self._call("POST", path, org, body)
        except ProviderError as exc:
            if not _exists(exc):
                raise
        found = self.app_by_name(org, project, body["name"])
        if found is None:
            raise ProviderError(
                "zitadel", "POST", path, 409, "app reported as existing but not found"
            )
        return {"appId": found["id"], "clientId": (found.get("oidcConfig") or {}).get("clientId")}

    def update_oidc_config(self, org: str, project: str, app: str, body: JSON) -> None:
        self._update("PUT", f"{MGMT}/projects/{project}/apps/{app}/oidc_config", org, body)

    def new_client_secret(self, org: str, project: str, app: str) -> str:
        path = f"{MGMT}/projects/{project}/apps/{app}/oidc_config/_generate_client_secret"
        return str(self._call("POST", path, org, {})["clientSecret"])

    def delete_app(self, org: str, project: str, app: str) -> None:
        self.http.request(
            "DELETE",
            f"{MGMT}/projects/{project}/apps/{app}",
            headers={ORG_HEADER: org},
            missing_ok=True,
        )

    # -- project grants -------------------------------------------------------------
    def grants(self, org: str, project: str) -> list[JSON]:
        return self.search(f"{MGMT}/projects/{project}/grants/_search", org)

    def grant(self, org: str, project: str, grant: str) -> JSON | None:
        found = self._maybe(f"{MGMT}/projects/{project}/grants/{grant}", org)
        return (found or {}).get("projectGrant")

    def add_grant(self, org: str, project: str, granted_org: str, roles: list[str]) -> str:
        def find() -> JSON | None:
            return next(
                (g for g in self.grants(org, project) if g.get("grantedOrgId") == granted_org), None
            )

        created = self._create(
            f"{MGMT}/projects/{project}/grants",
            org,
            {"grantedOrgId": granted_org, "roleKeys": roles},
            find,
        )
        return str(created.get("grantId"))

    def update_grant(self, org: str, project: str, grant: str, roles: list[str]) -> None:
        self._update("PUT", f"{MGMT}/projects/{project}/grants/{grant}", org, {"roleKeys": roles})

    def delete_grant(self, org: str, project: str, grant: str) -> None:
        self.http.request(
            "DELETE",
            f"{MGMT}/projects/{project}/grants/{grant}",
            headers={ORG_HEADER: org},
            missing_ok=True,
        )
