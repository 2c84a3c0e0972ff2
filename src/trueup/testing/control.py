"""The ``/_fake`` control endpoints every fake serves next to its API.

They let a test in another process (or the ``trueup fakes serve`` user)
switch faults, read the request log, seed data and reset, without Python
access to the state objects. They need no token and never see faults.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from trueup.testing._util import json_response, read_body_json
from trueup.testing.faults import Faults
from trueup.testing.requestlog import RequestLog
from trueup.testing.store import JsonStore


def control_routes(
    store: JsonStore,
    faults: Faults,
    log: RequestLog,
    on_reset: Callable[[], None] | None = None,
) -> list[BaseRoute]:
    """Routes for ``/_fake/{faults,requests,reset,state,seed}``."""

    async def get_faults(request: Request) -> Response:
        return json_response(faults.config())

    async def set_faults(request: Request) -> Response:
        ok, body = await read_body_json(request)
        if not ok or not isinstance(body, dict):
            return json_response({"error": "expected a JSON object"}, 400)
        if body.pop("reset", False):
            faults.reset()
        try:
            faults.update(**body)
        except (TypeError, ValueError) as exc:
            return json_response({"error": str(exc)}, 400)
        return json_response(faults.config())

    async def get_requests(request: Request) -> Response:
        return json_response(log.to_json())

    async def clear_requests(request: Request) -> Response:
        log.clear()
        return json_response(log.to_json())

    async def reset(request: Request) -> Response:
        ok, body = await read_body_json(request)
        if not ok or (body is not None and not isinstance(body, dict)):
            return json_response({"error": "expected a JSON object"}, 400)
        parts = body or {}
        if parts.get("state", True):
            store.reset()
            if on_reset is not None:
                on_reset()
        if parts.get("faults", True):
            faults.reset()
        if parts.get("requests", True):
            log.clear()
        return json_response({"reset": True})

    async def get_state(request: Request) -> Response:
        return json_response(store.dump())

    async def seed(request: Request) -> Response:
        ok, body = await read_body_json(request)
        if not ok or not isinstance(body, dict):
            return json_response({"error": "expected a JSON object"}, 400)
        try:
            return json_response(store.seed(body))
        except ValueError as exc:
            return json_response({"error": str(exc)}, 400)

    return [
        Route("/_fake/faults", get_faults, methods=["GET"]),
        Route("/_fake/faults", set_faults, methods=["POST", "PATCH", "PUT"]),
        Route("/_fake/requests", get_requests, methods=["GET"]),
        Route("/_fake/requests", clear_requests, methods=["DELETE"]),
        Route("/_fake/reset", reset, methods=["POST"]),
        Route("/_fake/state", get_state, methods=["GET"]),
        Route("/_fake/seed", seed, methods=["POST"]),
    ]
