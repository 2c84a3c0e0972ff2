"""One run's view of one ZITADEL organization, read in three concurrent rounds.

Round one finds the org (through the id recorded at the last apply when the
declared name is unchanged, else by name) and the orgs projects are granted
to; round two lists the org's projects; round three reads every project's
roles, apps and grants at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from trueup.providers.http import fan_out, gone_is_none
from trueup.providers.remote import Session
from trueup.providers.secretstore import SecretStore
from trueup.providers.zitadel.client import ZitadelClient

JSON = dict[str, Any]
TABLES = ("roles", "apps", "grants")


@dataclass(frozen=True)
class Known:
    """What the last apply recorded: the org (id, name) and its projects' ids."""

    org: tuple[str, str] | None = None
    projects: tuple[str, ...] = ()


class ZitadelSession(Session):
    provider = "zitadel"
    read: ZitadelClient

    def __init__(
        self,
        read: ZitadelClient,
        write: ZitadelClient | None,
        org_name: str,
        secrets: SecretStore,
        secret_prefix: str,
    ) -> None:
        super().__init__(read, write)
        self.org_name = org_name
        self.secrets = secrets
        self.secret_prefix = secret_prefix
        self.org: JSON | None = None
        self.projects: dict[str, JSON] = {}
        self.roles: dict[str, list[JSON]] = {}
        self.apps: dict[str, list[JSON]] = {}
        self.grants: dict[str, list[JSON]] = {}
        self.granted_orgs: dict[str, str | None] = {}
        self.project_ids: dict[str, str] = {}
        self.detailed: set[str] = set()

    @property
    def org_id(self) -> str:
        if self.org is None:
            raise RuntimeError(f"zitadel: the organization {self.org_name!r} does not exist yet")
        return str(self.org["id"])

    def project_id(self, name: str) -> str:
        found = self.project_ids.get(name)
        if found is None:
            raise RuntimeError(f"zitadel: project {name!r} does not exist yet")
        return found

    def scope_id(self) -> str | None:
        return str(self.org["id"]) if self.org else None

    def load(self, known: Known, granted: list[str], wanted: frozenset[str]) -> None:
        """Find the org, list its projects, read the wanted projects' details.

        Roles, apps and grants are read for the projects in ``wanted`` (declared
        or applied) only: an unmanaged project is reported as a whole. When the
        last apply recorded the org (under the same name) and its projects,
        all of that is asked for in one round, beside the org check; anything
        new takes a second round.
        """
        jobs: dict[tuple[str, str], Callable[[], Any]] = {
            ("org", ""): self._find_org_by_id(known),
            **{("granted", name): partial(self._org_id_named, name) for name in granted},
        }
        if known.org is not None and known.org[1] == self.org_name:
            org_id = known.org[0]
            jobs[("projects", "")] = partial(gone_is_none, self.read.projects, org_id)
            for pid in known.projects:
                for table in TABLES:
                    reader = getattr(self.read, table)
                    jobs[(table, pid)] = partial(gone_is_none, reader, org_id, pid)
        early = dict(zip(jobs, fan_out(lambda job: job(), list(jobs.values())), strict=True))
        self.granted_orgs = {name: early[("granted", name)] for name in granted}
        self.org = early.pop(("org", "")) or self.read.org_by_name(self.org_name)
        if self.org is None:
            return
        org = self.org_id
        if known.org is None or org != known.org[0]:
            early = {}  # found by name instead: nothing read early belongs to it
        projects = early.get(("projects", ""))
        for project in projects if projects is not None else self.read.projects(org):
            self.projects[str(project["id"])] = project
        self.project_ids = {str(p["name"]): pid for pid, p in sorted(self.projects.items())}
        tables = {"roles": self.roles, "apps": self.apps, "grants": self.grants}
        late = [
            (table, pid)
            for pid, project in self.projects.items()
            if project.get("name") in wanted
            for table in TABLES
            if early.get((table, pid)) is None
        ]
        lists = fan_out(lambda job: getattr(self.read, job[0])(org, job[1]), late)
        early.update(zip(late, lists, strict=True))
        for pid, project in self.projects.items():
            if project.get("name") not in wanted:
                continue
            for table in TABLES:
                tables[table][pid] = early.get((table, pid)) or []
            self.detailed.add(pid)

    def _find_org_by_id(self, known: Known) -> Callable[[], JSON | None]:
        def find() -> JSON | None:
            if known.org is None or known.org[1] != self.org_name:
                return None
            found = self.read.org(known.org[0])
            return found if found is not None and found.get("name") is not None else None

        return find

    def _org_id_named(self, name: str) -> str | None:
        org = self.read.org_by_name(name)
        return str(org["id"]) if org else None

    def adopt_org(self, org_id: str) -> None:
        self.org = {"id": org_id, "name": self.org_name}

    def adopt_project(self, name: str, project_id: str) -> None:
        self.project_ids[name] = project_id
        self.projects.setdefault(project_id, {"id": project_id, "name": name})
        for table in (self.roles, self.apps, self.grants):
            table.setdefault(project_id, [])
        self.detailed.add(project_id)
