"""Org files -> validated resources of the provider kinds.

Every error names the file, the section or item (by its name when it has
one) and the field, and nothing is read from or written to any provider.
Parsing and validating a large org costs more than a no-op plan should
spend before its first request, so the validated result is
cached under the data directory, keyed by the file's content (and trueup's
version): an edit is always a miss.

Resource ids are stable and readable (``dns:portal.acme.test/A``,
``identity.app:portal/portal-web``): they key applied records across runs
and name the resource in plans, so renaming an item is removing one and
adding another.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from trueup import __version__
from trueup.canonical import digest, sha256_hex
from trueup.declare.files import declaration_bytes, read_document
from trueup.errors import UsageError
from trueup.model import Resource
from trueup.org.declared import App, Chat, EnvValue, Mail, OrgFile, Project, describe_error
from trueup.redact import SEALED, looks_secret, seal
from trueup.sealing import resolve_reference

POLICY = "replace-if-unmodified"
# 2: secret-named env sealed; 3: the digest is of the resources, whatever their order;
# 4: every env value sealed unless declared public
CACHE_FORMAT = f"trueup-org-cache/{__version__}/4"


@dataclass(frozen=True)
class DeclaredOrg:
    """A validated org: its resources and what each provider's scope is."""

    id: str
    name: str
    domain: str
    path: Path
    resources: tuple[Resource, ...]
    digest: str
    zitadel_org: str | None = None
    coolify_project: str | None = None
    coolify_server: str | None = None
    granted_orgs: tuple[str, ...] = ()
    secret_env_keys: frozenset[str] = frozenset()
    mail: bool = False
    dns: bool = False

    @property
    def providers(self) -> set[str]:
        return {r.kind.partition(".")[0] for r in self.resources}

    def to_json(self) -> dict[str, Any]:
        body = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        body.pop("path")
        body["resources"] = [r.to_json() for r in self.resources]
        body["granted_orgs"] = list(self.granted_orgs)
        body["secret_env_keys"] = sorted(self.secret_env_keys)
        return body

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: Path) -> DeclaredOrg:
        return cls(
            **{
                **data,
                "path": path,
                "resources": tuple(Resource.from_json(r) for r in data["resources"]),
                "granted_orgs": tuple(data["granted_orgs"]),
                "secret_env_keys": frozenset(data["secret_env_keys"]),
            }
        )


@dataclass
class _Builder:
    where: str
    domain: str
    resources: list[Resource] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)

    def add(
        self, rid: str, kind: str, target: str, spec: Mapping[str, Any], deps: Iterable[str] = ()
    ) -> None:
        if rid in self.ids:
            raise UsageError(f"{self.where}: {rid} is declared twice")
        self.ids.add(rid)
        self.resources.append(
            Resource(
                id=rid,
                kind=kind,
                policy=POLICY,
                target=target,
                spec=dict(spec),
                # Sorted: which resources come first is the planner's call, not the
                # file's, so listing the same ones in another order is no change.
                depends_on=tuple(sorted(set(deps))),
            )
        )

    def fail(self, section: str, message: str) -> UsageError:
        return UsageError(f"{self.where}: {section}: {message}")


def load_org(path: Path, cache_dir: Path | None = None) -> DeclaredOrg:
    """Parse, validate and turn an org file into resources (cached by content)."""
    path = path.resolve()
    cache = _cache_file(cache_dir, path)
    if cache is not None:
        try:
            return DeclaredOrg.from_json(json.loads(cache.read_bytes()), path)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    org = _load(path)
    # A sealed secret's value lives in this process only, so an org holding one
    # is parsed again each time (and the cache never sees the value).
    sealed = any(
        str(value).startswith(SEALED)
        for resource in org.resources
        for value in resource.spec.get("env", {}).values()
    )
    if cache is not None and not sealed:
        _write_cache(cache, org)
    return org


def _cache_file(cache_dir: Path | None, path: Path) -> Path | None:
    if cache_dir is None:
        return None
    try:
        raw = declaration_bytes(path)
    except (OSError, UsageError):
        return None  # _load reports it
    key = sha256_hex(f"{CACHE_FORMAT}\0{path.suffix.lower()}\0".encode() + raw)
    return cache_dir / f"{key}.json"


def _write_cache(cache: Path, org: DeclaredOrg) -> None:
    """Best effort: a cache that cannot be written only costs the next plan time."""
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        temp = cache.with_name(f".{cache.name}.{os.getpid()}")
        temp.write_text(json.dumps(org.to_json(), separators=(",", ":")))
        os.replace(temp, cache)
    except OSError:
        pass


def _load(path: Path) -> DeclaredOrg:
    data = read_document(path)
    where = str(path)
    try:
        model = OrgFile.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"{where}: {describe_error(exc, data)}") from None
    build = _Builder(where, model.org.domain)
    zitadel_org = _identity(build, model)
    dns = _dns(build, model)
    _mail(build, model.mail)
    project = _apps(build, model)
    granted = sorted(
        {g.org for p in (model.identity.project if model.identity else []) for g in p.grants}
    )
    org = DeclaredOrg(
        id=model.org.id,
        name=model.org.name,
        domain=model.org.domain,
        path=path,
        resources=tuple(build.resources),
        digest="",
        zitadel_org=zitadel_org,
        coolify_project=project,
        coolify_server=model.apps.server if model.apps else None,
        granted_orgs=tuple(granted),
        secret_env_keys=frozenset({model.chat.signing_key_env} if model.chat else ()),
        mail=model.mail is not None,
        dns=dns,
    )
    return dataclasses.replace(org, digest=declared_digest(org))


def declared_digest(org: DeclaredOrg) -> str:
    """The declared org's identity: what it declares, not the order it is written in.

    A plan's identity covers this digest, and a saved plan is stale when it
    moves (org-provisioning.md, plans compare order-independently). So it is
    taken over the resources sorted by id, with everything else the org
    declares: moving a [[dns]] entry or a role changes no resource and no
    step, while any change to a resource's spec, a dependency or a scope does.
    Order stays wherever it carries meaning, inside a resource's spec.
    """
    body = org.to_json()
    body.pop("digest")
    body["resources"] = sorted(body["resources"], key=lambda r: str(r["id"]))
    return digest(body)


# -- identity (ZITADEL) -------------------------------------------------------------
def _identity(build: _Builder, model: OrgFile) -> str | None:
    if model.identity is None:
        return None
    org_name = model.identity.org or model.org.name
    target = f"zitadel:{org_name}"
    build.add("identity.org", "zitadel.org", target, {"name": org_name})
    seen: set[str] = set()
    for project in model.identity.project:
        section = f"[[identity.project]] {project.name!r}"
        if project.name in seen:
            raise build.fail(section, "declared twice")
        seen.add(project.name)
        _project(build, target, section, project)
    return org_name


def _project(build: _Builder, target: str, section: str, project: Project) -> None:
    pid = f"identity.project:{project.name}"
    spec = {
        "name": project.name,
        "role_assertion": project.role_assertion,
        "role_check": project.role_check,
    }
    build.add(pid, "zitadel.project", target, spec, ["identity.org"])
    keys: list[str] = []
    for role in project.role_list():
        if role.key in keys:
            raise build.fail(section, f"field 'roles': role {role.key!r} is declared twice")
        keys.append(role.key)
        build.add(
            f"identity.role:{project.name}/{role.key}",
            "zitadel.role",
            target,
            {
                "project": project.name,
                "key": role.key,
                "display_name": role.display_name or role.key,
                "group": role.group or "",
            },
            [pid],
        )
    names: set[str] = set()
    for app in project.apps:
        if app.name in names:
            raise build.fail(section, f"field 'apps': app {app.name!r} is declared twice")
        names.add(app.name)
        spec = {"project": project.name, **app.model_dump(exclude_none=True)}
        build.add(
            f"identity.app:{project.name}/{app.name}", "zitadel.oidc_app", target, spec, [pid]
        )
    orgs: set[str] = set()
    for grant in project.grants:
        unknown = sorted(set(grant.roles) - set(keys))
        if unknown:
            raise build.fail(
                section,
                f"grant to {grant.org!r}: field 'roles': {unknown[0]!r} is not a role "
                "of this project",
            )
        if grant.org in orgs:
            raise build.fail(section, f"field 'grants': org {grant.org!r} is granted twice")
        orgs.add(grant.org)
        deps = [pid, *(f"identity.role:{project.name}/{k}" for k in grant.roles)]
        spec = {"project": project.name, "org": grant.org, "roles": sorted(grant.roles)}
        build.add(
            f"identity.grant:{project.name}/{grant.org}",
            "zitadel.project_grant",
            target,
            spec,
            deps,
        )


# -- DNS (Cloudflare) ---------------------------------------------------------------
def qualify(name: str, domain: str) -> str | None:
    """A record name as Cloudflare returns it (fully qualified); None if outside the zone."""
    text = name.strip().lower()
    if text.endswith("."):
        text = text.rstrip(".")
        return text if text == domain or text.endswith("." + domain) else None
    if text in ("@", domain):
        return domain
    if text.endswith("." + domain):
        return text
    return f"{text}.{domain}"


def _dns(build: _Builder, model: OrgFile) -> bool:
    target = f"cloudflare:{model.org.domain}"
    keyed: dict[tuple[str, str], int] = {}
    named: list[tuple[int, str, Any]] = []
    for index, record in enumerate(model.dns):
        section = f"[[dns]] #{index + 1} ({record.type} {record.name})"
        fqdn = qualify(record.name, model.org.domain)
        if fqdn is None:
            raise build.fail(
                section, f"field 'name': {record.name!r} is outside {model.org.domain}"
            )
        keyed[(record.type, fqdn)] = keyed.get((record.type, fqdn), 0) + 1
        named.append((index, fqdn, record))
    for _, fqdn, record in named:
        if record.type == "CNAME" and sum(n for (t, f), n in keyed.items() if f == fqdn) > 1:
            raise build.fail(
                f"[[dns]] CNAME {record.name}", "a CNAME cannot share its name with other records"
            )
    for index, fqdn, record in named:
        several = keyed[(record.type, fqdn)] > 1
        rid = f"dns:{fqdn}/{record.type}" + (f"/{record.content}" if several else "")
        if rid in build.ids:
            raise build.fail(
                f"[[dns]] #{index + 1} ({record.type} {record.name})", "declared twice"
            )
        spec: dict[str, Any] = {
            "type": record.type,
            "name": fqdn,
            "content": record.content,
            "ttl": record.ttl,
            "proxied": record.proxied,
            "match": "content" if several else "name",
        }
        if record.priority is not None:
            spec["priority"] = record.priority
        if record.comment is not None:
            spec["comment"] = record.comment
        build.add(rid, "cloudflare.dns_record", target, spec)
    return bool(model.dns)


# -- mail (Cloudflare Email Routing) ------------------------------------------------
def _mail(build: _Builder, mail: Mail | None) -> None:
    if mail is None:
        return
    target = f"cloudflare:{build.domain}"
    build.add(
        "mail.routing", "cloudflare.email_routing", target, {"enabled": mail.level == "forward"}
    )
    if mail.level == "none":
        return
    forwarded = {a for r in mail.routes for a in r.forward_to}
    forwarded |= set(mail.catch_all.forward_to if mail.catch_all else [])
    for email in sorted(forwarded | set(mail.destinations)):
        build.add(f"mail.destination:{email}", "cloudflare.email_address", target, {"email": email})
    seen: set[str] = set()
    for route in mail.routes:
        section = f"[mail] route {route.address!r}"
        if not route.address.endswith("@" + build.domain):
            raise build.fail(section, f"field 'address': not an address of {build.domain}")
        if route.address in seen:
            raise build.fail(section, "declared twice")
        seen.add(route.address)
        _one_destination(build, section, route.forward_to)
        deps = ["mail.routing", *(f"mail.destination:{a}" for a in route.forward_to)]
        spec = {"address": route.address, "forward_to": sorted(set(route.forward_to))}
        build.add(f"mail.route:{route.address}", "cloudflare.email_rule", target, spec, deps)
    if mail.catch_all is not None:
        _one_destination(build, "[mail] catch_all", mail.catch_all.forward_to)
        deps = ["mail.routing", *(f"mail.destination:{a}" for a in mail.catch_all.forward_to)]
        spec = {
            "action": mail.catch_all.action,
            "forward_to": sorted(set(mail.catch_all.forward_to)),
        }
        build.add("mail.catch-all", "cloudflare.catch_all", target, spec, deps)


def _one_destination(build: _Builder, section: str, forward_to: Sequence[str]) -> None:
    """Cloudflare forwards an address to a single destination (its API refuses more,
    and several rules for one address would have only the newest one used)."""
    several = sorted({a.lower() for a in forward_to})
    if len(several) > 1:
        raise build.fail(
            section,
            f"field 'forward_to': Cloudflare Email Routing forwards an address to one "
            f"destination, not {len(several)} ({', '.join(several)}); forward to one "
            "address (a list that fans out, for example)",
        )


# -- apps and chat (Coolify) --------------------------------------------------------
def _apps(build: _Builder, model: OrgFile) -> str | None:
    if model.apps is None and not model.app and model.chat is None:
        return None
    meta = model.apps
    project = (meta.project if meta and meta.project else None) or model.org.name
    environments = meta.environments if meta else ["production"]
    target = f"coolify:{project}"
    spec: dict[str, Any] = {"name": project}
    if meta and meta.description is not None:
        spec["description"] = meta.description
    build.add("apps.project", "coolify.project", target, spec)
    for env in environments:
        build.add(
            f"apps.environment:{env}",
            "coolify.environment",
            target,
            {"name": env},
            ["apps.project"],
        )
    seen: set[tuple[str, str]] = set()
    items: list[tuple[str, str, App | Chat]] = [
        (f"[[app]] {a.name!r}", f"apps.app:{a.name}", a) for a in model.app
    ]
    if model.chat is not None:
        items.append(("[chat]", "chat.app", model.chat))
    hosts: dict[str, str] = {}  # Coolify refuses a host another application serves
    for section, rid, app in items:
        if (app.name, app.environment) in seen:
            raise build.fail(section, f"an app named {app.name!r} is declared twice")
        seen.add((app.name, app.environment))
        for url in app.domains:
            host = (urlsplit(url).hostname or "").lower()
            if host in hosts and hosts[host] != section:
                raise build.fail(section, f"field 'domains': {host} is a domain of {hosts[host]}")
            hosts[host] = section
        if app.environment not in environments:
            raise build.fail(
                section, f"field 'environment': {app.environment!r} is not in [apps] environments"
            )
        build.add(
            rid,
            "coolify.application",
            target,
            _app_spec(app, build.fail(section, "").message),
            [f"apps.environment:{app.environment}"],
        )
    chat = model.chat
    if chat is not None:
        if chat.signing_key_env in chat.env:
            raise build.fail(
                "[chat]", f"field 'env': {chat.signing_key_env} is the signing key's variable"
            )
        key_spec = {
            "app": chat.name,
            "environment": chat.environment,
            "app_resource": "chat.app",
            "key": chat.signing_key_env,
            "generation": chat.key_generation,
        }
        build.add("chat.signing-key", "coolify.signing_key", target, key_spec, ["chat.app"])
    return project


def _app_spec(app: App | Chat, where: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": app.name,
        "environment": app.environment,
        "ports": str(app.port),
        "domains": list(app.domains),
        # Every value is sealed unless declared public: plans, output, the audit log
        # and the state store see its digest; only the call that sets it sends it.
        "env": {k: _env_value(app, k, v, where) for k, v in app.env.items()},
    }
    if app.image is not None:
        image, tag = split_image(app.image)
        spec.update(source="dockerimage", image=image, tag=tag)
    else:
        assert app.git is not None
        spec.update(
            source="public",
            repository=app.git.repository,
            branch=app.git.branch,
            build_pack=app.git.build_pack,
        )
    if isinstance(app, Chat):
        spec["reserved"] = [app.signing_key_env]
    return spec


def _env_value(app: App | Chat, name: str, value: str | EnvValue, where: str) -> str:
    """A variable's value as resources hold it: sealed, unless declared public."""
    if isinstance(value, str):
        public = name in app.public_env and not looks_secret(name)
        return value if public else seal(value)
    if value.value is not None:
        public = (not value.secret or name in app.public_env) and not looks_secret(name)
        return value.value if public else seal(value.value)
    reference = {"env": value.env} if value.env is not None else {"credential": value.credential}
    try:
        return seal(resolve_reference(reference))  # type: ignore[arg-type]
    except UsageError as exc:
        raise UsageError(f"{where}field 'env': {name}: {exc.message}", hint=exc.hint) from None


def split_image(image: str) -> tuple[str, str]:
    """``ghcr.io/acme/web:1.2`` -> (``ghcr.io/acme/web``, ``1.2``); no tag means latest."""
    name, sep, tag = image.rpartition(":")
    if sep and "/" not in tag:
        return name, tag
    return image, "latest"
