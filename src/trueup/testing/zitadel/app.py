"""Starlette app for the fake ZITADEL (management v1 and v2 organization endpoints)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from trueup.testing._util import json_response, read_body_json
from trueup.testing.fakeapp import fake_app
from trueup.testing.faults import Faults
from trueup.testing.middleware import ProviderProfile
from trueup.testing.requestlog import RequestLog
from trueup.testing.store import JSON
from trueup.testing.zitadel import proto
from trueup.testing.zitadel.base import MGMT_PREFIX, V2_PREFIX
from trueup.testing.zitadel.state import ZitadelState

DEFAULT_TOKEN = "trueup-fake-zitadel-pat"
ORG_HEADER = "x-zitadel-orgid"


def _fault_body(status: int) -> Any:
    if status == 429:
        return proto.error(8, "Errors.Quota.RequestsExceeded", "QUOTA-vjAy8").body
    if status == 500:
        return proto.error(13, "Errors.Internal", "INTERNAL-fake").body
    return {"code": 14, "message": "upstream connect error or disconnect/reset", "details": []}


def _unauthorized(missing: bool) -> tuple[int, Any]:
    if missing:
        return 401, proto.error(16, "auth header missing", "AUTH-7mn2kq").body
    return 401, proto.error(16, "Errors.Token.Invalid", "AUTH-7fs1e").body


PROFILE = ProviderProfile(
    name="zitadel",
    default_limit=None,
    fault_body=_fault_body,
    unauthorized=_unauthorized,
)

#: (org id, request body, path params) -> response body (before zero-field stripping)
Action = Callable[[str, JSON, dict[str, str]], JSON]


async def _body(request: Request) -> JSON:
    ok, body = await read_body_json(request)
    if not ok:
        raise proto.invalid_argument("proto: syntax error: invalid JSON in request body")
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise proto.invalid_argument("proto: syntax error: expected a JSON object")
    return body


def _endpoint(
    state: ZitadelState, action: Action, *, status: int = 200, org_scoped: bool = True
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a state call: resolve the org, parse the body, strip zero fields."""

    async def endpoint(request: Request) -> Response:
        org_id = ""
        if org_scoped:
            org_id = state.resolve_org(request.headers.get(ORG_HEADER))
        body = await _body(request) if request.method in ("POST", "PUT") else {}
        result = action(org_id, body, dict(request.path_params))
        return json_response(proto.clean(result), status)

    return endpoint


def _routes(s: ZitadelState) -> list[BaseRoute]:
    m = MGMT_PREFIX
    project = f"{m}/projects/{{project}}"

    def r(path: str, method: str, action: Action, **kw: Any) -> Route:
        return Route(path, _endpoint(s, action, **kw), methods=[method])

    return [
        r(f"{m}/orgs", "POST", lambda o, b, p: s.create_org(b), org_scoped=False),
        r(f"{m}/orgs/me", "GET", lambda o, b, p: s.get_my_org(o)),
        r(
            f"{V2_PREFIX}/organizations",
            "POST",
            lambda o, b, p: s.create_org_v2(b),
            status=201,
            org_scoped=False,
        ),
        r(
            f"{V2_PREFIX}/organizations/_search",
            "POST",
            lambda o, b, p: s.search_orgs_v2(b),
            org_scoped=False,
        ),
        r(f"{m}/projects", "POST", lambda o, b, p: s.create_project(o, b)),
        r(f"{m}/projects/_search", "POST", lambda o, b, p: s.search_projects(o, b)),
        r(project, "GET", lambda o, b, p: s.get_project(o, p["project"])),
        r(project, "PUT", lambda o, b, p: s.update_project(o, p["project"], b)),
        r(project, "DELETE", lambda o, b, p: s.delete_project(o, p["project"])),
        r(f"{project}/roles", "POST", lambda o, b, p: s.add_role(o, p["project"], b)),
        r(f"{project}/roles/_bulk", "POST", lambda o, b, p: s.bulk_add_roles(o, p["project"], b)),
        r(f"{project}/roles/_search", "POST", lambda o, b, p: s.search_roles(o, p["project"], b)),
        r(
            f"{project}/roles/{{key}}",
            "PUT",
            lambda o, b, p: s.update_role(o, p["project"], p["key"], b),
        ),
        r(
            f"{project}/roles/{{key}}",
            "DELETE",
            lambda o, b, p: s.delete_role(o, p["project"], p["key"]),
        ),
        r(f"{project}/apps/oidc", "POST", lambda o, b, p: s.add_oidc_app(o, p["project"], b)),
        r(f"{project}/apps/_search", "POST", lambda o, b, p: s.search_apps(o, p["project"], b)),
        r(f"{project}/apps/{{app}}", "GET", lambda o, b, p: s.get_app(o, p["project"], p["app"])),
        r(
            f"{project}/apps/{{app}}",
            "PUT",
            lambda o, b, p: s.update_app(o, p["project"], p["app"], b),
        ),
        r(
            f"{project}/apps/{{app}}",
            "DELETE",
            lambda o, b, p: s.delete_app(o, p["project"], p["app"]),
        ),
        r(
            f"{project}/apps/{{app}}/oidc_config",
            "PUT",
            lambda o, b, p: s.update_oidc_config(o, p["project"], p["app"], b),
        ),
        r(
            f"{project}/apps/{{app}}/oidc_config/_generate_client_secret",
            "POST",
            lambda o, b, p: s.regenerate_secret(o, p["project"], p["app"]),
        ),
        r(f"{project}/grants", "POST", lambda o, b, p: s.add_grant(o, p["project"], b)),
        r(f"{project}/grants/_search", "POST", lambda o, b, p: s.search_grants(o, p["project"], b)),
        r(
            f"{project}/grants/{{grant}}",
            "GET",
            lambda o, b, p: s.get_grant(o, p["project"], p["grant"]),
        ),
        r(
            f"{project}/grants/{{grant}}",
            "PUT",
            lambda o, b, p: s.update_grant(o, p["project"], p["grant"], b),
        ),
        r(
            f"{project}/grants/{{grant}}",
            "DELETE",
            lambda o, b, p: s.delete_grant(o, p["project"], p["grant"]),
        ),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    """grpc-gateway's answers for unknown paths and methods."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        return json_response({"code": 12, "message": "Method Not Allowed", "details": []}, 405)
    if exc.status_code == 404:
        return json_response({"code": 5, "message": "Not Found", "details": []}, 404)
    return json_response({"code": 2, "message": str(exc.detail), "details": []}, exc.status_code)


def create_app(
    state: ZitadelState | None = None,
    *,
    token: str = DEFAULT_TOKEN,
    faults: Faults | None = None,
    log: RequestLog | None = None,
) -> Starlette:
    """Build the fake; ``app.state.fake`` / ``.faults`` / ``.log`` hold the handles."""
    state = state if state is not None else ZitadelState()
    return fake_app(
        state,
        _routes(state),
        profile=PROFILE,
        http_error=_http_error,
        token=token,
        faults=faults,
        log=log,
    )
