"""ZITADEL's gRPC-gateway JSON conventions, shared by every endpoint.

ZITADEL serves protobuf messages as JSON: lowerCamelCase names, uint64 as
strings, enums by name, and fields equal to their zero value (false, 0,
"", empty list, the enum's 0 member) left out entirely. Requests may use
either camelCase or the proto snake_case names and may send enums and
uint64s as names/strings or numbers; unknown fields are ignored. Errors
are ``{code, message, details}`` with gRPC codes mapped to HTTP statuses.
"""

from __future__ import annotations

import re
from typing import Any

from trueup.testing._util import FakeHTTPError

ERROR_DETAIL_TYPE = "type.googleapis.com/zitadel.v1.ErrorDetail"

ENUMS: dict[str, tuple[str, ...]] = {
    "OIDCResponseType": (
        "OIDC_RESPONSE_TYPE_CODE",
        "OIDC_RESPONSE_TYPE_ID_TOKEN",
        "OIDC_RESPONSE_TYPE_ID_TOKEN_TOKEN",
    ),
    "OIDCGrantType": (
        "OIDC_GRANT_TYPE_AUTHORIZATION_CODE",
        "OIDC_GRANT_TYPE_IMPLICIT",
        "OIDC_GRANT_TYPE_REFRESH_TOKEN",
        "OIDC_GRANT_TYPE_DEVICE_CODE",
        "OIDC_GRANT_TYPE_TOKEN_EXCHANGE",
    ),
    "OIDCAppType": ("OIDC_APP_TYPE_WEB", "OIDC_APP_TYPE_USER_AGENT", "OIDC_APP_TYPE_NATIVE"),
    "OIDCAuthMethodType": (
        "OIDC_AUTH_METHOD_TYPE_BASIC",
        "OIDC_AUTH_METHOD_TYPE_POST",
        "OIDC_AUTH_METHOD_TYPE_NONE",
        "OIDC_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT",
    ),
    "OIDCVersion": ("OIDC_VERSION_1_0",),
    "OIDCTokenType": ("OIDC_TOKEN_TYPE_BEARER", "OIDC_TOKEN_TYPE_JWT"),
    "PrivateLabelingSetting": (
        "PRIVATE_LABELING_SETTING_UNSPECIFIED",
        "PRIVATE_LABELING_SETTING_ENFORCE_PROJECT_RESOURCE_OWNER_POLICY",
        "PRIVATE_LABELING_SETTING_ALLOW_LOGIN_USER_RESOURCE_OWNER_POLICY",
    ),
    "TextQueryMethod": (
        "TEXT_QUERY_METHOD_EQUALS",
        "TEXT_QUERY_METHOD_EQUALS_IGNORE_CASE",
        "TEXT_QUERY_METHOD_STARTS_WITH",
        "TEXT_QUERY_METHOD_STARTS_WITH_IGNORE_CASE",
        "TEXT_QUERY_METHOD_CONTAINS",
        "TEXT_QUERY_METHOD_CONTAINS_IGNORE_CASE",
        "TEXT_QUERY_METHOD_ENDS_WITH",
        "TEXT_QUERY_METHOD_ENDS_WITH_IGNORE_CASE",
    ),
}
#: Enum members with number 0: protojson leaves such singular fields out.
ZERO_ENUMS = frozenset(values[0] for values in ENUMS.values()) | {
    "PROJECT_STATE_UNSPECIFIED",
    "APP_STATE_UNSPECIFIED",
    "ORG_STATE_UNSPECIFIED",
    "PROJECT_GRANT_STATE_UNSPECIFIED",
}
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


# -- errors ------------------------------------------------------------------------------

_HTTP = {3: 400, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 12: 405, 13: 500, 14: 503, 16: 401}


#: What a real server answers in place of the message key: ZITADEL translates
#: every error (the caller's language, English by default), so no client can
#: match the key; the gRPC code and the error id are what stay the same.
TRANSLATIONS = {
    "Errors.NoChangesFound": "No changes",
    "Errors.Internal": "Internal error",
    "Errors.Org.AlreadyExists": "Organisation name already taken",
    "Errors.Org.NotFound": "Organisation not found",
    "Errors.Project.AlreadyExists": "Project already exists on Organisation",
    "Errors.Project.NotFound": "Project not found",
    "Errors.Project.App.AlreadyExists": "Application already exists",
    "Errors.Project.App.NotFound": "App not found",
    "Errors.Project.App.OIDCAuthMethodNoSecret": "Auth method needs no secret",
    "Errors.Project.Grant.AlreadyExists": "Grant already exists",
    "Errors.Project.Grant.NotFound": "Grant not found",
    "Errors.Project.Role.AlreadyExists": "Role already exists",
    "Errors.Project.Role.NotFound": "Role not found",
    "Errors.Query.LimitExceeded": "Limit is too high",
    "Errors.Quota.RequestsExceeded": "The quota of requests is exceeded",
    "Errors.Token.Invalid": "Token is invalid",
}


def error(code: int, key: str, ident: str) -> FakeHTTPError:
    """A ZITADEL error as a real server answers it: the message translated, then the id.

    ``message`` is ``"<translation> (<id>)"`` (``"No changes (COMMAND-1m88i)"``),
    and ``details`` one ErrorDetail with the id and the translation.
    """
    said = TRANSLATIONS.get(key, key)
    body = {
        "code": code,
        "message": f"{said} ({ident})",
        "details": [{"@type": ERROR_DETAIL_TYPE, "id": ident, "message": said}],
    }
    return FakeHTTPError(_HTTP[code], body)


def invalid_argument(message: str) -> FakeHTTPError:
    """Request validation (protoc-gen-validate) failures carry a plain message."""
    return FakeHTTPError(400, {"code": 3, "message": message, "details": []})


def already_exists(key: str, ident: str) -> FakeHTTPError:
    return error(6, key, ident)


def not_found(key: str, ident: str) -> FakeHTTPError:
    return error(5, key, ident)


def precondition(key: str, ident: str) -> FakeHTTPError:
    return error(9, key, ident)


def no_changes(ident: str) -> FakeHTTPError:
    """``Errors.NoChangesFound``: an update that changes nothing (clients treat it as success)."""
    return precondition("Errors.NoChangesFound", ident)


# -- requests ----------------------------------------------------------------------------


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def field(body: dict[str, Any], name: str, default: Any = None) -> Any:
    """Read a request field by its JSON name or its proto (snake_case) name."""
    if name in body:
        return body[name]
    return body.get(snake(name), default)


def string(
    body: dict[str, Any], name: str, message: str, *, required: bool, max_len: int = 200
) -> str:
    """A string field with protoc-gen-validate's ``min_len``/``max_len`` wording."""
    value = field(body, name, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise invalid_argument(f"proto: invalid value for string field {name}")
    if (required and not value) or len(value) > max_len:
        low = 1 if required else 0
        pretty = name[0].upper() + name[1:]
        raise invalid_argument(
            f"invalid {message}.{pretty}: value length must be between {low} and {max_len} runes, "
            "inclusive"
        )
    return value


def boolean(body: dict[str, Any], name: str) -> bool:
    value = field(body, name, False)
    if not isinstance(value, bool):
        raise invalid_argument(f"proto: invalid value for bool field {name}")
    return value


def strings(body: dict[str, Any], name: str) -> list[str]:
    value = field(body, name, []) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_argument(f"proto: invalid value for repeated string field {name}")
    return list(value)


def enum(kind: str, value: Any) -> str:
    """Accept an enum by name or number; return the canonical name."""
    members = ENUMS[kind]
    if value is None:
        return members[0]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(members):
        return members[value]
    if isinstance(value, str) and value in members:
        return value
    raise invalid_argument(f"proto: invalid value for enum type: {value!r}")


def enum_field(body: dict[str, Any], name: str, kind: str) -> str:
    return enum(kind, field(body, name))


def enum_list(body: dict[str, Any], name: str, kind: str) -> list[str]:
    value = field(body, name, []) or []
    if not isinstance(value, list):
        raise invalid_argument(f"proto: invalid value for repeated enum field {name}")
    return [enum(kind, v) for v in value]


def uint(value: Any, name: str) -> int:
    """uint64 arrive as strings (or numbers); reject anything else."""
    if value is None or value == "":
        return 0
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise invalid_argument(f"proto: invalid value for uint64 field {name}: {value!r}") from None
    if number < 0 or isinstance(value, bool):
        raise invalid_argument(f"proto: invalid value for uint64 field {name}: {value!r}")
    return number


def list_query(body: dict[str, Any]) -> tuple[int, int, bool]:
    """``{query: {offset, limit, asc}}`` with ZITADEL's default and maximum limit."""
    query = field(body, "query", {}) or {}
    if not isinstance(query, dict):
        raise invalid_argument("proto: invalid value for query")
    offset = uint(query.get("offset"), "offset")
    limit = uint(query.get("limit"), "limit") or DEFAULT_LIMIT
    if limit > MAX_LIMIT:
        raise error(3, "Errors.Query.LimitExceeded", "QUERY-4M0fs")
    asc = query.get("asc", False)
    return offset, limit, bool(asc)


def text_match(have: str, query: dict[str, Any], value_name: str) -> bool:
    """Evaluate a ``{<value_name>, method}`` text query against ``have``."""
    wanted = field(query, value_name, "") or ""
    method = enum("TextQueryMethod", field(query, "method"))
    if not isinstance(wanted, str):
        raise invalid_argument(f"proto: invalid value for string field {value_name}")
    if method.endswith("_IGNORE_CASE"):
        have, wanted = have.lower(), wanted.lower()
        method = method.removesuffix("_IGNORE_CASE")
    if method == "TEXT_QUERY_METHOD_EQUALS":
        return have == wanted
    if method == "TEXT_QUERY_METHOD_STARTS_WITH":
        return have.startswith(wanted)
    if method == "TEXT_QUERY_METHOD_CONTAINS":
        return wanted in have
    return have.endswith(wanted)


# -- responses ---------------------------------------------------------------------------


def u64(value: int) -> str | None:
    """uint64 as a string; 0 becomes None so `clean` drops it."""
    return str(value) if value else None


def clean(value: Any) -> Any:
    """Drop zero-valued fields the way protojson does (messages stay, even if empty)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if item is None or item is False or item == "" or item == []:
                continue
            if isinstance(item, int) and not isinstance(item, bool) and item == 0:
                continue
            if isinstance(item, str) and item in ZERO_ENUMS:
                continue
            out[key] = clean(item)
        return out
    if isinstance(value, list):
        return [clean(item) for item in value]
    return value
