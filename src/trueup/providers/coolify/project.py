"""Coolify kinds for the org's project and its environments.

Neither is ever deleted by trueup: a project or environment may hold things
trueup does not manage, and Coolify refuses to delete one that is not empty.
Dropping one from the declaration only stops managing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trueup.kinds.base import ObserveContext
from trueup.model import Applied, Observed, Resource
from trueup.providers.coolify.session import CoolifySession
from trueup.providers.remote import RemoteKind

JSON = dict[str, Any]


class ProjectKind(RemoteKind):
    name = "coolify.project"
    provider = "coolify"
    removal = "forget"

    def noun(self, resource: Resource) -> str:
        return f"apps project {resource.spec['name']!r}"

    def desired(self, resource: Resource) -> JSON:
        view: JSON = {"name": resource.spec["name"]}
        if "description" in resource.spec:
            view["description"] = resource.spec["description"]
        return view

    def find(
        self, resource: Resource, applied: Applied | None, session: CoolifySession
    ) -> JSON | None:
        return session.project

    def ident(self, raw: JSON) -> str:
        return str(raw["uuid"])

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        view: JSON = {"name": raw.get("name")}
        if "description" in resource.spec:
            view["description"] = raw.get("description")
        return view

    def read_back(
        self, resource: Resource, object_id: str | None, session: CoolifySession
    ) -> JSON | None:
        return session.read.project(object_id) if object_id else None

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: CoolifySession
    ) -> JSON:
        uuid = session.write.create_project(resource.spec["name"], resource.spec.get("description"))
        session.adopt_project(uuid)
        return {"id": uuid}

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: CoolifySession
    ) -> JSON:
        session.write.update_project(
            payload["id"], resource.spec["name"], resource.spec.get("description")
        )
        return {"id": payload["id"]}

    def scope(self, ctx: ObserveContext) -> list[Observed]:
        session: CoolifySession | None = ctx.services.get("coolify")
        if session is None or session.project is None:
            return []
        items = [
            Observed(
                "present",
                None,
                {
                    "id": env_id(session.project_uuid, name),
                    "description": f"coolify.environment {name}",
                    "parent": None,
                },
            )
            for name in session.environments
        ]
        for uuid, app in session.apps.items():
            items.append(
                Observed(
                    "present",
                    None,
                    {
                        "id": uuid,
                        "description": (
                            f"coolify.application {app.get('name')} ({app.get('_environment')})"
                        ),
                        "parent": None,
                    },
                )
            )
            for item in session.envs.get(uuid, []):
                if item.get("is_preview"):
                    continue
                items.append(
                    Observed(
                        "present",
                        None,
                        {
                            "id": str(item["uuid"]),
                            "description": f"coolify.env {item.get('key')} of {app.get('name')}",
                            "parent": uuid,
                        },
                    )
                )
        return items


def env_id(project: str, name: str) -> str:
    """Coolify's own import id of an environment."""
    return f"{project}:{name}"


class EnvironmentKind(RemoteKind):
    name = "coolify.environment"
    provider = "coolify"
    removal = "forget"

    def noun(self, resource: Resource) -> str:
        return f"environment {resource.spec['name']}"

    def desired(self, resource: Resource) -> JSON:
        return {"name": resource.spec["name"]}

    def find(
        self, resource: Resource, applied: Applied | None, session: CoolifySession
    ) -> JSON | None:
        found = session.environments.get(resource.spec["name"])
        return {**found, "_project": session.project_uuid} if found else None

    def ident(self, raw: JSON) -> str:
        return env_id(str(raw["_project"]), str(raw["name"]))

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        return {"name": raw.get("name")}

    def read_back(
        self, resource: Resource, object_id: str | None, session: CoolifySession
    ) -> JSON | None:
        found = session.read.environment(session.project_uuid, resource.spec["name"])
        return {**found, "_project": session.project_uuid} if found else None

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: CoolifySession
    ) -> JSON:
        name = resource.spec["name"]
        uuid = session.write.create_environment(session.project_uuid, name)
        session.environments[name] = {"uuid": uuid, "name": name}
        return {"id": env_id(session.project_uuid, name), "uuid": uuid}
