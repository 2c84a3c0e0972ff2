"""ZITADEL projects and their roles (management API v1).

Project names are unique per org and role keys per project (409
``Errors.*.AlreadyExists``); an update that changes nothing is a 400
``Errors.NoChangesFound``; updates replace every field (proto3 has no
"leave unchanged"), so a PUT without ``projectRoleAssertion`` turns it off.
"""

from __future__ import annotations

from typing import Any

from trueup.testing._util import numeric_id
from trueup.testing.store import JSON
from trueup.testing.zitadel import proto
from trueup.testing.zitadel.base import ZitadelStore

PROJECT_FLAGS = ("projectRoleAssertion", "projectRoleCheck", "hasProjectCheck")


def _project_fields(body: JSON, message: str) -> JSON:
    fields: JSON = {"name": proto.string(body, "name", message, required=True)}
    for flag in PROJECT_FLAGS:
        fields[flag] = proto.boolean(body, flag)
    fields["privateLabelingSetting"] = proto.enum_field(
        body, "privateLabelingSetting", "PrivateLabelingSetting"
    )
    return fields


class ProjectsMixin(ZitadelStore):
    """Projects and roles, always scoped to the caller's org."""

    # -- test helpers --------------------------------------------------------------------

    def project_id(self, org_id: str, name: str) -> str | None:
        with self._read() as data:
            for project in data["projects"].values():
                if project["_meta"]["resourceOwner"] == org_id and project["name"] == name:
                    return str(project["id"])
        return None

    # -- projects ------------------------------------------------------------------------

    def _project(self, data: JSON, org_id: str, project_id: str) -> JSON:
        project: JSON | None = data["projects"].get(project_id)
        if project is None or project["_meta"]["resourceOwner"] != org_id:
            raise proto.not_found("Errors.Project.NotFound", "PROJECT-Gd2hh")
        return project

    def _project_view(self, project: JSON) -> JSON:
        return {
            "id": project["id"],
            "details": self._details(project),
            "name": project["name"],
            "state": "PROJECT_STATE_ACTIVE",
            **{flag: project[flag] for flag in PROJECT_FLAGS},
            "privateLabelingSetting": project["privateLabelingSetting"],
        }

    def _name_taken(self, data: JSON, org_id: str, name: str, exclude: str | None) -> bool:
        return any(
            p["name"] == name and p["_meta"]["resourceOwner"] == org_id and p["id"] != exclude
            for p in data["projects"].values()
        )

    def create_project(self, org_id: str, body: JSON) -> JSON:
        fields = _project_fields(body, "AddProjectRequest")
        with self._write() as data:
            if self._name_taken(data, org_id, fields["name"], None):
                raise proto.already_exists("Errors.Project.AlreadyExists", "COMMAND-1n3fs")
            project: JSON = {"id": numeric_id(), **fields}
            self._stamp(data, project, owner=org_id)
            data["projects"][project["id"]] = project
            data["roles"][project["id"]] = {}
            data["apps"][project["id"]] = {}
            data["grants"][project["id"]] = {}
            return {"id": project["id"], "details": self._details(project)}

    def get_project(self, org_id: str, project_id: str) -> JSON:
        with self._read() as data:
            return {"project": self._project_view(self._project(data, org_id, project_id))}

    def update_project(self, org_id: str, project_id: str, body: JSON) -> JSON:
        fields = _project_fields(body, "UpdateProjectRequest")
        with self._write() as data:
            project = self._project(data, org_id, project_id)
            if all(project[k] == v for k, v in fields.items()):
                raise proto.no_changes("COMMAND-1m88i")
            if self._name_taken(data, org_id, fields["name"], project_id):
                raise proto.already_exists("Errors.Project.AlreadyExists", "COMMAND-3n8fs")
            project.update(fields)
            self._stamp(data, project)
            return {"details": self._details(project, created=False)}

    def delete_project(self, org_id: str, project_id: str) -> JSON:
        with self._write() as data:
            project = self._project(data, org_id, project_id)
            self._stamp(data, project)
            for table in ("projects", "roles", "apps", "grants"):
                data[table].pop(project_id, None)
            return {"details": self._details(project, created=False)}

    def search_projects(self, org_id: str, body: JSON) -> JSON:
        offset, limit, asc = proto.list_query(body)
        with self._read() as data:
            projects = [
                p for p in data["projects"].values() if p["_meta"]["resourceOwner"] == org_id
            ]
            for query in search_queries(body):
                name_query = proto.field(query, "nameQuery")
                owner_query = proto.field(query, "projectResourceOwnerQuery")
                if name_query is not None:
                    projects = [
                        p for p in projects if proto.text_match(p["name"], name_query, "name")
                    ]
                if owner_query is not None:
                    owner = proto.field(owner_query, "resourceOwner")
                    projects = [p for p in projects if p["_meta"]["resourceOwner"] == owner]
            page = self._page(projects, offset, limit, asc)
            return {
                "details": self._list_details(data, len(projects)),
                "result": [self._project_view(p) for p in page],
            }

    # -- roles ---------------------------------------------------------------------------

    def _role_view(self, role: JSON) -> JSON:
        return {
            "key": role["key"],
            "details": self._details(role),
            "displayName": role["displayName"],
            "group": role["group"],
        }

    def _add_role(self, data: JSON, org_id: str, project_id: str, body: JSON, message: str) -> JSON:
        key = proto.string(body, "roleKey", message, required=True)
        display = proto.string(body, "displayName", message, required=True)
        group = proto.string(body, "group", message, required=False)
        roles = data["roles"][project_id]
        if key in roles:
            raise proto.already_exists("Errors.Project.Role.AlreadyExists", "COMMAND-4m9vS")
        role: JSON = {"key": key, "displayName": display, "group": group}
        self._stamp(data, role, owner=org_id)
        roles[key] = role
        return role

    def add_role(self, org_id: str, project_id: str, body: JSON) -> JSON:
        with self._write() as data:
            self._project(data, org_id, project_id)
            role = self._add_role(data, org_id, project_id, body, "AddProjectRoleRequest")
            return {"details": self._details(role)}

    def bulk_add_roles(self, org_id: str, project_id: str, body: JSON) -> JSON:
        roles = proto.field(body, "roles") or []
        if not isinstance(roles, list) or not roles:
            raise proto.invalid_argument(
                "invalid BulkAddProjectRolesRequest.Roles: value must contain at least 1 item(s)"
            )
        with self._write() as data:
            self._project(data, org_id, project_id)
            keys = [proto.field(r, "key") for r in roles if isinstance(r, dict)]
            if len(set(keys)) != len(keys) or any(k in data["roles"][project_id] for k in keys):
                raise proto.already_exists("Errors.Project.Role.AlreadyExists", "COMMAND-4m9vS")
            added = [
                self._add_role(
                    data,
                    org_id,
                    project_id,
                    {**r, "roleKey": proto.field(r, "key")},
                    "BulkAddProjectRolesRequest_Role",
                )
                for r in roles
            ]
            return {"details": self._details(added[-1])}

    def search_roles(self, org_id: str, project_id: str, body: JSON) -> JSON:
        offset, limit, asc = proto.list_query(body)
        with self._read() as data:
            self._project(data, org_id, project_id)
            roles = list(data["roles"][project_id].values())
            for query in search_queries(body):
                key_query = proto.field(query, "keyQuery")
                name_query = proto.field(query, "displayNameQuery")
                if key_query is not None:
                    roles = [r for r in roles if proto.text_match(r["key"], key_query, "key")]
                if name_query is not None:
                    roles = [
                        r
                        for r in roles
                        if proto.text_match(r["displayName"], name_query, "displayName")
                    ]
            page = self._page(roles, offset, limit, asc)
            return {
                "details": self._list_details(data, len(roles)),
                "result": [self._role_view(r) for r in page],
            }

    def update_role(self, org_id: str, project_id: str, key: str, body: JSON) -> JSON:
        display = proto.string(body, "displayName", "UpdateProjectRoleRequest", required=True)
        group = proto.string(body, "group", "UpdateProjectRoleRequest", required=False)
        with self._write() as data:
            self._project(data, org_id, project_id)
            role = self._role(data, project_id, key)
            if role["displayName"] == display and role["group"] == group:
                raise proto.no_changes("COMMAND-5M0cs")
            role.update(displayName=display, group=group)
            self._stamp(data, role)
            return {"details": self._details(role, created=False)}

    def delete_role(self, org_id: str, project_id: str, key: str) -> JSON:
        """Removing a role also removes it from every grant of the project."""
        with self._write() as data:
            self._project(data, org_id, project_id)
            role = self._role(data, project_id, key)
            del data["roles"][project_id][key]
            for grant in data["grants"][project_id].values():
                if key in grant["roleKeys"]:
                    grant["roleKeys"].remove(key)
                    self._stamp(data, grant)
            self._stamp(data, role)
            return {"details": self._details(role, created=False)}

    def _role(self, data: JSON, project_id: str, key: str) -> JSON:
        role: JSON | None = data["roles"][project_id].get(key)
        if role is None:
            raise proto.not_found("Errors.Project.Role.NotFound", "COMMAND-2M0xs")
        return role


def search_queries(body: JSON) -> list[dict[str, Any]]:
    queries = proto.field(body, "queries") or []
    if not isinstance(queries, list) or not all(isinstance(q, dict) for q in queries):
        raise proto.invalid_argument("proto: invalid value for repeated field queries")
    return queries
