"""ZITADEL kinds for the org (the identity issuer), its projects and roles.

The org is the issuer users sign in with. Declaring a different org name
moves the issuer: a new org is created and projects are rebuilt there, while
users and sessions stay in the old one, so that step destroys and migrates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trueup.kinds.base import Decision, ObserveContext
from trueup.model import Applied, Observed, Resource
from trueup.providers.http import gone_is_none
from trueup.providers.remote import RemoteKind, recorded_id
from trueup.providers.zitadel.session import ZitadelSession

JSON = dict[str, Any]
PROJECT_FLAGS = {"role_assertion": "projectRoleAssertion", "role_check": "projectRoleCheck"}


class OrgKind(RemoteKind):
    name = "zitadel.org"
    provider = "zitadel"
    removal = "forget"

    def noun(self, resource: Resource) -> str:
        return f"identity org {resource.spec['name']!r}"

    def desired(self, resource: Resource) -> JSON:
        return {"name": resource.spec["name"]}

    def find(
        self, resource: Resource, applied: Applied | None, session: ZitadelSession
    ) -> JSON | None:
        return session.org

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        return {"name": raw.get("name")}

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        decision = super().plan(resource, observed, applied, force)
        old = applied.resource.spec.get("name") if applied else None
        if (
            resource is None
            or decision.payload.get("op") != "create"
            or old in (None, resource.spec["name"])
        ):
            return decision
        return Decision(
            decision.type,
            f"move the identity issuer from org {old!r} to a new org {resource.spec['name']!r} "
            f"(users and sessions of {old!r} do not move)",
            {**decision.payload, "moved_from": old},
            destroys=True,
            migrates=True,
        )

    def read_back(
        self, resource: Resource, object_id: str | None, session: ZitadelSession
    ) -> JSON | None:
        return session.read.org(object_id) if object_id else None

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        org_id = session.write.create_org(resource.spec["name"])
        session.adopt_org(org_id)
        return {"id": org_id, "name": resource.spec["name"]}


def _project_body(spec: Mapping[str, Any]) -> JSON:
    body: JSON = {"name": spec["name"]}
    for field, wire in PROJECT_FLAGS.items():
        body[wire] = bool(spec.get(field, False))
    return body


class ProjectKind(RemoteKind):
    name = "zitadel.project"
    provider = "zitadel"
    destroys_on_delete = True

    def noun(self, resource: Resource) -> str:
        return f"identity project {resource.spec['name']}"

    def desired(self, resource: Resource) -> JSON:
        return _project_body(resource.spec)

    def find(
        self, resource: Resource, applied: Applied | None, session: ZitadelSession
    ) -> JSON | None:
        known = recorded_id(applied)
        if known and known in session.projects:
            return session.projects[known]
        found = session.project_ids.get(resource.spec["name"])
        return session.projects.get(found) if found else None

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        view: JSON = {"name": raw.get("name")}
        for wire in PROJECT_FLAGS.values():
            view[wire] = bool(raw.get(wire, False))
        return view

    def read_back(
        self, resource: Resource, object_id: str | None, session: ZitadelSession
    ) -> JSON | None:
        return session.read.project(session.org_id, object_id) if object_id else None

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        project = session.write.create_project(session.org_id, _project_body(resource.spec))
        session.adopt_project(resource.spec["name"], project)
        return {"id": project, "org": session.org_id}

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        session.write.update_project(session.org_id, payload["id"], _project_body(resource.spec))
        session.adopt_project(resource.spec["name"], payload["id"])
        return {"id": payload["id"], "org": session.org_id}

    def delete(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> None:
        session.write.delete_project(session.org_id, payload["id"])

    def scope(self, ctx: ObserveContext) -> list[Observed]:
        session: ZitadelSession | None = ctx.services.get("zitadel")
        if session is None:
            return []
        items = [
            _item(pid, f"{self.name} {p.get('name')}", None) for pid, p in session.projects.items()
        ]
        for pid, project in session.projects.items():
            label = project.get("name")
            items += [
                _item(f"{pid}:{r['key']}", f"zitadel.role {label}/{r['key']}", pid)
                for r in session.roles.get(pid, [])
            ]
            items += [
                _item(f"{pid}:{a['id']}", f"zitadel.oidc_app {label}/{a.get('name')}", pid)
                for a in session.apps.get(pid, [])
            ]
            items += [
                _item(
                    f"{pid}:{g['grantId']}",
                    f"zitadel.project_grant {label} -> {g.get('grantedOrgName')}",
                    pid,
                    # Deleting one of these roles takes it out of the grant too.
                    [f"{pid}:{key}" for key in g.get("grantedRoleKeys", [])],
                )
                for g in session.grants.get(pid, [])
            ]
        return items


def _item(
    ident: str, description: str, parent: str | None, uses: list[str] | None = None
) -> Observed:
    detail: dict[str, Any] = {"id": ident, "description": description, "parent": parent}
    if uses:
        detail["uses"] = uses
    return Observed("present", None, detail)


class RoleKind(RemoteKind):
    name = "zitadel.role"
    provider = "zitadel"

    def noun(self, resource: Resource) -> str:
        return f"role {resource.spec['project']}/{resource.spec['key']}"

    def desired(self, resource: Resource) -> JSON:
        spec = resource.spec
        return {
            "key": spec["key"],
            "displayName": spec.get("display_name") or spec["key"],
            "group": spec.get("group") or "",
        }

    def find(
        self, resource: Resource, applied: Applied | None, session: ZitadelSession
    ) -> JSON | None:
        project = session.project_ids.get(resource.spec["project"])
        if project is None:
            return None
        for role in session.roles.get(project, []):
            if role.get("key") == resource.spec["key"]:
                return {**role, "_project": project}
        return None

    def ident(self, raw: JSON) -> str:
        return f"{raw['_project']}:{raw['key']}"

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        return {
            "key": raw.get("key"),
            "displayName": raw.get("displayName") or "",
            "group": raw.get("group") or "",
        }

    def read_back(
        self, resource: Resource, object_id: str | None, session: ZitadelSession
    ) -> JSON | None:
        if not object_id:
            return None
        project, _, key = object_id.partition(":")
        roles = gone_is_none(session.read.roles, session.org_id, project)
        for role in roles or []:
            if role.get("key") == key:
                return {**role, "_project": project}
        return None

    def _body(self, resource: Resource) -> JSON:
        want = self.desired(resource)
        return {"roleKey": want["key"], "displayName": want["displayName"], "group": want["group"]}

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        project = session.project_id(resource.spec["project"])
        session.write.add_role(session.org_id, project, self._body(resource))
        return {"id": f"{project}:{resource.spec['key']}", "project": project}

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        project = session.project_id(resource.spec["project"])
        session.write.update_role(
            session.org_id, project, resource.spec["key"], self._body(resource)
        )
        return {"id": f"{project}:{resource.spec['key']}", "project": project}

    def delete(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> None:
        project, _, key = str(payload["id"]).partition(":")
        session.write.delete_role(session.org_id, project, key)
