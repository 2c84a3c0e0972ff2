"""The ``coolify.application`` kind: an app from a Docker image or a public git repository.

The view covers what the declaration names: the source (image and tag, or
repository, branch and build pack), exposed ports, domains and the declared
environment variables. Variables trueup never declared are left alone (and
reported as unmanaged); a variable the declaration dropped is deleted.
After a change the app is (re)started so the change takes effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from trueup.errors import UsageError
from trueup.kinds.base import Decision, ObserveContext
from trueup.model import ActionType, Applied, Observed, Resource
from trueup.providers.coolify.session import CoolifySession
from trueup.providers.remote import RemoteKind, applied_record, recorded_id
from trueup.redact import SEALED, looks_secret, seal

JSON = dict[str, Any]
SOURCE_FIELDS = {
    "dockerimage": {"image": "docker_registry_image_name", "tag": "docker_registry_image_tag"},
    "public": {"repository": "git_repository", "branch": "git_branch", "build_pack": "build_pack"},
}


def repository_key(url: str) -> str:
    """``https://github.com/acme/site.git`` -> ``acme/site``, as Coolify stores it."""
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        segments = [s for s in parts.path.split("/") if s]
        return "/".join(segments[:2]).removesuffix(".git")
    return url.removesuffix(".git")


def _domains(raw: str | None) -> list[str]:
    return sorted({d.strip().lower() for d in (raw or "").split(",") if d.strip()})


def managed_keys(resource: Resource, applied: Applied | None) -> set[str]:
    """Declared keys, plus keys an earlier apply set (so dropping one deletes it)."""
    keys = set(resource.spec.get("env", {}))
    if applied is not None:
        keys |= set(applied.resource.spec.get("env", {}))
    return keys - set(resource.spec.get("reserved", []))


class ApplicationKind(RemoteKind):
    name = "coolify.application"
    provider = "coolify"
    destroys_on_delete = True

    def noun(self, resource: Resource) -> str:
        return f"app {resource.spec['name']} ({resource.spec['environment']})"

    def desired(self, resource: Resource) -> JSON:
        spec = resource.spec
        view: JSON = {
            "name": spec["name"],
            "environment": spec["environment"],
            "source": spec["source"],
            "ports": str(spec.get("ports", "80")),
            "domains": _domains(",".join(spec.get("domains", []))),
            "env": dict(sorted(spec.get("env", {}).items())),
            # trueup starts what it creates: a declared app is one that runs.
            "running": True,
        }
        for field in SOURCE_FIELDS[spec["source"]]:
            view[field] = spec.get(field)
        if spec["source"] == "public":
            view["repository"] = repository_key(spec["repository"])
        return view

    def find(
        self, resource: Resource, applied: Applied | None, session: CoolifySession
    ) -> JSON | None:
        known = recorded_id(applied)
        app = session.apps.get(known) if known else None
        if app is None:
            app = session.app_by_name(resource.spec["name"], resource.spec["environment"])
        if app is None:
            return None
        return {**app, "_envs": session.envs.get(str(app["uuid"]), [])}

    def ident(self, raw: JSON) -> str:
        return str(raw["uuid"])

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        source = "dockerimage" if raw.get("build_pack") == "dockerimage" else "public"
        keys = managed_keys(resource, applied)
        public = public_keys(resource, applied)
        view: JSON = {
            "name": raw.get("name"),
            "environment": raw.get("_environment"),
            "source": source,
            "ports": str(raw.get("ports_exposes") or ""),
            "domains": _domains(raw.get("fqdn")),
            "env": {
                str(e["key"]): _shown(str(e["key"]), e.get("value"), public)
                for e in sorted(raw.get("_envs", []), key=lambda e: str(e["key"]))
                if e.get("key") in keys and not e.get("is_preview")
            },
            # Coolify's status is "running:healthy", "starting", "exited:unhealthy"...:
            # only an exited app is not running (starting and restarting are on the way).
            "running": not str(raw.get("status") or "exited").startswith("exited"),
        }
        for field, wire in SOURCE_FIELDS[source].items():
            view[field] = raw.get(wire)
        if source == "public":
            view["repository"] = repository_key(str(raw.get("git_repository") or ""))
        return view

    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        observed = super().observe(resource, ctx)
        if observed.state == "absent":
            return observed
        session: CoolifySession = ctx.services["coolify"]
        # A key an earlier apply set is trueup's too: dropping it deletes it.
        keys = managed_keys(resource, applied_record(ctx, resource.id))
        claims = [
            str(e["uuid"])
            for e in session.envs.get(str(observed.detail["id"]), [])
            if e.get("key") in keys and not e.get("is_preview")
        ]
        return Observed(observed.state, observed.digest, {**observed.detail, "claims": claims})

    def read_back(
        self, resource: Resource, object_id: str | None, session: CoolifySession
    ) -> JSON | None:
        if not object_id:
            return None
        app = session.read.application(object_id)
        if app is None:
            return None
        envs = session.read.envs(object_id)
        session.envs[object_id] = envs
        return {**app, "_environment": resource.spec["environment"], "_envs": envs}

    # -- writes -------------------------------------------------------------------
    def _source_body(self, spec: Mapping[str, Any]) -> JSON:
        body: JSON = {
            wire: spec.get(field) for field, wire in SOURCE_FIELDS[spec["source"]].items()
        }
        return {k: v for k, v in body.items() if v is not None}

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: CoolifySession
    ) -> JSON:
        spec = resource.spec
        body: JSON = {
            "project_uuid": session.project_uuid,
            "server_uuid": session.server_uuid,
            "environment_name": spec["environment"],
            "name": spec["name"],
            "ports_exposes": str(spec.get("ports", "80")),
            "instant_deploy": False,
            **self._source_body(spec),
        }
        if spec.get("domains"):
            body["domains"] = ",".join(spec["domains"])
        uuid = session.write.create_application(spec["source"], body)
        session.adopt_app(uuid, spec["name"], spec["environment"])
        env = spec.get("env", {})
        if env:
            session.write.upsert_envs(
                uuid, [{"key": k, "value": v} for k, v in sorted(env.items())]
            )
        session.write.lifecycle(uuid, "start")
        return {
            "id": uuid,
            "project": session.project_uuid,
            "environment": spec["environment"],
            "server": session.server_uuid,
        }

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        decision = super().plan(resource, observed, applied, force)
        if resource is None or decision.payload.get("op") != "update":
            return decision
        fixed = _fixed_change(decision.payload.get("live") or {}, self.desired(resource))
        if fixed is None:
            return decision
        return Decision(
            ActionType.HUMAN_ACTION,
            f"{self.noun(resource)}: Coolify cannot change an application's {fixed} in place; "
            "remove it from the declaration, apply, then add it back",
        )

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: CoolifySession
    ) -> JSON:
        uuid = str(payload["id"])
        live: Mapping[str, Any] = payload.get("live") or {}
        want = self.desired(resource)
        fixed = _fixed_change(live, want)
        if fixed is not None:  # planned as a human action; a saved plan may predate that
            raise UsageError(
                f"{self.noun(resource)}: Coolify cannot change an application's {fixed} in "
                "place; remove it from the declaration, apply, then add it back"
            )
        patch: JSON = {}
        if live.get("ports") != want["ports"]:
            patch["ports_exposes"] = want["ports"]
        if live.get("domains") != want["domains"]:
            patch["domains"] = ",".join(resource.spec.get("domains", []))
        if any(live.get(f) != want[f] for f in SOURCE_FIELDS[want["source"]]):
            patch.update(self._source_body(resource.spec))
        if patch:
            session.write.update_application(uuid, patch)
        live_env: Mapping[str, Any] = live.get("env") or {}
        changed = [
            {"key": k, "value": v} for k, v in sorted(want["env"].items()) if live_env.get(k) != v
        ]
        if changed:
            session.write.upsert_envs(uuid, changed)
        for item in session.envs.get(uuid, []):
            if item.get("key") in live_env and item.get("key") not in want["env"]:
                session.write.delete_env(uuid, str(item["uuid"]))
        # A stopped app is started (a start that failed after its create, say).
        session.write.lifecycle(uuid, "restart" if live.get("running", True) else "start")
        return {"id": uuid}

    def delete(
        self, resource: Resource, payload: Mapping[str, Any], session: CoolifySession
    ) -> None:
        session.write.delete_application(str(payload["id"]))

    def flags(self, op: str, live: JSON | None, desired: JSON | None) -> tuple[bool, bool]:
        return (op == "delete", False)


def app_uuid(
    session: CoolifySession, ctx: ObserveContext, resource_id: str, name: str, environment: str
) -> str | None:
    """The uuid of an app: learned this run, recorded earlier, or found by name."""
    if resource_id in session.ids:
        return session.ids[resource_id]
    known = recorded_id(applied_record(ctx, resource_id))
    if known and known in session.apps:
        return known
    app = session.app_by_name(name, environment)
    return str(app["uuid"]) if app else None


def _fixed_change(live: Mapping[str, Any], want: Mapping[str, Any]) -> str | None:
    """The first field Coolify cannot change on an existing application, if it differs."""
    return next((f for f in ("environment", "source") if live.get(f) != want[f]), None)


def public_keys(resource: Resource, applied: Applied | None) -> set[str]:
    """Variables declared public (their values are not sealed): as declared now, else
    as declared when last applied (a dropped variable)."""
    declared: Mapping[str, Any] = resource.spec.get("env", {})
    before: Mapping[str, Any] = applied.resource.spec.get("env", {}) if applied else {}
    spelt = {**before, **declared}
    return {k for k, v in spelt.items() if not str(v).startswith(SEALED)}


def _shown(key: str, value: Any, public: set[str]) -> Any:
    """A live value as the declaration spells it: sealed unless declared public."""
    secret = key not in public or looks_secret(key)
    return seal(value) if secret and isinstance(value, str) else value
