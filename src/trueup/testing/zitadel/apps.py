"""ZITADEL OIDC applications and project grants (management API v1).

The OIDC ``clientSecret`` is only ever returned by the create call (and by
``_generate_client_secret``); reads never show it. App names are unique per
project and a project can be granted to an org only once. A PUT of the OIDC
config replaces the whole config (omitted fields fall back to their zero
values) and is ``Errors.NoChangesFound`` when nothing differs.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from trueup.testing._util import numeric_id
from trueup.testing.store import JSON
from trueup.testing.zitadel import proto
from trueup.testing.zitadel.projects import ProjectsMixin, search_queries

SECRET_METHODS = frozenset({"OIDC_AUTH_METHOD_TYPE_BASIC", "OIDC_AUTH_METHOD_TYPE_POST"})
OIDC_BOOLS = (
    "devMode",
    "accessTokenRoleAssertion",
    "idTokenRoleAssertion",
    "idTokenUserinfoAssertion",
    "skipNativeAppSuccessPage",
)


def _oidc_config(body: JSON) -> JSON:
    """The stored OIDC settings (enum names, lists, flags) from a request body."""
    config: JSON = {
        "redirectUris": proto.strings(body, "redirectUris"),
        "responseTypes": proto.enum_list(body, "responseTypes", "OIDCResponseType"),
        "grantTypes": proto.enum_list(body, "grantTypes", "OIDCGrantType"),
        "appType": proto.enum_field(body, "appType", "OIDCAppType"),
        "authMethodType": proto.enum_field(body, "authMethodType", "OIDCAuthMethodType"),
        "postLogoutRedirectUris": proto.strings(body, "postLogoutRedirectUris"),
        "version": proto.enum_field(body, "version", "OIDCVersion"),
        "accessTokenType": proto.enum_field(body, "accessTokenType", "OIDCTokenType"),
        "clockSkew": proto.field(body, "clockSkew") or "0s",
        "additionalOrigins": proto.strings(body, "additionalOrigins"),
        "backChannelLogoutUri": proto.field(body, "backChannelLogoutUri") or "",
    }
    for flag in OIDC_BOOLS:
        config[flag] = proto.boolean(body, flag)
    return config


def _origin(uri: str) -> str | None:
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


class AppsMixin(ProjectsMixin):
    """OIDC apps and project grants."""

    # -- OIDC apps -----------------------------------------------------------------------

    def _app_view(self, app: JSON) -> JSON:
        config = dict(app["oidc"])
        origins = [o for o in (_origin(u) for u in config["redirectUris"]) if o]
        config["allowedOrigins"] = sorted({*origins, *config["additionalOrigins"]})
        config["clientId"] = app["clientId"]
        return {
            "id": app["id"],
            "details": self._details(app),
            "state": "APP_STATE_ACTIVE",
            "name": app["name"],
            "oidcConfig": config,
        }

    def _app(self, data: JSON, project_id: str, app_id: str) -> JSON:
        app: JSON | None = data["apps"][project_id].get(app_id)
        if app is None:
            raise proto.not_found("Errors.Project.App.NotFound", "APP-ii34g")
        return app

    def _app_name_taken(self, data: JSON, project_id: str, name: str, exclude: str | None) -> bool:
        return any(
            a["name"] == name and a["id"] != exclude for a in data["apps"][project_id].values()
        )

    def add_oidc_app(self, org_id: str, project_id: str, body: JSON) -> JSON:
        name = proto.string(body, "name", "AddOIDCAppRequest", required=True)
        config = _oidc_config(body)
        with self._write() as data:
            self._project(data, org_id, project_id)
            if self._app_name_taken(data, project_id, name, None):
                raise proto.already_exists("Errors.Project.App.AlreadyExists", "COMMAND-3mf9s")
            app_id = numeric_id()
            app: JSON = {"id": app_id, "name": name, "clientId": numeric_id(), "oidc": config}
            self._stamp(data, app, owner=org_id)
            data["apps"][project_id][app_id] = app
            out: JSON = {
                "appId": app_id,
                "details": self._details(app),
                "clientId": app["clientId"],
            }
            if config["authMethodType"] in SECRET_METHODS:
                out["clientSecret"] = secrets.token_urlsafe(48)
            return out

    def get_app(self, org_id: str, project_id: str, app_id: str) -> JSON:
        with self._read() as data:
            self._project(data, org_id, project_id)
            return {"app": self._app_view(self._app(data, project_id, app_id))}

    def search_apps(self, org_id: str, project_id: str, body: JSON) -> JSON:
        offset, limit, asc = proto.list_query(body)
        with self._read() as data:
            self._project(data, org_id, project_id)
            apps = list(data["apps"][project_id].values())
            for query in search_queries(body):
                name_query = proto.field(query, "nameQuery")
                if name_query is not None:
                    apps = [a for a in apps if proto.text_match(a["name"], name_query, "name")]
            page = self._page(apps, offset, limit, asc)
            return {
                "details": self._list_details(data, len(apps)),
                "result": [self._app_view(a) for a in page],
            }

    def update_app(self, org_id: str, project_id: str, app_id: str, body: JSON) -> JSON:
        name = proto.string(body, "name", "UpdateAppRequest", required=True)
        with self._write() as data:
            self._project(data, org_id, project_id)
            app = self._app(data, project_id, app_id)
            if app["name"] == name:
                raise proto.no_changes("COMMAND-2m8vx")
            if self._app_name_taken(data, project_id, name, app_id):
                raise proto.already_exists("Errors.Project.App.AlreadyExists", "COMMAND-3mf9s")
            app["name"] = name
            self._stamp(data, app)
            return {"details": self._details(app, created=False)}

    def update_oidc_config(self, org_id: str, project_id: str, app_id: str, body: JSON) -> JSON:
        config = _oidc_config(body)
        with self._write() as data:
            self._project(data, org_id, project_id)
            app = self._app(data, project_id, app_id)
            if app["oidc"] == config:
                raise proto.no_changes("COMMAND-1m88i")
            app["oidc"] = config
            self._stamp(data, app)
            return {"details": self._details(app, created=False)}

    def regenerate_secret(self, org_id: str, project_id: str, app_id: str) -> JSON:
        with self._write() as data:
            self._project(data, org_id, project_id)
            app = self._app(data, project_id, app_id)
            if app["oidc"]["authMethodType"] not in SECRET_METHODS:
                raise proto.precondition(
                    "Errors.Project.App.OIDCAuthMethodNoSecret", "COMMAND-Ghrh3"
                )
            self._stamp(data, app)
            return {
                "clientSecret": secrets.token_urlsafe(48),
                "details": self._details(app, created=False),
            }

    def delete_app(self, org_id: str, project_id: str, app_id: str) -> JSON:
        with self._write() as data:
            self._project(data, org_id, project_id)
            app = self._app(data, project_id, app_id)
            del data["apps"][project_id][app_id]
            self._stamp(data, app)
            return {"details": self._details(app, created=False)}

    # -- project grants ------------------------------------------------------------------

    def _grant_view(self, data: JSON, project: JSON, grant: JSON) -> JSON:
        org = data["orgs"].get(grant["grantedOrgId"], {})
        return {
            "grantId": grant["id"],
            "details": self._details(grant),
            "grantedOrgId": grant["grantedOrgId"],
            "grantedOrgName": org.get("name", ""),
            "grantedRoleKeys": list(grant["roleKeys"]),
            "state": "PROJECT_GRANT_STATE_ACTIVE",
            "projectId": project["id"],
            "projectName": project["name"],
        }

    def _grant(self, data: JSON, project_id: str, grant_id: str) -> JSON:
        grant: JSON | None = data["grants"][project_id].get(grant_id)
        if grant is None:
            raise proto.not_found("Errors.Project.Grant.NotFound", "PROJECT-D8JxR")
        return grant

    def _check_role_keys(self, data: JSON, project_id: str, keys: list[str]) -> None:
        if any(k not in data["roles"][project_id] for k in keys):
            raise proto.precondition("Errors.Project.Role.NotFound", "COMMAND-6m9gd")

    def add_grant(self, org_id: str, project_id: str, body: JSON) -> JSON:
        granted = proto.string(body, "grantedOrgId", "AddProjectGrantRequest", required=True)
        keys = proto.strings(body, "roleKeys")
        with self._write() as data:
            project: JSON | None = data["projects"].get(project_id)
            if project is None or project["_meta"]["resourceOwner"] != org_id:
                raise proto.precondition("Errors.Project.NotFound", "COMMAND-m9gsd")
            if granted not in data["orgs"]:
                raise proto.precondition("Errors.Org.NotFound", "COMMAND-3m9gg")
            self._check_role_keys(data, project_id, keys)
            if any(g["grantedOrgId"] == granted for g in data["grants"][project_id].values()):
                raise proto.already_exists("Errors.Project.Grant.AlreadyExists", "COMMAND-3m9gs")
            grant: JSON = {"id": numeric_id(), "grantedOrgId": granted, "roleKeys": keys}
            self._stamp(data, grant, owner=org_id)
            data["grants"][project_id][grant["id"]] = grant
            return {"grantId": grant["id"], "details": self._details(grant)}

    def get_grant(self, org_id: str, project_id: str, grant_id: str) -> JSON:
        with self._read() as data:
            project = self._project(data, org_id, project_id)
            grant = self._grant(data, project_id, grant_id)
            return {"projectGrant": self._grant_view(data, project, grant)}

    def search_grants(self, org_id: str, project_id: str, body: JSON) -> JSON:
        offset, limit, asc = proto.list_query(body)
        with self._read() as data:
            project = self._project(data, org_id, project_id)
            grants = list(data["grants"][project_id].values())
            for query in search_queries(body):
                name_query = proto.field(query, "projectNameQuery")
                role_query = proto.field(query, "roleKeyQuery")
                if name_query is not None and not proto.text_match(
                    project["name"], name_query, "name"
                ):
                    grants = []
                if role_query is not None:
                    grants = [
                        g
                        for g in grants
                        if any(proto.text_match(k, role_query, "roleKey") for k in g["roleKeys"])
                    ]
            page = self._page(grants, offset, limit, asc)
            return {
                "details": self._list_details(data, len(grants)),
                "result": [self._grant_view(data, project, g) for g in page],
            }

    def update_grant(self, org_id: str, project_id: str, grant_id: str, body: JSON) -> JSON:
        keys = proto.strings(body, "roleKeys")
        with self._write() as data:
            self._project(data, org_id, project_id)
            grant = self._grant(data, project_id, grant_id)
            if sorted(grant["roleKeys"]) == sorted(keys):
                raise proto.no_changes("COMMAND-0o0pL")
            self._check_role_keys(data, project_id, keys)
            grant["roleKeys"] = keys
            self._stamp(data, grant)
            return {"details": self._details(grant, created=False)}

    def delete_grant(self, org_id: str, project_id: str, grant_id: str) -> JSON:
        with self._write() as data:
            self._project(data, org_id, project_id)
            grant = self._grant(data, project_id, grant_id)
            del data["grants"][project_id][grant_id]
            self._stamp(data, grant)
            return {"details": self._details(grant, created=False)}
