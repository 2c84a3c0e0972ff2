"""Coolify API v4 (``/api/v1``) over httpx.

Quirks handled: no envelope and no pagination (lists return everything);
errors are ``{"message"}`` plus ``errors`` by field on a 422; nothing is
unique by name (two projects may share one), so a create whose fate is
unknown (a 5xx, a broken connection) is followed by a lookup by name before
it is ever sent again, and a create is never blindly replayed. Variables'
values are sensitive: Coolify leaves them out for a token without the root or
read:sensitive permission, which is refused (exit 5) rather than read as
"every value changed".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from trueup.errors import ExitCode, TrueupError
from trueup.providers.http import AmbiguousWrite, HttpClient, ProviderError, answer, json_object
from trueup.redact import unseal

JSON = dict[str, Any]
ATTEMPTS = 3


def parse_error(response: httpx.Response) -> tuple[str, list[int | str]]:
    body = json_object(response)
    if body is None:
        return response.reason_phrase or "error", []
    message = str(body.get("message") or body.get("error") or response.reason_phrase)
    errors = body.get("errors")
    if isinstance(errors, dict):
        details = "; ".join(
            f"{field}: {' '.join(map(str, msgs))}" for field, msgs in errors.items()
        )
        message = f"{message} {details}"
    return message, [response.status_code]


def create_once(create: Callable[[], JSON], find: Callable[[], JSON | None], what: str) -> JSON:
    """Create, but after an ambiguous failure look for the object before retrying."""
    for _ in range(ATTEMPTS):
        try:
            return create()
        except AmbiguousWrite:
            found = find()
            if found is not None:
                return found
    raise ProviderError(
        "coolify", "POST", what, None, f"could not create {what} after {ATTEMPTS} attempts"
    )


class HiddenValues(TrueupError):
    """Coolify answered an application's variables without their values.

    It shows a value only to a token with the ``root`` or ``read:sensitive``
    ability whose user is a team admin; without the values every variable
    would look changed and a signing key could not be read back.
    """

    exit_code = ExitCode.AUTH

    def __init__(self, uuid: str) -> None:
        super().__init__(
            f"coolify: GET /applications/{uuid}/envs: the answer hides the variables' values "
            "from this token, so trueup cannot compare them with the declaration",
            hint="give TRUEUP_COOLIFY_TOKEN a token with the root or read:sensitive permission "
            "(Coolify: Keys & Tokens > API tokens), created by a team admin",
        )


class CoolifyClient:
    def __init__(self, http: HttpClient) -> None:
        self.http = http

    def reader(self) -> CoolifyClient:
        return CoolifyClient(self.http.reader())

    def _json(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        return answer(self.http.request(method, path, json=body, **kw), "coolify")

    def _maybe(self, path: str) -> JSON | None:
        response = self.http.request("GET", path, missing_ok=True)
        if response.status_code == 404:
            return None
        found: JSON = answer(response, "coolify", dict)
        return found

    # -- servers and projects -------------------------------------------------------
    def servers(self) -> list[JSON]:
        found: list[JSON] = self._json("GET", "/servers")
        return found

    def projects(self) -> list[JSON]:
        found: list[JSON] = self._json("GET", "/projects")
        return found

    def project(self, uuid: str) -> JSON | None:
        return self._maybe(f"/projects/{uuid}")

    def create_project(self, name: str, description: str | None) -> str:
        body: JSON = {"name": name}
        if description:
            body["description"] = description

        def find() -> JSON | None:
            return next((p for p in self.projects() if p.get("name") == name), None)

        created = create_once(
            lambda: self._json("POST", "/projects", body, replay="unsent-only"), find, "project"
        )
        return str(created["uuid"])

    def update_project(self, uuid: str, name: str, description: str | None) -> None:
        self._json("PATCH", f"/projects/{uuid}", {"name": name, "description": description})

    # -- environments ---------------------------------------------------------------
    def environment(self, project: str, name: str) -> JSON | None:
        return self._maybe(f"/projects/{project}/{name}")

    def create_environment(self, project: str, name: str) -> str:
        """A duplicate name is a 409, so replaying is safe; 409 means "found"."""
        try:
            created = self._json("POST", f"/projects/{project}/environments", {"name": name})
            return str(created["uuid"])
        except ProviderError as exc:
            if exc.status != 409:
                raise
        found = self.environment(project, name)
        if found is None:
            raise ProviderError(
                "coolify", "POST", "environment", 409, f"environment {name} vanished"
            )
        return str(found["uuid"])

    def delete_environment(self, project: str, name: str) -> None:
        self.http.request("DELETE", f"/projects/{project}/environments/{name}", missing_ok=True)

    # -- applications ---------------------------------------------------------------
    def application(self, uuid: str) -> JSON | None:
        return self._maybe(f"/applications/{uuid}")

    def create_application(self, source: str, body: JSON) -> str:
        """``source`` is ``dockerimage`` or ``public``; found again by name on ambiguity."""

        def find() -> JSON | None:
            env = self.environment(body["project_uuid"], body["environment_name"])
            apps = (env or {}).get("applications") or []
            return next((a for a in apps if a.get("name") == body["name"]), None)

        created = create_once(
            lambda: self._json("POST", f"/applications/{source}", body, replay="unsent-only"),
            find,
            "application",
        )
        return str(created["uuid"])

    def update_application(self, uuid: str, body: JSON) -> None:
        self._json("PATCH", f"/applications/{uuid}", body)

    def delete_application(self, uuid: str) -> None:
        self.http.request("DELETE", f"/applications/{uuid}", missing_ok=True)

    def lifecycle(self, uuid: str, verb: str) -> None:
        """start, stop or restart (POST since Coolify 4.2); queued, so replaying is harmless."""
        self.http.request("POST", f"/applications/{uuid}/{verb}")

    # -- environment variables ------------------------------------------------------
    def envs(self, uuid: str) -> list[JSON]:
        """An application's variables, with their values (refused when Coolify hides them)."""
        found: list[JSON] = self._json("GET", f"/applications/{uuid}/envs")
        if any(isinstance(env, dict) and "value" not in env for env in found):
            raise HiddenValues(uuid)
        return found

    def upsert_envs(self, uuid: str, items: list[JSON]) -> None:
        """The bulk endpoint creates or updates by key: replaying it is safe.

        The one place a sealed secret (redact.seal) is opened: on the wire.
        """
        data = [{**item, "value": unseal(item.get("value"))} for item in items]
        self._json("PATCH", f"/applications/{uuid}/envs/bulk", {"data": data})

    def delete_env(self, uuid: str, env_uuid: str) -> None:
        self.http.request("DELETE", f"/applications/{uuid}/envs/{env_uuid}", missing_ok=True)
