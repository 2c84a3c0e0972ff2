"""How every fake provider app is put together: routes, middleware, error handlers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from trueup.testing._util import FakeHTTPError, json_response
from trueup.testing.control import control_routes
from trueup.testing.faults import Faults
from trueup.testing.middleware import BearerAuthMiddleware, FaultMiddleware, ProviderProfile
from trueup.testing.requestlog import RequestLog
from trueup.testing.store import JsonStore

ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]


async def fake_error(request: Request, exc: Exception) -> Response:
    """Answer a ``FakeHTTPError`` raised by the state with its provider-shaped body."""
    assert isinstance(exc, FakeHTTPError)
    return json_response(exc.body, exc.status, exc.headers)


def fake_app(
    state: JsonStore,
    routes: Sequence[BaseRoute],
    *,
    profile: ProviderProfile,
    http_error: ErrorHandler,
    token: str,
    faults: Faults | None,
    log: RequestLog | None,
    public_paths: frozenset[str] = frozenset(),
) -> Starlette:
    """A fake behind fault injection and bearer auth, with the control routes mounted.

    The returned app exposes its handles as ``app.state.fake``, ``app.state.faults``
    and ``app.state.log``.
    """
    faults = faults if faults is not None else Faults()
    log = log if log is not None else RequestLog(profile.name)
    app = Starlette(
        routes=[*control_routes(state, faults, log), *routes],
        middleware=[
            Middleware(FaultMiddleware, profile=profile, faults=faults, log=log),
            Middleware(
                BearerAuthMiddleware, profile=profile, token=token, public_paths=public_paths
            ),
        ],
        exception_handlers={FakeHTTPError: fake_error, HTTPException: http_error},
    )
    app.state.fake = state
    app.state.faults = faults
    app.state.log = log
    return app
