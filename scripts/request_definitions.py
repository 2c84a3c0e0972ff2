#!/usr/bin/env python3
"""Write tests/providers/data/request_definitions.json from the providers' own definitions.

Why a generated data file: tests/providers/test_request_shapes.py checks every
request trueup's clients send against what the real APIs define, and must run
on a fresh clone, where neither the Coolify OpenAPI document (kept beside the
project, not in it) nor the cloudflare SDK (a test-only dependency) need be.
Run it again when a client starts using another endpoint, or to move to a
newer definition:

    .venv/bin/pip install 'cloudflare>=4'
    .venv/bin/python scripts/request_definitions.py [--coolify PATH/coolify-openapi.json]

Sources, each recorded in the file:

- Coolify: the OpenAPI document of its API (operation, path parameters,
  request body schema; unknown body fields are refused by Coolify, so the
  schemas are closed);
- Cloudflare: the official Python SDK's parameter types (TypedDicts, one per
  operation; a DNS record's by its ``type``);
- ZITADEL: the request messages of its published protos
  (zitadel/management.proto, zitadel/org/v2/org_service.proto), written
  out below field by field in their JSON names, as the @zitadel/proto
  package is not a Python dependency.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import UnionType
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
)

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "providers" / "data" / "request_definitions.json"
COOLIFY_SPEC = REPO.parent / "shared" / "reference" / "api-specs" / "coolify-openapi.json"

JSON = dict[str, Any]
BASES = {"cloudflare": "/client/v4", "coolify": "/api/v1", "zitadel": ""}

# -- Coolify: (method, path) the client sends, as the OpenAPI document names them --------
COOLIFY_OPERATIONS = [
    ("GET", "/servers"),
    ("GET", "/projects"),
    ("POST", "/projects"),
    ("GET", "/projects/{uuid}"),
    ("PATCH", "/projects/{uuid}"),
    ("DELETE", "/projects/{uuid}"),
    ("GET", "/projects/{uuid}/{environment_name_or_uuid}"),
    ("POST", "/projects/{uuid}/environments"),
    ("DELETE", "/projects/{uuid}/environments/{environment_name_or_uuid}"),
    ("GET", "/applications"),
    ("POST", "/applications/dockerimage"),
    ("POST", "/applications/public"),
    ("GET", "/applications/{uuid}"),
    ("PATCH", "/applications/{uuid}"),
    ("DELETE", "/applications/{uuid}"),
    ("POST", "/applications/{uuid}/start"),
    ("POST", "/applications/{uuid}/stop"),
    ("POST", "/applications/{uuid}/restart"),
    ("GET", "/applications/{uuid}/envs"),
    ("PATCH", "/applications/{uuid}/envs/bulk"),
    ("DELETE", "/applications/{uuid}/envs/{env_uuid}"),
]
#: The document lists both as required, and says "at least one of" them.
ONE_OF_REQUIRED = ("environment_name", "environment_uuid")

# -- Cloudflare: (method, path, SDK parameter type or None for no body) ------------------
CLOUDFLARE_OPERATIONS: list[tuple[str, str, str | None]] = [
    ("GET", "/zones", None),
    ("GET", "/zones/{zone_id}/dns_records", None),
    ("POST", "/zones/{zone_id}/dns_records", "dns.record_create_params:RecordCreateParams"),
    ("GET", "/zones/{zone_id}/dns_records/{dns_record_id}", None),
    (
        "PUT",
        "/zones/{zone_id}/dns_records/{dns_record_id}",
        "dns.record_update_params:RecordUpdateParams",
    ),
    ("DELETE", "/zones/{zone_id}/dns_records/{dns_record_id}", None),
    ("GET", "/zones/{zone_id}/email/routing", None),
    (
        "POST",
        "/zones/{zone_id}/email/routing/dns",
        "email_routing.dns_create_params:DNSCreateParams",
    ),
    ("DELETE", "/zones/{zone_id}/email/routing/dns", None),
    ("GET", "/zones/{zone_id}/email/routing/rules", None),
    (
        "POST",
        "/zones/{zone_id}/email/routing/rules",
        "email_routing.rule_create_params:RuleCreateParams",
    ),
    ("GET", "/zones/{zone_id}/email/routing/rules/catch_all", None),
    (
        "PUT",
        "/zones/{zone_id}/email/routing/rules/catch_all",
        "email_routing.rules.catch_all_update_params:CatchAllUpdateParams",
    ),
    ("GET", "/zones/{zone_id}/email/routing/rules/{rule_identifier}", None),
    (
        "PUT",
        "/zones/{zone_id}/email/routing/rules/{rule_identifier}",
        "email_routing.rule_update_params:RuleUpdateParams",
    ),
    ("DELETE", "/zones/{zone_id}/email/routing/rules/{rule_identifier}", None),
    ("GET", "/accounts/{account_id}/email/routing/addresses", None),
    (
        "POST",
        "/accounts/{account_id}/email/routing/addresses",
        "email_routing.address_create_params:AddressCreateParams",
    ),
    (
        "GET",
        "/accounts/{account_id}/email/routing/addresses/{destination_address_identifier}",
        None,
    ),
    (
        "DELETE",
        "/accounts/{account_id}/email/routing/addresses/{destination_address_identifier}",
        None,
    ),
]
#: SDK parameters that are path parameters, never body fields.
PATH_PARAMS = frozenset(
    {"zone_id", "account_id", "dns_record_id", "rule_identifier", "destination_address_identifier"}
)


# -- ZITADEL: request messages in their JSON names (protos; see the module docstring) ---
def _closed(properties: Mapping[str, Any], required: Sequence[str] = ()) -> JSON:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


_STRING = {"type": "string"}
_STRINGS = {"type": "array", "items": _STRING}
_BOOL = {"type": "boolean"}
_LIST_QUERY = _closed(
    {"offset": {"type": ["string", "integer"]}, "limit": {"type": "integer"}, "asc": _BOOL}
)
_SEARCH = _closed({"query": _LIST_QUERY, "queries": {"type": "array", "items": {"type": "object"}}})
_PROJECT = {
    "name": _STRING,
    "projectRoleAssertion": _BOOL,
    "projectRoleCheck": _BOOL,
    "hasProjectCheck": _BOOL,
    "privateLabelingSetting": {
        "enum": [
            "PRIVATE_LABELING_SETTING_UNSPECIFIED",
            "PRIVATE_LABELING_SETTING_ENFORCE_PROJECT_RESOURCE_OWNER_POLICY",
            "PRIVATE_LABELING_SETTING_ALLOW_LOGIN_USER_RESOURCE_OWNER_POLICY",
        ]
    },
}
_OIDC_CONFIG = {
    "redirectUris": _STRINGS,
    "responseTypes": {
        "type": "array",
        "items": {
            "enum": [
                "OIDC_RESPONSE_TYPE_CODE",
                "OIDC_RESPONSE_TYPE_ID_TOKEN",
                "OIDC_RESPONSE_TYPE_ID_TOKEN_TOKEN",
            ]
        },
    },
    "grantTypes": {
        "type": "array",
        "items": {
            "enum": [
                "OIDC_GRANT_TYPE_AUTHORIZATION_CODE",
                "OIDC_GRANT_TYPE_IMPLICIT",
                "OIDC_GRANT_TYPE_REFRESH_TOKEN",
                "OIDC_GRANT_TYPE_DEVICE_CODE",
                "OIDC_GRANT_TYPE_TOKEN_EXCHANGE",
            ]
        },
    },
    "appType": {"enum": ["OIDC_APP_TYPE_WEB", "OIDC_APP_TYPE_USER_AGENT", "OIDC_APP_TYPE_NATIVE"]},
    "authMethodType": {
        "enum": [
            "OIDC_AUTH_METHOD_TYPE_BASIC",
            "OIDC_AUTH_METHOD_TYPE_POST",
            "OIDC_AUTH_METHOD_TYPE_NONE",
            "OIDC_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT",
        ]
    },
    "postLogoutRedirectUris": _STRINGS,
    "version": {"enum": ["OIDC_VERSION_1_0"]},
    "devMode": _BOOL,
    "accessTokenType": {"enum": ["OIDC_TOKEN_TYPE_BEARER", "OIDC_TOKEN_TYPE_JWT"]},
    "accessTokenRoleAssertion": _BOOL,
    "idTokenRoleAssertion": _BOOL,
    "idTokenUserinfoAssertion": _BOOL,
    "clockSkew": _STRING,
    "additionalOrigins": _STRINGS,
    "skipNativeAppSuccessPage": _BOOL,
    "backChannelLogoutUri": _STRING,
}
M = "/management/v1"
ZITADEL_OPERATIONS: list[tuple[str, str, JSON | None]] = [
    (
        "POST",
        "/v2/organizations",
        _closed({"name": _STRING, "admins": {"type": "array"}, "orgId": _STRING}, ["name"]),
    ),
    ("POST", "/v2/organizations/_search", _SEARCH),
    ("GET", f"{M}/orgs/me", None),
    ("POST", f"{M}/projects", _closed(_PROJECT, ["name"])),
    ("POST", f"{M}/projects/_search", _SEARCH),
    ("GET", f"{M}/projects/{{project_id}}", None),
    ("PUT", f"{M}/projects/{{project_id}}", _closed(_PROJECT, ["name"])),
    ("DELETE", f"{M}/projects/{{project_id}}", None),
    (
        "POST",
        f"{M}/projects/{{project_id}}/roles",
        _closed({"roleKey": _STRING, "displayName": _STRING, "group": _STRING}, ["roleKey"]),
    ),
    ("POST", f"{M}/projects/{{project_id}}/roles/_search", _SEARCH),
    (
        "PUT",
        f"{M}/projects/{{project_id}}/roles/{{role_key}}",
        _closed({"displayName": _STRING, "group": _STRING}),
    ),
    ("DELETE", f"{M}/projects/{{project_id}}/roles/{{role_key}}", None),
    (
        "POST",
        f"{M}/projects/{{project_id}}/apps/oidc",
        _closed({"name": _STRING, **_OIDC_CONFIG}, ["name"]),
    ),
    ("POST", f"{M}/projects/{{project_id}}/apps/_search", _SEARCH),
    ("GET", f"{M}/projects/{{project_id}}/apps/{{app_id}}", None),
    ("PUT", f"{M}/projects/{{project_id}}/apps/{{app_id}}", _closed({"name": _STRING}, ["name"])),
    ("PUT", f"{M}/projects/{{project_id}}/apps/{{app_id}}/oidc_config", _closed(_OIDC_CONFIG)),
    (
        "POST",
        f"{M}/projects/{{project_id}}/apps/{{app_id}}/oidc_config/_generate_client_secret",
        _closed({}),
    ),
    ("DELETE", f"{M}/projects/{{project_id}}/apps/{{app_id}}", None),
    (
        "POST",
        f"{M}/projects/{{project_id}}/grants",
        _closed({"grantedOrgId": _STRING, "roleKeys": _STRINGS}, ["grantedOrgId"]),
    ),
    ("POST", f"{M}/projects/{{project_id}}/grants/_search", _SEARCH),
    ("GET", f"{M}/projects/{{project_id}}/grants/{{grant_id}}", None),
    ("PUT", f"{M}/projects/{{project_id}}/grants/{{grant_id}}", _closed({"roleKeys": _STRINGS})),
    ("DELETE", f"{M}/projects/{{project_id}}/grants/{{grant_id}}", None),
]


def coolify(spec_path: Path) -> tuple[JSON, list[JSON]]:
    spec = json.loads(spec_path.read_text())
    operations = []
    for method, path in COOLIFY_OPERATIONS:
        operation = spec["paths"][path][method.lower()]
        schema = (
            operation.get("requestBody", {})
            .get("content", {})
            .get("application/json", {})
            .get("schema")
        )
        operations.append(
            {
                "method": method,
                "path": path,
                "query": sorted(
                    p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"
                ),
                "body": _openapi_schema(schema) if schema else None,
            }
        )
    version = spec.get("info", {}).get("version", "?")
    return {"coolify": f"openapi.json of Coolify {version}"}, operations


def _openapi_schema(schema: JSON) -> JSON:
    """An OpenAPI 3.0 schema as JSON Schema: nullable types, closed objects."""
    out: JSON = {}
    kind = schema.get("type")
    if kind is not None:
        out["type"] = [kind, "null"] if schema.get("nullable") else kind
    if "enum" in schema:
        out["enum"] = list(schema["enum"]) + ([None] if schema.get("nullable") else [])
    if "items" in schema:
        out["items"] = _openapi_schema(schema["items"])
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = [r for r in schema.get("required", []) if r in properties]
        if all(name in required for name in ONE_OF_REQUIRED):
            required = [r for r in required if r not in ONE_OF_REQUIRED]
            out["anyOf"] = [{"required": [name]} for name in ONE_OF_REQUIRED]
        out.update(
            type="object",
            properties={k: _openapi_schema(v) for k, v in properties.items()},
            required=required,
            additionalProperties=False,
        )
    return out


def cloudflare() -> tuple[JSON, list[JSON]]:
    import importlib

    import cloudflare as sdk

    operations = []
    for method, path, spelt in CLOUDFLARE_OPERATIONS:
        body = None
        if spelt is not None:
            module, _, name = spelt.partition(":")
            found = getattr(importlib.import_module(f"cloudflare.types.{module}"), name)
            body = _typed_schema(found)
        operations.append({"method": method, "path": path, "query": None, "body": body})
    return {"cloudflare": f"cloudflare Python SDK {sdk.__version__} parameter types"}, operations


def _typed_schema(hint: Any) -> JSON:
    """A TypedDict (or a type within one) as JSON Schema."""
    from typing_extensions import is_typeddict

    origin = get_origin(hint)
    args = get_args(hint)
    if origin in (Required, NotRequired, Annotated):
        return _typed_schema(args[0])
    if origin in (Union, UnionType):
        return {"anyOf": [_typed_schema(a) for a in args]}
    if origin is Literal:
        return {"enum": list(args)}
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint in (int, float):
        return {"type": "number"}
    if hint is type(None):
        return {"type": "null"}
    if isinstance(hint, type) and is_typeddict(hint):
        from typing_extensions import get_type_hints

        hints = get_type_hints(hint, include_extras=True)
        return {
            "type": "object",
            "properties": {k: _typed_schema(v) for k, v in hints.items() if k not in PATH_PARAMS},
            "required": sorted(
                k for k, v in hints.items() if k not in PATH_PARAMS and get_origin(v) is Required
            ),
            "additionalProperties": False,
        }
    if origin is not None and args and _iterable(origin):
        return {"type": "array", "items": _typed_schema(args[0])}
    if origin is dict or hint is dict:
        return {"type": "object"}
    if "SequenceNotStr" in repr(hint):  # the SDK's list-but-not-a-string alias
        return {"type": "array", "items": _typed_schema(args[0]) if args else {}}
    return {}


def _iterable(origin: Any) -> bool:
    import collections.abc

    return (
        isinstance(origin, type)
        and issubclass(origin, collections.abc.Iterable)
        and origin not in (str, bytes, dict)
    )


def zitadel() -> tuple[JSON, list[JSON]]:
    operations = [
        {"method": m, "path": p, "query": None, "body": body} for m, p, body in ZITADEL_OPERATIONS
    ]
    source = "zitadel/management.proto and zitadel/org/v2/org_service.proto request messages"
    return {"zitadel": source}, operations


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coolify", type=Path, default=COOLIFY_SPEC)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(list(argv) if argv is not None else None)
    sources: JSON = {}
    providers: JSON = {}
    for name, made in (
        ("coolify", coolify(args.coolify)),
        ("cloudflare", cloudflare()),
        ("zitadel", zitadel()),
    ):
        sources.update(made[0])
        providers[name] = {"base": BASES[name], "operations": made[1]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = {"sources": sources, "providers": providers}
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
