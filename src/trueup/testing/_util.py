"""Small helpers shared by the fakes: ids, timestamps and JSON plumbing."""

from __future__ import annotations

import json
import secrets
import string
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

JSON = dict[str, Any]

_CUID_ALPHABET = string.ascii_lowercase + string.digits


class FakeHTTPError(Exception):
    """Answer the current request with a provider-shaped error body.

    State objects raise it so validation lives next to the data it guards;
    each app installs a handler that turns it into a JSON response.
    """

    def __init__(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{status}: {body!r}")
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """Compact JSON like the real APIs send (no pretty printing, UTF-8)."""
    payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return Response(payload, status_code=status, media_type="application/json", headers=headers)


async def read_body_json(request: Request) -> tuple[bool, Any]:
    """Parse the request body; returns ``(ok, value)`` with ``value=None`` for an empty body."""
    raw = await request.body()
    if not raw.strip():
        return True, None
    try:
        return True, json.loads(raw)
    except ValueError:
        return False, None


def hex_id() -> str:
    """Cloudflare-style identifier: 32 lowercase hex characters."""
    return uuid.uuid4().hex


def cuid() -> str:
    """Coolify-style uuid (a cuid2): 24 lowercase alphanumerics starting with a letter."""
    first = secrets.choice(string.ascii_lowercase)
    return first + "".join(secrets.choice(_CUID_ALPHABET) for _ in range(23))


def numeric_id() -> str:
    """ZITADEL-style id: an 18-digit decimal string."""
    return str(10**17 + secrets.randbelow(9 * 10**17))


def utcnow() -> datetime:
    return datetime.now(UTC)


def cf_time(moment: datetime | None = None) -> str:
    """Cloudflare timestamps: RFC 3339 with microseconds and a ``Z``."""
    return (moment or utcnow()).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def laravel_time(moment: datetime | None = None) -> str:
    """Coolify (Laravel) timestamps: microseconds and ``Z``."""
    return (moment or utcnow()).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def proto_time(moment: datetime | None = None) -> str:
    """protojson Timestamp: fractional digits trimmed to 0, 3 or 6 like Go does."""
    value = moment or utcnow()
    base = value.strftime("%Y-%m-%dT%H:%M:%S")
    micros = value.microsecond
    if micros == 0:
        return base + "Z"
    if micros % 1000 == 0:
        return f"{base}.{micros // 1000:03d}Z"
    return f"{base}.{micros:06d}Z"
