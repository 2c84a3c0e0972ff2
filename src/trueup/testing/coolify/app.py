"""Starlette app for the fake Coolify API (under ``/api/v1``)."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from trueup.testing._util import FakeHTTPError, json_response, read_body_json
from trueup.testing.coolify.base import API_PREFIX
from trueup.testing.coolify.state import CoolifyState
from trueup.testing.coolify.validation import require_json_object
from trueup.testing.fakeapp import fake_app
from trueup.testing.faults import Faults
from trueup.testing.middleware import ProviderProfile
from trueup.testing.requestlog import RequestLog

DEFAULT_TOKEN = "trueup-fake-coolify-token"
VERSION = "4.0.0-beta.420"
LIFECYCLE = ("start", "stop", "restart")


def _fault_body(status: int) -> Any:
    return {"message": "Too Many Attempts."} if status == 429 else {"message": "Server Error"}


def _unauthorized(missing: bool) -> tuple[int, Any]:
    return 401, {"message": "Unauthenticated."}


PROFILE = ProviderProfile(
    name="coolify",
    default_limit=(200, 60.0),
    fault_body=_fault_body,
    unauthorized=_unauthorized,
)


async def _json_body(request: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    """Coolify's ``validateIncomingRequest`` (content type, syntax, non-empty)."""
    if "json" not in request.headers.get("content-type", ""):
        raise FakeHTTPError(
            400, {"message": "Invalid request.", "error": "Content-Type must be application/json."}
        )
    ok, body = await read_body_json(request)
    return require_json_object(ok, body, allow_empty=allow_empty)


def _routes(state: CoolifyState) -> list[BaseRoute]:
    async def version(request: Request) -> Response:
        return PlainTextResponse(VERSION)

    async def health(request: Request) -> Response:
        return PlainTextResponse("OK")

    async def servers(request: Request) -> Response:
        return json_response(state.list_servers())

    async def server(request: Request) -> Response:
        return json_response(state.get_server(request.path_params["uuid"]))

    async def projects(request: Request) -> Response:
        if request.method == "POST":
            return json_response(state.create_project(await _json_body(request)), 201)
        return json_response(state.list_projects())

    async def project(request: Request) -> Response:
        uuid = request.path_params["uuid"]
        if request.method == "PATCH":
            return json_response(state.update_project(uuid, await _json_body(request)), 201)
        if request.method == "DELETE":
            return json_response(state.delete_project(uuid))
        return json_response(state.get_project(uuid))

    async def environments(request: Request) -> Response:
        uuid = request.path_params["uuid"]
        if request.method == "POST":
            return json_response(state.create_environment(uuid, await _json_body(request)), 201)
        return json_response(state.list_environments(uuid))

    async def environment(request: Request) -> Response:
        uuid, env = request.path_params["uuid"], request.path_params["env"]
        if request.method == "DELETE":
            return json_response(state.delete_environment(uuid, env))
        return json_response(state.get_environment(uuid, env))

    async def applications(request: Request) -> Response:
        return json_response(state.list_applications())

    async def create_dockerimage(request: Request) -> Response:
        created = state.create_application("dockerimage", await _json_body(request))
        return json_response(created, 201)

    async def create_public(request: Request) -> Response:
        return json_response(state.create_application("public", await _json_body(request)), 201)

    async def application(request: Request) -> Response:
        uuid = request.path_params["uuid"]
        if request.method == "PATCH":
            return json_response(state.update_application(uuid, await _json_body(request)))
        if request.method == "DELETE":
            return json_response(state.delete_application(uuid))
        return json_response(state.get_application(uuid))

    async def action(request: Request) -> Response:
        verb = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        return json_response(state.action(request.path_params["uuid"], verb))

    async def deploy(request: Request) -> Response:
        uuids = [u for u in request.query_params.get("uuid", "").split(",") if u]
        if not uuids:
            raise FakeHTTPError(400, {"message": "You must provide uuid or tag."})
        force = request.query_params.get("force", "false").lower() in ("1", "true")
        return json_response(state.deploy(uuids, force))

    async def envs(request: Request) -> Response:
        uuid = request.path_params["uuid"]
        if request.method == "POST":
            return json_response(state.create_env(uuid, await _json_body(request)), 201)
        if request.method == "PATCH":
            return json_response(state.update_env(uuid, await _json_body(request)), 201)
        return json_response(state.list_envs(uuid, as_token=True))

    async def envs_bulk(request: Request) -> Response:
        body = await _json_body(request)
        return json_response(state.bulk_envs(request.path_params["uuid"], body), 201)

    async def env(request: Request) -> Response:
        return json_response(
            state.delete_env(request.path_params["uuid"], request.path_params["env"])
        )

    p = API_PREFIX
    app_path = f"{p}/applications/{{uuid}}"
    return [
        Route("/api/health", health, methods=["GET"]),
        Route(f"{p}/health", health, methods=["GET"]),
        Route(f"{p}/version", version, methods=["GET"]),
        Route(f"{p}/servers", servers, methods=["GET"]),
        Route(f"{p}/servers/{{uuid}}", server, methods=["GET"]),
        Route(f"{p}/projects", projects, methods=["GET", "POST"]),
        Route(f"{p}/projects/{{uuid}}", project, methods=["GET", "PATCH", "DELETE"]),
        Route(f"{p}/projects/{{uuid}}/environments", environments, methods=["GET", "POST"]),
        Route(f"{p}/projects/{{uuid}}/environments/{{env}}", environment, methods=["DELETE"]),
        Route(f"{p}/projects/{{uuid}}/{{env}}", environment, methods=["GET"]),
        Route(f"{p}/applications", applications, methods=["GET"]),
        Route(f"{p}/applications/dockerimage", create_dockerimage, methods=["POST"]),
        Route(f"{p}/applications/public", create_public, methods=["POST"]),
        Route(app_path, application, methods=["GET", "PATCH", "DELETE"]),
        *(Route(f"{app_path}/{verb}", action, methods=["POST"]) for verb in LIFECYCLE),
        Route(f"{app_path}/envs", envs, methods=["GET", "POST", "PATCH"]),
        Route(f"{app_path}/envs/bulk", envs_bulk, methods=["PATCH"]),
        Route(f"{app_path}/envs/{{env}}", env, methods=["DELETE"]),
        Route(f"{p}/deploy", deploy, methods=["GET", "POST"]),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    """Laravel's wording for unknown routes and wrong methods."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = (
            f"The {request.method} method is not supported for route "
            f"{request.url.path.lstrip('/')}. Supported methods: {allowed}."
        )
        return json_response({"message": message}, 405, {"Allow": allowed})
    if exc.status_code == 404:
        return json_response({"message": "Not found."}, 404)
    return json_response({"message": str(exc.detail)}, exc.status_code)


def create_app(
    state: CoolifyState | None = None,
    *,
    token: str = DEFAULT_TOKEN,
    faults: Faults | None = None,
    log: RequestLog | None = None,
) -> Starlette:
    """Build the fake; ``app.state.fake`` / ``.faults`` / ``.log`` hold the handles."""
    state = state if state is not None else CoolifyState()
    return fake_app(
        state,
        _routes(state),
        profile=PROFILE,
        http_error=_http_error,
        token=token,
        faults=faults,
        log=log,
        public_paths=frozenset({"/api/health", f"{API_PREFIX}/health"}),
    )
