"""Starlette app for the fake Cloudflare v4 API (under ``/client/v4``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from trueup.testing._util import json_response, read_body_json
from trueup.testing.cloudflare import envelope as env
from trueup.testing.cloudflare.base import API_PREFIX
from trueup.testing.cloudflare.state import CloudflareState
from trueup.testing.fakeapp import fake_app
from trueup.testing.faults import Faults
from trueup.testing.middleware import ProviderProfile
from trueup.testing.requestlog import RequestLog

DEFAULT_TOKEN = "trueup-fake-cloudflare-token"


def _fault_body(status: int) -> Any:
    if status == 429:
        return env.failure(
            [(env.RATE_LIMITED, "Please wait and consider throttling your request speed")]
        )
    return env.failure([(env.INTERNAL, "Internal server error")])


def _unauthorized(missing: bool) -> tuple[int, Any]:
    return 401, env.failure([(env.AUTH_ERROR, "Authentication error")])


PROFILE = ProviderProfile(
    name="cloudflare",
    default_limit=(1200, 300.0),
    fault_body=_fault_body,
    unauthorized=_unauthorized,
)

Handler = Callable[[Request], Awaitable[Response]]


def _params(request: Request) -> dict[str, str]:
    return dict(request.query_params)


async def _body(request: Request) -> Any:
    ok, body = await read_body_json(request)
    if not ok:
        raise env.error(400, env.MALFORMED_JSON, "Malformed JSON in request body")
    return body


def _routes(state: CloudflareState) -> list[BaseRoute]:
    """All ``/client/v4`` routes; each handler is a thin shim over the state."""

    def path_of(request: Request) -> str:
        return request.url.path

    async def verify_token(request: Request) -> Response:
        return json_response(env.ok(state.token_status()))

    async def list_accounts(request: Request) -> Response:
        items, info = env.paginate(
            state.list_accounts(),
            request.query_params.get("page"),
            request.query_params.get("per_page"),
            default_per_page=20,
            max_per_page=50,
        )
        return json_response(env.ok(items, info))

    async def get_account(request: Request) -> Response:
        account = state.get_account(request.path_params["account"], path_of(request))
        return json_response(env.ok(account))

    async def list_zones(request: Request) -> Response:
        items, info = state.list_zones(_params(request))
        return json_response(env.ok(items, info))

    async def get_zone(request: Request) -> Response:
        return json_response(env.ok(state.get_zone(request.path_params["zone"], path_of(request))))

    async def records(request: Request) -> Response:
        zone = request.path_params["zone"]
        if request.method == "POST":
            record = state.create_record(zone, await _body(request), path_of(request))
            return json_response(env.ok(record))
        items, info = state.list_records(zone, _params(request), path_of(request))
        return json_response(env.ok(items, info))

    async def record(request: Request) -> Response:
        zone, record_id = request.path_params["zone"], request.path_params["record"]
        path = path_of(request)
        if request.method == "GET":
            return json_response(env.ok(state.get_record(zone, record_id, path)))
        if request.method == "DELETE":
            return json_response(env.ok(state.delete_record(zone, record_id, path)))
        body = await _body(request)
        updated = state.replace_record(
            zone, record_id, body, path, partial=request.method == "PATCH"
        )
        return json_response(env.ok(updated))

    async def routing(request: Request) -> Response:
        return json_response(
            env.ok(state.routing_settings(request.path_params["zone"], path_of(request)))
        )

    async def routing_dns(request: Request) -> Response:
        zone, path = request.path_params["zone"], path_of(request)
        if request.method == "POST":
            body = await _body(request) if await request.body() else {}
            return json_response(env.ok(state.enable_routing(zone, path, body)))
        if request.method == "DELETE":
            settings, removed = state.disable_routing(zone, path)
            return json_response(env.ok(removed if state.routing_delete_lists else settings))
        return json_response(env.ok(state.routing_dns(zone, path)))

    async def routing_enable(request: Request) -> Response:
        zone, path = request.path_params["zone"], path_of(request)
        return json_response(env.ok(state.enable_routing(zone, path, {"name": None})))

    async def routing_disable(request: Request) -> Response:
        settings, _ = state.disable_routing(request.path_params["zone"], path_of(request))
        return json_response(env.ok(settings))

    async def rules(request: Request) -> Response:
        zone, path = request.path_params["zone"], path_of(request)
        if request.method == "POST":
            return json_response(env.ok(state.create_rule(zone, await _body(request), path)))
        items, info = state.list_rules(zone, _params(request), path)
        return json_response(env.ok(items, info))

    async def catch_all(request: Request) -> Response:
        zone, path = request.path_params["zone"], path_of(request)
        if request.method == "PUT":
            return json_response(env.ok(state.update_catch_all(zone, await _body(request), path)))
        return json_response(env.ok(state.get_catch_all(zone, path)))

    async def rule(request: Request) -> Response:
        zone, rule_id, path = (
            request.path_params["zone"],
            request.path_params["rule"],
            path_of(request),
        )
        if request.method == "PUT":
            return json_response(
                env.ok(state.update_rule(zone, rule_id, await _body(request), path))
            )
        if request.method == "DELETE":
            return json_response(env.ok(state.delete_rule(zone, rule_id, path)))
        return json_response(env.ok(state.get_rule(zone, rule_id, path)))

    async def addresses(request: Request) -> Response:
        account, path = request.path_params["account"], path_of(request)
        if request.method == "POST":
            return json_response(env.ok(state.create_address(account, await _body(request), path)))
        items, info = state.list_addresses(account, _params(request), path)
        return json_response(env.ok(items, info))

    async def address(request: Request) -> Response:
        account, address_id, path = (
            request.path_params["account"],
            request.path_params["address"],
            path_of(request),
        )
        if request.method == "DELETE":
            return json_response(env.ok(state.delete_address(account, address_id, path)))
        return json_response(env.ok(state.get_address(account, address_id, path)))

    p = API_PREFIX
    zone = f"{p}/zones/{{zone}}"
    email = f"{zone}/email/routing"
    addr = f"{p}/accounts/{{account}}/email/routing/addresses"
    return [
        Route(f"{p}/user/tokens/verify", verify_token, methods=["GET"]),
        Route(f"{p}/accounts", list_accounts, methods=["GET"]),
        Route(f"{p}/accounts/{{account}}", get_account, methods=["GET"]),
        Route(f"{p}/zones", list_zones, methods=["GET"]),
        Route(zone, get_zone, methods=["GET"]),
        Route(f"{zone}/dns_records", records, methods=["GET", "POST"]),
        Route(f"{zone}/dns_records/{{record}}", record, methods=["GET", "PUT", "PATCH", "DELETE"]),
        Route(email, routing, methods=["GET"]),
        Route(f"{email}/dns", routing_dns, methods=["GET", "POST", "DELETE"]),
        Route(f"{email}/enable", routing_enable, methods=["POST"]),
        Route(f"{email}/disable", routing_disable, methods=["POST"]),
        Route(f"{email}/rules", rules, methods=["GET", "POST"]),
        Route(f"{email}/rules/catch_all", catch_all, methods=["GET", "PUT"]),
        Route(f"{email}/rules/{{rule}}", rule, methods=["GET", "PUT", "DELETE"]),
        Route(addr, addresses, methods=["GET", "POST"]),
        Route(f"{addr}/{{address}}", address, methods=["GET", "DELETE"]),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        message = f"Method {request.method} not available for that URI."
        return json_response(env.failure([(env.METHOD_NOT_ALLOWED, message)]), 405)
    if exc.status_code == 404:
        return json_response(env.failure([(env.NO_ROUTE, "No route for that URI")]), 400)
    return json_response(env.failure([(env.INTERNAL, str(exc.detail))]), exc.status_code)


def create_app(
    state: CloudflareState | None = None,
    *,
    token: str = DEFAULT_TOKEN,
    faults: Faults | None = None,
    log: RequestLog | None = None,
) -> Starlette:
    """Build the fake; pass your own state/faults/log to keep handles on them.

    The returned app exposes them as ``app.state.fake``, ``app.state.faults``
    and ``app.state.log``.
    """
    state = state if state is not None else CloudflareState()
    return fake_app(
        state,
        _routes(state),
        profile=PROFILE,
        http_error=_http_error,
        token=token,
        faults=faults,
        log=log,
    )
