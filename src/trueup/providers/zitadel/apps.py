"""ZITADEL kinds for OIDC applications and project grants.

An OIDC app's client secret is shown once, by the create call: it goes
straight to the secret store, under a name that holds the app's id, and only
its reference is recorded (a crash in between leaves it found by that name).
When trueup holds no secret for an app (it crashed before storing it, or the
app existed before trueup), a new secret can be issued, which invalidates any
old one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from trueup.kinds.base import Decision, ObserveContext
from trueup.model import Action, ActionType, Applied, Observed, Resource
from trueup.providers.http import ProviderError, gone_is_none
from trueup.providers.remote import RemoteKind, applied_record, recorded_id
from trueup.providers.zitadel.session import ZitadelSession

JSON = dict[str, Any]
APP_TYPES = {
    "web": "OIDC_APP_TYPE_WEB",
    "spa": "OIDC_APP_TYPE_USER_AGENT",
    "native": "OIDC_APP_TYPE_NATIVE",
}
AUTH_METHODS = {
    "basic": "OIDC_AUTH_METHOD_TYPE_BASIC",
    "post": "OIDC_AUTH_METHOD_TYPE_POST",
    "none": "OIDC_AUTH_METHOD_TYPE_NONE",
    "private_key_jwt": "OIDC_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT",
}
WITH_SECRET = frozenset({"OIDC_AUTH_METHOD_TYPE_BASIC", "OIDC_AUTH_METHOD_TYPE_POST"})


def _split(object_id: str | None) -> tuple[str, str]:
    project, _, item = (object_id or "").partition(":")
    return project, item


def _read_in_project(
    read: Callable[[str, str, str], JSON | None], session: ZitadelSession, object_id: str | None
) -> JSON | None:
    """A fresh read of an app or a grant (``PROJECT:ITEM``), tagged with its project."""
    project, item = _split(object_id)
    if not item:
        return None
    found = gone_is_none(read, session.org_id, project, item)
    return {**found, "_project": project} if found else None


def _app_config(spec: Mapping[str, Any]) -> JSON:
    grants = ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE"]
    if spec.get("refresh_tokens"):
        grants.append("OIDC_GRANT_TYPE_REFRESH_TOKEN")
    return {
        "redirectUris": sorted(spec["redirect_uris"]),
        "postLogoutRedirectUris": sorted(spec.get("post_logout_redirect_uris", [])),
        "responseTypes": ["OIDC_RESPONSE_TYPE_CODE"],
        "grantTypes": sorted(grants),
        "appType": APP_TYPES[spec.get("type", "web")],
        "authMethodType": AUTH_METHODS[
            spec.get("auth_method", "basic" if spec.get("type", "web") == "web" else "none")
        ],
    }


class OidcAppKind(RemoteKind):
    name = "zitadel.oidc_app"
    provider = "zitadel"
    destroys_on_delete = True

    def noun(self, resource: Resource) -> str:
        return f"OIDC app {resource.spec['project']}/{resource.spec['name']}"

    def desired(self, resource: Resource) -> JSON:
        return {"name": resource.spec["name"], **_app_config(resource.spec)}

    def find(
        self, resource: Resource, applied: Applied | None, session: ZitadelSession
    ) -> JSON | None:
        project = session.project_ids.get(resource.spec["project"])
        if project is None:
            return None
        apps = session.apps.get(project, [])
        known = recorded_id(applied)
        for app in apps:
            if known and f"{project}:{app['id']}" == known:
                return {**app, "_project": project}
        for app in apps:
            if app.get("name") == resource.spec["name"]:
                return {**app, "_project": project}
        return None

    def ident(self, raw: JSON) -> str:
        return f"{raw['_project']}:{raw['id']}"

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        config = raw.get("oidcConfig") or {}
        return {
            "name": raw.get("name"),
            "redirectUris": sorted(config.get("redirectUris") or []),
            "postLogoutRedirectUris": sorted(config.get("postLogoutRedirectUris") or []),
            "responseTypes": sorted(config.get("responseTypes") or []),
            "grantTypes": sorted(config.get("grantTypes") or []),
            "appType": config.get("appType") or "OIDC_APP_TYPE_WEB",
            "authMethodType": config.get("authMethodType") or "OIDC_AUTH_METHOD_TYPE_BASIC",
        }

    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        observed = super().observe(resource, ctx)
        if observed.state == "absent":
            return observed
        session: ZitadelSession = ctx.services["zitadel"]
        applied = applied_record(ctx, resource.id)
        ref = applied.detail.get("secret_ref") if applied else None
        stored = session.secrets.has(ref) if isinstance(ref, str) else False
        detail = {**observed.detail, "secret_stored": stored}
        if not stored:
            # Stored by a create (or a rotation) that stopped before its reference
            # was recorded: found by this very app's name for it, and recorded then.
            _, app = _split(observed.detail.get("id"))
            found = session.secrets.find(self._secret_name(resource, session, app)) if app else None
            if found is not None:
                detail.update(secret_stored=True, unrecorded_secret=found)
        return Observed(observed.state, observed.digest, detail)

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        decision = super().plan(resource, observed, applied, force)
        if resource is not None and decision.type is ActionType.NO_OP and applied is not None:
            taken = self._secret_taken(observed)
            if taken is not None:
                return taken
        if (
            resource is None
            or decision.type is not ActionType.NO_OP
            or _app_config(resource.spec)["authMethodType"] not in WITH_SECRET
            or observed.detail.get("secret_stored")
        ):
            return decision
        noun = self.noun(resource)
        # Whether trueup never had the secret (a crash before it was stored) or
        # has lost it (another data directory, a deleted secret store), the app
        # may be using the live one: issuing a new one is a person's decision.
        if not force:
            lost = " (its secret store does not have it here)" if applied else ""
            return Decision(
                ActionType.HUMAN_ACTION,
                f"trueup holds no client secret for {noun}{lost}; to issue a new one (any old "
                f"one stops working), rerun with --overwrite {resource.id}",
                {"failed_fields": ["client_secret"]},
            )
        return Decision(
            ActionType.WRITE_CONFIG,
            f"issue a new client secret for {noun} (trueup holds none)",
            {"op": "rotate-secret", "id": observed.detail.get("id")},
            destroys=True,
        )

    def unrecorded(self, resource: Resource, observed: Observed) -> Decision | None:
        return self._secret_taken(observed) or super().unrecorded(resource, observed)

    def _secret_taken(self, observed: Observed) -> Decision | None:
        """Record a secret trueup stored but never recorded (see ``observe``)."""
        ref = observed.detail.get("unrecorded_secret")
        if not ref:
            return None
        return Decision(
            ActionType.VERIFY_ONLY,
            "up to date; the client secret trueup stored before it was stopped is recorded",
            {"op": "take", "id": observed.detail.get("id"), "secret_ref": ref},
        )

    def record(self, action: Action, resource: Resource) -> Mapping[str, Any] | None:
        detail = super().record(action, resource)
        ref = action.payload.get("secret_ref")
        return {**detail, "secret_ref": ref} if detail is not None and ref else detail

    def read_back(
        self, resource: Resource, object_id: str | None, session: ZitadelSession
    ) -> JSON | None:
        return _read_in_project(session.read.app, session, object_id)

    def _secret_name(self, resource: Resource, session: ZitadelSession, app_id: str) -> str:
        """Scoped by the ZITADEL organization and by the app's id: moving the issuer to
        a new one must not overwrite the secret the apps of the old one still use, and
        the name finds the secret of exactly this app when its reference was never
        recorded. (A record keeps its own ``secret_ref``, so secrets stored under an
        older name are still found.)"""
        spec = resource.spec
        return (
            f"{session.secret_prefix}/zitadel/{session.org_id}/{spec['project']}/"
            f"{spec['name']}/{app_id}/client-secret"
        )

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        project = session.project_id(resource.spec["project"])
        config = _app_config(resource.spec)
        created = session.write.create_oidc_app(
            session.org_id, project, {"name": resource.spec["name"], **config}
        )
        app_id = str(created["appId"])
        secret = created.get("clientSecret")
        learned: JSON = {"id": f"{project}:{app_id}", "client_id": created.get("clientId")}
        if config["authMethodType"] in WITH_SECRET:
            if not secret:  # found an existing app: its secret was never shown to us
                secret = session.write.new_client_secret(session.org_id, project, app_id)
            learned["secret_ref"] = session.secrets.put(
                self._secret_name(resource, session, app_id), str(secret)
            )
        return learned

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        project, app = _split(payload["id"])
        session.write.update_oidc_config(session.org_id, project, app, _app_config(resource.spec))
        return {"id": payload["id"]}

    def act(
        self, op: str, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        if op != "rotate-secret":
            return super().act(op, resource, payload, session)
        project, app = _split(payload["id"])
        secret = session.write.new_client_secret(session.org_id, project, app)
        ref = session.secrets.put(self._secret_name(resource, session, app), secret)
        return {"id": payload["id"], "secret_ref": ref}

    def delete(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> None:
        project, app = _split(payload["id"])
        session.write.delete_app(session.org_id, project, app)

    def deleted(self, detail: Mapping[str, Any], session: ZitadelSession) -> None:
        # The app's client secret goes with it, from the keyring or the 0600 file.
        if detail.get("secret_ref"):
            session.secrets.forget(str(detail["secret_ref"]))


class ProjectGrantKind(RemoteKind):
    name = "zitadel.project_grant"
    provider = "zitadel"

    def noun(self, resource: Resource) -> str:
        return f"grant of project {resource.spec['project']} to org {resource.spec['org']!r}"

    def desired(self, resource: Resource) -> JSON:
        return {"org": resource.spec["org"], "roles": sorted(resource.spec["roles"])}

    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        session: ZitadelSession = ctx.services["zitadel"]
        if session.granted_orgs.get(resource.spec["org"]) is None:
            return Observed("absent", None, {"granted_org_missing": True})
        return super().observe(resource, ctx)

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if resource is not None and observed.detail.get("granted_org_missing"):
            return Decision(
                ActionType.HUMAN_ACTION,
                f"ZITADEL has no organization {resource.spec['org']!r} to grant project "
                f"{resource.spec['project']} to: create it, or correct the name",
                {"failed_fields": ["org"]},
            )
        return super().plan(resource, observed, applied, force)

    def find(
        self, resource: Resource, applied: Applied | None, session: ZitadelSession
    ) -> JSON | None:
        project = session.project_ids.get(resource.spec["project"])
        granted = session.granted_orgs.get(resource.spec["org"])
        if project is None or granted is None:
            return None
        for grant in session.grants.get(project, []):
            if grant.get("grantedOrgId") == granted:
                return {**grant, "_project": project}
        return None

    def ident(self, raw: JSON) -> str:
        return f"{raw['_project']}:{raw['grantId']}"

    def view(self, raw: JSON, resource: Resource, applied: Applied | None) -> JSON:
        return {"org": raw.get("grantedOrgName"), "roles": sorted(raw.get("grantedRoleKeys") or [])}

    def read_back(
        self, resource: Resource, object_id: str | None, session: ZitadelSession
    ) -> JSON | None:
        return _read_in_project(session.read.grant, session, object_id)

    def create(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        project = session.project_id(resource.spec["project"])
        granted = session.granted_orgs.get(resource.spec["org"])
        if granted is None:
            raise ProviderError(
                "zitadel", "POST", "grants", None, f"no organization {resource.spec['org']!r}"
            )
        grant = session.write.add_grant(
            session.org_id, project, granted, sorted(resource.spec["roles"])
        )
        return {"id": f"{project}:{grant}"}

    def update(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> JSON:
        project, grant = _split(payload["id"])
        session.write.update_grant(session.org_id, project, grant, sorted(resource.spec["roles"]))
        return {"id": payload["id"]}

    def delete(
        self, resource: Resource, payload: Mapping[str, Any], session: ZitadelSession
    ) -> None:
        project, grant = _split(payload["id"])
        session.write.delete_grant(session.org_id, project, grant)
