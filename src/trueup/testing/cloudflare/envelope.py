"""Cloudflare's v4 response envelope, error codes and pagination.

Every Cloudflare response, success or failure, is ``{success, errors,
messages, result}``; lists add ``result_info``. Clients (and the official
SDK) page by asking for ``page + 1`` until ``result`` is empty, so a page
past the end must be an empty success, never an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from trueup.testing._util import FakeHTTPError

# Codes seen on the real API (provider-apis.md and public reports).
AUTH_ERROR = 10000  # "Authentication error"
RATE_LIMITED = 971  # "Please wait and consider throttling your request speed"
ROUTE_INVALID_ID = 7003  # "Could not route to ..., perhaps your object identifier is invalid?"
NO_ROUTE = 7000  # "No route for that URI"
METHOD_NOT_ALLOWED = 7001  # "Method ... not available for that URI."
MALFORMED_JSON = 6007  # "Malformed JSON in request body"
RECORD_NOT_FOUND = 81044  # "Record does not exist."
RECORD_CLASH = 81057  # a record with the same name clashes (CNAME rules)
RECORD_IDENTICAL = 81058  # "An identical record already exists."
INVALID_TTL = 9021  # "Invalid TTL"
# Codes below are not documented in provider-apis.md; chosen to be distinct.
INTERNAL = 10002  # injected 5xx
DNS_NAME_INVALID = 9000
RECORD_NOT_PROXIABLE = 9004
A_CONTENT_INVALID = 9005
AAAA_CONTENT_INVALID = 9006
CONTENT_REQUIRED = 9007
TYPE_INVALID = 9020
PRIORITY_REQUIRED = 9100
PAGINATION_INVALID = 1004
EMAIL_INVALID_INPUT = 2007
EMAIL_RULE_NOT_FOUND = 2020
ADDRESS_NOT_FOUND = 2021
ADDRESS_EXISTS = 2032


def ok(result: Any, result_info: Mapping[str, int] | None = None) -> dict[str, Any]:
    """A success envelope."""
    body: dict[str, Any] = {"success": True, "errors": [], "messages": [], "result": result}
    if result_info is not None:
        body["result_info"] = dict(result_info)
    return body


def failure(errors: Sequence[tuple[int, str]]) -> dict[str, Any]:
    """A failure envelope: ``success:false``, ``result:null``, at least one error."""
    return {
        "success": False,
        "errors": [{"code": code, "message": message} for code, message in errors],
        "messages": [],
        "result": None,
    }


def error(status: int, code: int, message: str) -> FakeHTTPError:
    return FakeHTTPError(status, failure([(code, message)]))


def invalid_identifier(path: str) -> FakeHTTPError:
    """What Cloudflare answers for an id that is not a 32-hex identifier."""
    return FakeHTTPError(
        400,
        failure(
            [
                (
                    ROUTE_INVALID_ID,
                    f"Could not route to {path}, perhaps your object identifier is invalid?",
                ),
                (NO_ROUTE, "No route for that URI"),
            ]
        ),
    )


def unknown_object(path: str) -> FakeHTTPError:
    """A well-formed id that names nothing (shape of 7003, status 404)."""
    message = f"Could not route to {path}, perhaps your object identifier is invalid?"
    return error(404, ROUTE_INVALID_ID, message)


def is_identifier(value: str) -> bool:
    return len(value) == 32 and all(c in "0123456789abcdef" for c in value)


def _positive_int(raw: str | None, name: str, default: int) -> int:
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise error(400, PAGINATION_INVALID, f"Invalid {name}: must be an integer") from None
    if value < 1:
        raise error(400, PAGINATION_INVALID, f"Invalid {name}: must be at least 1")
    return value


def paginate(
    items: Sequence[Any],
    page_raw: str | None,
    per_page_raw: str | None,
    *,
    default_per_page: int,
    max_per_page: int,
) -> tuple[list[Any], dict[str, int]]:
    """Slice one page and build ``result_info``; a page past the end is empty."""
    page = _positive_int(page_raw, "page", 1)
    per_page = min(_positive_int(per_page_raw, "per_page", default_per_page), max_per_page)
    total = len(items)
    start = (page - 1) * per_page
    chunk = list(items[start : start + per_page])
    info = {
        "page": page,
        "per_page": per_page,
        "count": len(chunk),
        "total_count": total,
        "total_pages": math.ceil(total / per_page),
    }
    return chunk, info
