"""Coolify fake state: team, servers, projects and environments.

Quirks kept on purpose: project names are not unique (look up by name
yourself); a new project gets a ``production`` environment, as in the real
product, so creating "production" again is a 409; deleting a project that
still has applications is a 400.
"""

from __future__ import annotations

import os
from typing import Any

from trueup.testing._util import FakeHTTPError, cuid, laravel_time
from trueup.testing.coolify.validation import validate
from trueup.testing.store import JSON, JsonStore

API_PREFIX = "/api/v1"


def not_found(what: str) -> FakeHTTPError:
    return FakeHTTPError(404, {"message": f"{what} not found."})


class CoolifyStore(JsonStore):
    """One team with one seeded server; projects and environments."""

    def __init__(
        self, state_file: str | os.PathLike[str] | None = None, *, server_name: str = "localhost"
    ) -> None:
        self._server_name = server_name
        super().__init__(state_file)

    def _initial(self) -> JSON:
        data: JSON = {
            "next_id": 1,
            # What the API token may do (Coolify's token abilities): root by default.
            "token_abilities": ["root"],
            "servers": {},
            "projects": {},
            "environments": {},
            "applications": {},
            "envs": {},
            "deployments": [],
        }
        self._new_server(data, self._server_name)
        return data

    def _next_id(self, data: JSON) -> int:
        value = int(data["next_id"])
        data["next_id"] = value + 1
        return value

    def _new_server(self, data: JSON, name: str, ip: str = "host.docker.internal") -> JSON:
        now = laravel_time()
        server = {
            "id": self._next_id(data),
            "uuid": cuid(),
            "name": name,
            "description": "This is the server where Coolify is running on. Don't delete this!",
            "ip": ip,
            "user": "root",
            "port": 22,
            "is_coolify_host": not data["servers"],
            "is_reachable": True,
            "is_usable": True,
            "proxy": {"type": "traefik", "status": "running"},
            "settings": {"is_build_server": False, "concurrent_builds": 2},
            "created_at": now,
            "updated_at": now,
        }
        data["servers"][server["uuid"]] = server
        return server

    # -- seeding helpers -----------------------------------------------------------------

    @property
    def server_uuid(self) -> str:
        """The uuid of the first (seeded) server."""
        with self._read() as data:
            return str(next(iter(data["servers"])))

    def add_server(self, name: str, ip: str = "10.0.0.2") -> str:
        with self._write() as data:
            return str(self._new_server(data, name, ip)["uuid"])

    def seed(self, payload: JSON) -> JSON:
        """``POST /_fake/seed``: ``{"servers": [{"name", "ip"}], "projects": [names]}``."""
        unknown = set(payload) - {"servers", "projects"}
        if unknown:
            raise ValueError(f"unknown seed field(s): {', '.join(sorted(unknown))}")
        servers = [
            self.add_server(s["name"], s.get("ip", "10.0.0.2")) for s in payload.get("servers", [])
        ]
        projects = [self.create_project({"name": n})["uuid"] for n in payload.get("projects", [])]
        return {"server_uuid": self.server_uuid, "servers": servers, "projects": projects}

    # -- servers -------------------------------------------------------------------------

    def list_servers(self) -> list[JSON]:
        with self._read() as data:
            return [public_fields(s) for s in data["servers"].values()]

    def get_server(self, uuid: str) -> JSON:
        with self._read() as data:
            server: JSON | None = data["servers"].get(uuid)
            if server is None:
                raise not_found("Server")
            return public_fields(server)

    # -- projects ------------------------------------------------------------------------

    def list_projects(self) -> list[JSON]:
        with self._read() as data:
            return [
                {k: p[k] for k in ("id", "uuid", "name", "description")}
                for p in data["projects"].values()
            ]

    def create_project(self, body: JSON) -> JSON:
        validate(
            body,
            {"name": "string|max:255|required", "description": "string|nullable"},
            allowed=("name", "description"),
        )
        with self._write() as data:
            now = laravel_time()
            project = {
                "id": self._next_id(data),
                "uuid": cuid(),
                "name": body["name"],
                "description": body.get("description"),
                "team_id": 0,
                "created_at": now,
                "updated_at": now,
            }
            data["projects"][project["uuid"]] = project
            self._new_environment(data, project, "production")
            return {"uuid": project["uuid"]}

    def get_project(self, uuid: str) -> JSON:
        with self._read() as data:
            project = self._project(data, uuid)
            out = public_fields(project)
            out["environments"] = [
                public_fields(e)
                for e in data["environments"].values()
                if e["project_id"] == project["id"]
            ]
            return out

    def update_project(self, uuid: str, body: JSON) -> JSON:
        validate(
            body,
            {"name": "string|max:255|nullable", "description": "string|nullable"},
            allowed=("name", "description"),
        )
        with self._write() as data:
            project = self._project(data, uuid)
            for key in ("name", "description"):
                if key in body:
                    project[key] = body[key]
            project["updated_at"] = laravel_time()
            return {k: project[k] for k in ("uuid", "name", "description")}

    def delete_project(self, uuid: str) -> JSON:
        with self._write() as data:
            project = self._project(data, uuid)
            if any(a["_project_uuid"] == uuid for a in data["applications"].values()):
                raise FakeHTTPError(
                    400, {"message": "Project has resources, so it cannot be deleted."}
                )
            for env_uuid in [
                u for u, e in data["environments"].items() if e["project_id"] == project["id"]
            ]:
                del data["environments"][env_uuid]
            del data["projects"][uuid]
            return {"message": "Project deleted."}

    def _project(self, data: JSON, uuid: str) -> JSON:
        project: JSON | None = data["projects"].get(uuid)
        if project is None:
            raise not_found("Project")
        return project

    # -- environments --------------------------------------------------------------------

    def _new_environment(self, data: JSON, project: JSON, name: str) -> JSON:
        now = laravel_time()
        environment = {
            "id": self._next_id(data),
            "uuid": cuid(),
            "name": name,
            "project_id": project["id"],
            "description": None,
            "created_at": now,
            "updated_at": now,
        }
        data["environments"][environment["uuid"]] = environment
        return environment

    def list_environments(self, project_uuid: str) -> list[JSON]:
        with self._read() as data:
            project = self._project(data, project_uuid)
            return [
                public_fields(e)
                for e in data["environments"].values()
                if e["project_id"] == project["id"]
            ]

    def create_environment(self, project_uuid: str, body: JSON) -> JSON:
        validate(body, {"name": "string|max:255|required"}, allowed=("name",))
        with self._write() as data:
            project = self._project(data, project_uuid)
            if self._find_environment(data, project, body["name"], by_uuid=False) is not None:
                raise FakeHTTPError(409, {"message": "Environment with this name already exists."})
            return {"uuid": self._new_environment(data, project, body["name"])["uuid"]}

    def get_environment(self, project_uuid: str, name_or_uuid: str) -> JSON:
        with self._read() as data:
            project = self._project(data, project_uuid)
            environment = self._find_environment(data, project, name_or_uuid)
            if environment is None:
                raise not_found("Environment")
            out = public_fields(environment)
            out["applications"] = [
                self._application_view(a)
                for a in data["applications"].values()
                if a["_environment_uuid"] == environment["uuid"]
            ]
            for kind in ("postgresqls", "redis", "mongodbs", "mysqls", "mariadbs", "services"):
                out[kind] = []
            return out

    def delete_environment(self, project_uuid: str, name_or_uuid: str) -> JSON:
        with self._write() as data:
            project = self._project(data, project_uuid)
            environment = self._find_environment(data, project, name_or_uuid)
            if environment is None:
                raise not_found("Environment")
            if any(
                a["_environment_uuid"] == environment["uuid"] for a in data["applications"].values()
            ):
                raise FakeHTTPError(
                    400, {"message": "Environment has resources, so it cannot be deleted."}
                )
            del data["environments"][environment["uuid"]]
            return {"message": "Environment deleted."}

    def _find_environment(
        self, data: JSON, project: JSON, name_or_uuid: str, *, by_uuid: bool = True
    ) -> JSON | None:
        """Coolify looks an environment up by name first, then by uuid."""
        mine: list[JSON] = [
            e for e in data["environments"].values() if e["project_id"] == project["id"]
        ]
        for environment in mine:
            if environment["name"] == name_or_uuid:
                return environment
        if by_uuid:
            for environment in mine:
                if environment["uuid"] == name_or_uuid:
                    return environment
        return None

    def _application_view(self, application: JSON) -> JSON:
        raise NotImplementedError

    def _app(self, data: JSON, uuid: str) -> JSON:
        record: JSON | None = data["applications"].get(uuid)
        if record is None:
            raise not_found("Application")
        return record


def laravel_bool(value: Any) -> bool:
    """Laravel's boolean rule accepts true/false, 1/0 and "1"/"0"."""
    return value in (True, 1, "1")


def public_fields(record: JSON) -> dict[str, Any]:
    """Drop the fake's private bookkeeping keys (leading underscore)."""
    return {k: v for k, v in record.items() if not k.startswith("_")}
