"""Raw ASGI middleware every fake shares: fault injection, request log, bearer auth.

It is raw ASGI rather than Starlette's ``BaseHTTPMiddleware`` because dropping
a connection needs the server's transport, which only the untouched
``receive`` callable leads to, and because a fault must be answered before
any routing or body parsing happens.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from trueup.testing.faults import Faults
from trueup.testing.requestlog import RequestLog

CONTROL_PREFIX = "/_fake"


@dataclass(frozen=True)
class ProviderProfile:
    """How one provider words the errors the fault and auth layers produce."""

    name: str
    #: The real per-token limit: (requests, window seconds), or None.
    default_limit: tuple[int, float] | None
    #: Body for an injected error with this HTTP status (429 or 5xx).
    fault_body: Callable[[int], Any]
    #: (status, body) for a missing or wrong bearer token.
    unauthorized: Callable[[bool], tuple[int, Any]]


def bearer_token(scope: Scope) -> str | None:
    """The token from ``Authorization: Bearer <token>``, or None."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            text = bytes(value).decode("latin-1").strip()
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


async def send_json(
    send: Send, status: int, body: Any, headers: dict[str, str] | None = None
) -> None:
    payload = json.dumps(body, separators=(",", ":")).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": payload})


async def drop_connection(receive: Receive, send: Send) -> None:
    """Close the client connection without writing a single response byte.

    uvicorn's h11/httptools request cycles expose their asyncio transport on
    the bound ``receive`` method; closing it makes the client see an EOF
    before any status line (httpx: ``RemoteProtocolError``). We then wait
    for the disconnect so uvicorn does not try to write its own 500. On a
    server without a reachable transport we fall back to a response whose
    body never arrives, which clients also report as a broken connection.
    """
    cycle = getattr(receive, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is not None and hasattr(transport, "close"):
        transport.close()
        try:
            async with asyncio.timeout(2):
                while (await receive())["type"] != "http.disconnect":
                    pass
        except TimeoutError:
            pass
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", b"1048576")],
        }
    )


class FaultMiddleware:
    """Applies `Faults` and records every API request in a `RequestLog`.

    Paths under ``/_fake`` (the control endpoints) bypass both, so a test can
    always reconfigure or inspect a fake that is busy failing.
    """

    def __init__(
        self, app: ASGIApp, *, profile: ProviderProfile, faults: Faults, log: RequestLog
    ) -> None:
        self.app = app
        self.profile = profile
        self.faults = faults
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(CONTROL_PREFIX):
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        path = scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        decision = self.faults.decide(bearer_token(scope), self.profile.default_limit)
        if decision.latency > 0:
            await asyncio.sleep(decision.latency)
        if decision.kind == "drop":
            self.log.record(method, path, query, None, "drop")
            await drop_connection(receive, send)
            return
        if decision.kind == "garble":
            self.log.record(method, path, query, 200, "garble")
            page = b"<html><body>Please sign in to continue</body></html>"
            html = [(b"content-type", b"text/html"), (b"content-length", b"%d" % len(page))]
            await send({"type": "http.response.start", "status": 200, "headers": html})
            await send({"type": "http.response.body", "body": page})
            return
        if decision.status is not None:
            headers = {}
            if decision.retry_after is not None:
                headers["Retry-After"] = str(decision.retry_after)
            self.log.record(method, path, query, decision.status, decision.kind)
            await send_json(
                send, decision.status, self.profile.fault_body(decision.status), headers
            )
            return

        status_seen: list[int] = []
        chunks: list[bytes] = []

        async def recording_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
            return message

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_seen.append(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, recording_receive, recording_send)
        finally:
            status = status_seen[0] if status_seen else 500
            self.log.record(method, path, query, status, None, _json_or_none(b"".join(chunks)))


class BearerAuthMiddleware:
    """Rejects API requests whose bearer token is not the configured one."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        profile: ProviderProfile,
        token: str,
        public_paths: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.profile = profile
        self.token = token
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"].startswith(CONTROL_PREFIX)
            or scope["path"] in self.public_paths
        ):
            await self.app(scope, receive, send)
            return
        presented = bearer_token(scope)
        if presented != self.token:
            status, body = self.profile.unauthorized(presented is None)
            await send_json(send, status, body)
            return
        await self.app(scope, receive, send)


def _json_or_none(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None
