"""One run's view of one Coolify project, read in as few rounds as it can.

The project is found by the uuid recorded at the last apply, else by name
(Coolify does not keep names unique, so the oldest match wins). When it is
known, the environments and the applications' variables recorded last time
are read in the same first round; anything new (an environment or an app
made outside trueup) is read in a second. The servers are read only at
apply, when an application is created.

``GET /applications/{uuid}`` does not say which environment an application
lives in, so the snapshot remembers it from the environment it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from trueup.providers.coolify.client import CoolifyClient
from trueup.providers.http import fan_out, gone_is_none
from trueup.providers.remote import Session
from trueup.redact import register_secret

JSON = dict[str, Any]


@dataclass(frozen=True)
class Known:
    """What the last apply recorded of the project: read first, all at once."""

    project: str | None = None
    environments: tuple[str, ...] = ()
    apps: tuple[str, ...] = ()


class CoolifySession(Session):
    provider = "coolify"
    read: CoolifyClient

    def __init__(
        self,
        read: CoolifyClient,
        write: CoolifyClient | None,
        project_name: str,
        server_name: str | None,
        secret_keys: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(read, write)
        self.project_name = project_name
        self.server_name = server_name
        self.secret_keys = secret_keys
        self.project: JSON | None = None
        self.servers: list[JSON] = []
        self.environments: dict[str, JSON] = {}
        self.apps: dict[str, JSON] = {}
        self.envs: dict[str, list[JSON]] = {}
        #: Signing keys written this run (resource id -> digest), for verification.
        self.key_digests: dict[str, str] = {}

    @property
    def project_uuid(self) -> str:
        if self.project is None:
            raise RuntimeError(f"coolify: project {self.project_name!r} does not exist yet")
        return str(self.project["uuid"])

    @property
    def server_uuid(self) -> str:
        """Where new applications go; read at apply, on first use (a plan never needs it)."""
        if not self.servers:
            self.servers = self.write.servers()
        for server in self.servers:
            if self.server_name is None or server.get("name") == self.server_name:
                return str(server["uuid"])
        raise RuntimeError(f"coolify: no server named {self.server_name!r}")

    def app_by_name(self, name: str, environment: str) -> JSON | None:
        for app in sorted(self.apps.values(), key=lambda a: str(a.get("created_at", ""))):
            if app.get("name") == name and app.get("_environment") == environment:
                return app
        return None

    def scope_id(self) -> str | None:
        return str(self.project["uuid"]) if self.project else None

    def load(self, known: Known) -> None:
        """Read the project, its environments and every application's variables.

        What the last apply recorded is read in the first round, together
        with the project; only what turns out to be new needs a second one.
        """

        def find_project() -> JSON | None:
            if known.project:
                found = self.read.project(known.project)
                if found is not None:
                    return found
            named = sorted(
                (p for p in self.read.projects() if p.get("name") == self.project_name),
                key=lambda p: int(p.get("id") or 0),
            )
            return self.read.project(str(named[0]["uuid"])) if named else None

        jobs: dict[tuple[str, str], Callable[[], Any]] = {("project", ""): find_project}
        if known.project:
            for name in known.environments:
                jobs[("env", name)] = partial(self.read.environment, known.project, name)
            for uuid in known.apps:
                jobs[("envs", uuid)] = partial(self._envs_of, uuid)
        early = dict(zip(jobs, fan_out(lambda job: job(), list(jobs.values())), strict=True))
        project = early.pop(("project", ""))
        self.project = project
        if project is None:
            return
        if project["uuid"] != known.project:
            early = {}  # found by name instead: nothing read early belongs to it
        names = [str(e["name"]) for e in project.get("environments") or []]
        late = [n for n in names if ("env", n) not in early]
        for name, environment in zip(late, fan_out(self._environment, late), strict=True):
            early[("env", name)] = environment
        for name in names:
            environment = early.get(("env", name))
            if environment is None:
                continue
            self.environments[name] = environment
            for app in environment.get("applications") or []:
                self.apps[str(app["uuid"])] = {**app, "_environment": name}
        late = [u for u in self.apps if early.get(("envs", u)) is None]
        for uuid, envs in zip(late, fan_out(self._envs_of, late), strict=True):
            early[("envs", uuid)] = envs
        for uuid in self.apps:
            envs = early.get(("envs", uuid)) or []
            self.envs[uuid] = envs
            for item in envs:
                if item.get("key") in self.secret_keys:
                    register_secret(str(item.get("value") or ""))

    def _environment(self, name: str) -> JSON | None:
        return self.read.environment(self.project_uuid, name)

    def _envs_of(self, uuid: str) -> list[JSON] | None:
        return gone_is_none(self.read.envs, uuid)

    def adopt_project(self, uuid: str) -> None:
        self.project = {"uuid": uuid, "name": self.project_name, "environments": []}

    def adopt_app(self, uuid: str, name: str, environment: str) -> None:
        self.apps[uuid] = {"uuid": uuid, "name": name, "_environment": environment}
        self.envs.setdefault(uuid, [])
