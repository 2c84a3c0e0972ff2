"""The per-run provider sessions of one org, read concurrently.

Only the providers the org uses (declared now, or applied before and being
removed) are contacted, each only within the org's scope: its zone, its
Coolify project, its ZITADEL org. The three reads run at the same time, so a
plan takes about as long as the slowest provider's read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from trueup.declare.org import DeclaredOrg
from trueup.model import Applied
from trueup.providers.credentials import Endpoint, endpoint
from trueup.providers.http import ErrorParser, HttpClient, RetryPolicy, fan_out
from trueup.providers.remote import Session
from trueup.providers.secretstore import SecretStore

MAIL_KINDS = frozenset(
    {
        "cloudflare.email_routing",
        "cloudflare.email_rule",
        "cloudflare.catch_all",
        "cloudflare.email_address",
    }
)


@dataclass
class OrgServices:
    """Sessions by provider name, plus the HTTP clients behind them."""

    sessions: dict[str, Session] = field(default_factory=dict)
    clients: dict[str, Any] = field(default_factory=dict)
    http: dict[str, HttpClient] = field(default_factory=dict)
    loaders: dict[str, Callable[[], None]] = field(default_factory=dict)

    def load(self, after: Callable[[str], None] | None = None) -> None:
        """Read every provider's scope at once; ``after(provider)`` runs as each finishes.

        A caller observes a provider's resources in ``after`` while the slower
        providers are still answering.
        """

        def one(provider: str) -> None:
            self.loaders[provider]()
            if after is not None:
                after(provider)

        try:
            fan_out(one, list(self.loaders), max_workers=len(self.loaders) or 1)
        except BaseException:
            self.close()
            raise

    def mapping(self, applied: Mapping[str, Applied]) -> dict[str, Any]:
        """What ``ctx.services`` holds: each session, and the applied records."""
        return {**self.sessions, "applied": applied}

    def enable_writes(self) -> None:
        """Hand each session its writing client (apply only)."""
        for name, session in self.sessions.items():
            session.with_writer(self.clients[name])

    def unmet(self) -> list[str]:
        return sorted(f for s in self.sessions.values() for f in s.unmet)

    def stats(self) -> dict[str, Any]:
        return {name: http.stats.to_json() for name, http in self.http.items()}

    def close(self) -> None:
        for http in self.http.values():
            http.close()


def _by_kind(applied: Mapping[str, Applied], kind: str) -> Applied | None:
    return next((a for a in applied.values() if a.resource.kind == kind), None)


def _http(
    provider: str, point: Endpoint, policy: RetryPolicy | None, parse_error: ErrorParser
) -> HttpClient:
    return HttpClient(provider, point.url, point.token, policy=policy, parse_error=parse_error)


def _name(declared: str | None, record: Applied | None, default: str) -> str:
    """The declared name, else the one applied last, else the org's own name."""
    return declared or (record.resource.spec["name"] if record else default)


def open_services(
    org: DeclaredOrg,
    applied: Mapping[str, Applied],
    data_dir: Path,
    env: Mapping[str, str] | None = None,
    policy: RetryPolicy | None = None,
    insecure_http: bool = False,
) -> OrgServices:
    """Connect to each provider the org uses and read its scope (concurrently)."""
    services = connect(org, applied, data_dir, env, policy, insecure_http)
    services.load()
    return services


def connect(
    org: DeclaredOrg,
    applied: Mapping[str, Applied],
    data_dir: Path,
    env: Mapping[str, str] | None = None,
    policy: RetryPolicy | None = None,
    insecure_http: bool = False,
) -> OrgServices:
    """A session per provider the org uses (declared now, or applied before); no reads yet."""
    kinds_used = {r.kind for r in org.resources} | {a.resource.kind for a in applied.values()}
    providers = sorted({k.partition(".")[0] for k in kinds_used})
    services = OrgServices()
    loaders = services.loaders
    for provider in providers:
        point = endpoint(provider, env, insecure_http)
        if provider == "cloudflare":
            from trueup.providers.cloudflare import client as cf
            from trueup.providers.cloudflare.session import CloudflareSession

            http = _http(provider, point, policy, cf.parse_error)
            cf_client = cf.CloudflareClient(http, point.account)
            cf_session = CloudflareSession(cf_client.reader(), None, org.domain)
            mail = bool(kinds_used & MAIL_KINDS)
            loaders[provider] = partial(cf_session.load, mail)
            services.clients[provider], services.sessions[provider] = cf_client, cf_session
        elif provider == "coolify":
            from trueup.providers.coolify import client as cl
            from trueup.providers.coolify.session import CoolifySession

            http = _http(provider, point, policy, cl.parse_error)
            cl_client = cl.CoolifyClient(http)
            project = _by_kind(applied, "coolify.project")
            name = _name(org.coolify_project, project, org.name)
            cl_session = CoolifySession(
                cl_client.reader(), None, name, org.coolify_server, org.secret_env_keys
            )
            loaders[provider] = partial(cl_session.load, _known_project(org, applied, project))
            services.clients[provider], services.sessions[provider] = cl_client, cl_session
        elif provider == "zitadel":
            from trueup.providers.zitadel import client as zc
            from trueup.providers.zitadel.session import ZitadelSession

            http = _http(provider, point, policy, zc.parse_error)
            z_client = zc.ZitadelClient(http)
            org_record = _by_kind(applied, "zitadel.org")
            name = _name(org.zitadel_org, org_record, org.name)
            z_session = ZitadelSession(z_client.reader(), None, name, SecretStore(data_dir), org.id)
            loaders[provider] = partial(
                z_session.load,
                _known_org(applied, org_record),
                list(org.granted_orgs),
                _wanted_projects(org, applied),
            )
            services.clients[provider], services.sessions[provider] = z_client, z_session
        else:  # pragma: no cover - the registry only has these three
            raise ValueError(f"unknown provider {provider!r}")
        services.http[provider] = http
    return services


def _known_project(
    org: DeclaredOrg, applied: Mapping[str, Applied], project: Applied | None
) -> Any:
    """What the last apply recorded of the Coolify project (read in the first round)."""
    from trueup.providers.coolify.session import Known

    resources = [*org.resources, *(a.resource for a in applied.values())]
    return Known(
        project=str(project.detail["id"]) if project and project.detail.get("id") else None,
        environments=tuple(
            sorted({str(r.spec["name"]) for r in resources if r.kind == "coolify.environment"})
        ),
        apps=tuple(
            sorted(
                str(a.detail["id"])
                for a in applied.values()
                if a.resource.kind == "coolify.application" and a.detail.get("id")
            )
        ),
    )


def _known_org(applied: Mapping[str, Applied], org_record: Applied | None) -> Any:
    """The ZITADEL org and projects the last apply recorded (read in the first round)."""
    from trueup.providers.zitadel.session import Known

    if org_record is None or not org_record.detail.get("id"):
        return Known()
    projects = sorted(
        str(a.detail["id"])
        for a in applied.values()
        if a.resource.kind == "zitadel.project" and a.detail.get("id")
    )
    return Known(
        (str(org_record.detail["id"]), str(org_record.resource.spec["name"])), tuple(projects)
    )


def _wanted_projects(org: DeclaredOrg, applied: Mapping[str, Applied]) -> frozenset[str]:
    resources = [*org.resources, *(a.resource for a in applied.values())]
    return frozenset(str(r.spec["name"]) for r in resources if r.kind == "zitadel.project")
