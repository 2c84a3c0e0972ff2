"""The org file's shape, as pydantic models: what validates it and what its schema is.

The models check one section at a time (types, formats, allowed values);
checks that span sections (a grant naming a declared role, an app in a
declared environment) live in `trueup.declare.org`, next to the resources
they produce. `describe_error` words pydantic's first complaint the way a
person looks for it: the section or item (by its name when it has one), then
the field.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trueup.redact import looks_secret

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
DOMAIN_PATTERN = r"^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]$"
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
URL = re.compile(r"^https?://[^\s/]+(/\S*)?$")
ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RECORD_TYPES = ("A", "AAAA", "CAA", "CNAME", "MX", "NS", "PTR", "SRV", "TXT", "URI")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _emails(values: list[str]) -> list[str]:
    bad = [v for v in values if not EMAIL.match(v)]
    if bad:
        raise ValueError(f"not an email address: {bad[0]!r}")
    return [v.lower() for v in values]


def _urls(values: list[str]) -> list[str]:
    bad = [v for v in values if not URL.match(v)]
    if bad:
        raise ValueError(f"not an http(s) URL: {bad[0]!r}")
    return values


class OrgMeta(Strict):
    id: str = Field(pattern=ID_PATTERN, description="Stable id of the org in trueup's state.")
    name: str = Field(min_length=1, description="Display name; typed to confirm destroying steps.")
    domain: str = Field(pattern=DOMAIN_PATTERN, description="The org's Cloudflare zone.")


class Role(Strict):
    key: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
    display_name: str | None = None
    group: str | None = None


class OidcApp(Strict):
    name: str = Field(min_length=1)
    redirect_uris: list[str] = Field(min_length=1)
    post_logout_redirect_uris: list[str] = Field(default_factory=list)
    type: Literal["web", "spa", "native"] = "web"
    auth_method: Literal["basic", "post", "none", "private_key_jwt"] | None = None
    refresh_tokens: bool = False

    _check_redirects = field_validator("redirect_uris", "post_logout_redirect_uris")(_urls)


class Grant(Strict):
    org: str = Field(min_length=1, description="Name of the ZITADEL org the project is granted to.")
    roles: list[str] = Field(default_factory=list)


class Project(Strict):
    name: str = Field(min_length=1)
    roles: list[str | Role] = Field(default_factory=list)
    apps: list[OidcApp] = Field(default_factory=list)
    grants: list[Grant] = Field(default_factory=list)
    role_assertion: bool = False
    role_check: bool = False

    def role_list(self) -> list[Role]:
        return [r if isinstance(r, Role) else Role(key=r) for r in self.roles]


class Identity(Strict):
    org: str | None = Field(default=None, description="ZITADEL org name (default: org.name).")
    project: list[Project] = Field(default_factory=list)


# A label as DNS providers take it: RFC 1035 letters, digits and hyphens, plus
# '_' (service records, DKIM) and a whole-label '*' (wildcards).
_DNS_LABEL = re.compile(r"^(\*|[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)$")


class DnsRecord(Strict):
    type: Literal[RECORD_TYPES]  # type: ignore[valid-type]
    name: str = Field(min_length=1, description="Relative to the domain, '@' for the apex.")
    content: str = Field(min_length=1)
    ttl: int = Field(default=1, description="1 (automatic) or 60-86400 seconds.")
    proxied: bool = False
    priority: int | None = Field(default=None, ge=0, le=65535)
    comment: str | None = None

    @model_validator(mode="after")
    def _check(self) -> DnsRecord:
        labels = [] if self.name == "@" else self.name.lower().rstrip(".").split(".")
        if len(self.name) > 253 or not all(_DNS_LABEL.match(label) for label in labels):
            raise ValueError(
                f"name {self.name!r} is not a DNS name: dot-separated labels of letters, "
                "digits, '-' and '_' (up to 63 each, not starting or ending with '-'), "
                "'*' as a whole label, or '@' for the apex"
            )
        if self.ttl != 1 and not 60 <= self.ttl <= 86400:
            raise ValueError("ttl must be 1 (automatic) or between 60 and 86400")
        if self.proxied and self.type not in ("A", "AAAA", "CNAME"):
            raise ValueError(f"a {self.type} record cannot be proxied")
        if self.type in ("MX", "URI", "SRV") and self.priority is None:
            raise ValueError(f"a {self.type} record needs a priority")
        for rtype, version in (("A", 4), ("AAAA", 6)):
            if self.type == rtype:
                try:
                    ok = ipaddress.ip_address(self.content).version == version
                except ValueError:
                    ok = False
                if not ok:
                    raise ValueError(
                        f"content of an {rtype} record must be an IPv{version} address"
                    )
        return self


class Route(Strict):
    address: str
    forward_to: list[str] = Field(min_length=1)

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        return _emails([value])[0]

    _check_forward = field_validator("forward_to")(_emails)


class CatchAll(Strict):
    action: Literal["forward", "drop"] = "forward"
    forward_to: list[str] = Field(default_factory=list)

    _check_forward = field_validator("forward_to")(_emails)

    @model_validator(mode="after")
    def _check(self) -> CatchAll:
        if self.action == "forward" and not self.forward_to:
            raise ValueError("a forwarding catch-all needs forward_to")
        if self.action == "drop" and self.forward_to:
            raise ValueError("a dropping catch-all takes no forward_to")
        return self


class Mail(Strict):
    level: Literal["none", "forward"] = Field(
        description="none: Email Routing off; forward: on, with these routes."
    )
    routes: list[Route] = Field(default_factory=list)
    catch_all: CatchAll | None = None
    destinations: list[str] = Field(default_factory=list)

    _check_destinations = field_validator("destinations")(_emails)

    @model_validator(mode="after")
    def _check(self) -> Mail:
        if self.level == "none" and (self.routes or self.catch_all or self.destinations):
            raise ValueError("routes, catch_all and destinations need level = 'forward'")
        return self


class AppsMeta(Strict):
    project: str | None = Field(
        default=None, description="Coolify project name (default: org.name)."
    )
    description: str | None = None
    environments: list[str] = Field(default_factory=lambda: ["production"])
    server: str | None = Field(
        default=None, description="Coolify server name (default: the first)."
    )


class GitSource(Strict):
    repository: str = Field(pattern=r"^https?://\S+$")
    branch: str = "main"
    build_pack: Literal["nixpacks", "static", "dockerfile", "dockercompose"] = "nixpacks"


class EnvValue(Strict):
    """One variable spelt as a table: a value marked secret or public, or a reference."""

    value: str | None = None
    env: str | None = Field(default=None, description="read from this environment variable")
    credential: str | None = Field(
        default=None, description='read from the OS keyring: "keyring:SERVICE/NAME"'
    )
    secret: bool = Field(
        default=True, description="false: the value is shown in plans and stored as it is"
    )

    @model_validator(mode="after")
    def _one_origin(self) -> EnvValue:
        given = [n for n in ("value", "env", "credential") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("declare exactly one of value, env or credential")
        if not self.secret and self.value is None:
            raise ValueError("a value read from env or credential is always secret")
        return self


class AppFields(Strict):
    environment: str = "production"
    image: str | None = Field(default=None, description="Docker image, e.g. ghcr.io/acme/web:1.2")
    git: GitSource | None = None
    port: int = Field(default=80, ge=1, le=65535)
    domains: list[str] = Field(default_factory=list)
    env: dict[str, str | EnvValue] = Field(
        default_factory=dict,
        description="Sealed (never shown or stored, only its digest) unless named in "
        "public_env or spelt { value = ..., secret = false }.",
    )
    public_env: list[str] = Field(
        default_factory=list, description="Variables whose values are not secret."
    )

    _check_domains = field_validator("domains")(_urls)

    @field_validator("env")
    @classmethod
    def _env_keys(cls, value: dict[str, str | EnvValue]) -> dict[str, str | EnvValue]:
        bad = [k for k in value if not ENV_KEY.match(k)]
        if bad:
            raise ValueError(f"not an environment variable name: {bad[0]!r}")
        return value

    @model_validator(mode="after")
    def _public(self) -> AppFields:
        for name in self.public_env:
            value = self.env.get(name)
            if value is None:
                raise ValueError(f"public_env: {name!r} is not a variable in env")
            if looks_secret(name):
                raise ValueError(f"public_env: {name!r} is named like a secret; keep it sealed")
            if isinstance(value, EnvValue) and value.value is None:
                raise ValueError(f"public_env: {name!r} is read from a secret reference")
        return self

    @model_validator(mode="after")
    def _one_source(self) -> AppFields:
        if (self.image is None) == (self.git is None):
            raise ValueError("declare exactly one of image or git")
        return self


class App(AppFields):
    name: str = Field(min_length=1)


class Chat(AppFields):
    name: str = "chat"
    signing_key_env: str = Field(default="CHAT_SIGNING_KEY", pattern=ENV_KEY.pattern)
    key_generation: int = Field(
        default=1, ge=1, description="Raise it to re-key (destroys and migrates)."
    )


class OrgFile(Strict):
    """An org: identity (ZITADEL), DNS and mail (Cloudflare), apps and chat (Coolify)."""

    model_config = ConfigDict(extra="forbid", title="trueup org")

    org: OrgMeta
    identity: Identity | None = None
    dns: list[DnsRecord] = Field(default_factory=list)
    mail: Mail | None = None
    apps: AppsMeta | None = None
    app: list[App] = Field(default_factory=list)
    chat: Chat | None = None


_LABEL_KEYS = ("name", "address", "key", "org")


def describe_error(exc: ValidationError, data: Any) -> str:
    """The first problem as '<section/item>: field <name>: <message>'."""
    error = exc.errors()[0]
    message = str(error["msg"]).removeprefix("Value error, ")
    loc = list(error["loc"])
    parts: list[str] = []
    node: Any = data
    fields: list[str] = []
    for index, step in enumerate(loc):
        if isinstance(step, int) and isinstance(node, list) and step < len(node):
            item = node[step]
            label = _label(item)
            owner = ".".join(str(s) for s in loc[:index] if isinstance(s, str))
            parts.append(f"[[{owner}]] #{step + 1}" + (f" ({label})" if label else ""))
            fields = []
            node = item
            continue
        if isinstance(step, str) and step in ("str", "Role", "function-after[_check(), Role]"):
            continue
        fields.append(str(step))
        node = node.get(step) if isinstance(node, Mapping) else None
    if not parts and fields:
        section, fields = f"[{fields[0]}]", fields[1:]
        parts.append(section)
    where = " ".join(parts) or "document"
    if error["type"] == "missing" and not fields:
        return f"missing section {where}"
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown field {'.'.join(fields)!r}"
    if error["type"] == "missing":
        return f"{where}: missing field {'.'.join(fields)!r}"
    field_text = f"field {'.'.join(fields)!r}: " if fields else ""
    return f"{where}: {field_text}{message}"


def _label(item: Any) -> str:
    if not isinstance(item, Mapping):
        return ""
    if "type" in item and "name" in item:
        return f"{item['type']} {item['name']}"
    for key in _LABEL_KEYS:
        if isinstance(item.get(key), str):
            return repr(item[key])
    return ""
