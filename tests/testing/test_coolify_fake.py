"""The fake Coolify API over real HTTP: bare JSON, 404/409/422 bodies, quirks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from trueup.testing import FakeProviders


@pytest.fixture(scope="module")
def fakes() -> Iterator[FakeProviders]:
    with FakeProviders() as running:
        yield running


@pytest.fixture()
def api(fakes: FakeProviders) -> Iterator[httpx.Client]:
    fakes.reset()
    headers = {"Authorization": f"Bearer {fakes.tokens.coolify}"}
    with httpx.Client(base_url=fakes.coolify_url, headers=headers, timeout=5) as client:
        yield client


@pytest.fixture()
def project(api: httpx.Client) -> str:
    response = api.post("/projects", json={"name": "acme", "description": "Acme Inc."})
    assert response.status_code == 201
    uuid: str = response.json()["uuid"]
    return uuid


def image_app(fakes: FakeProviders, project: str, **extra: Any) -> dict[str, Any]:
    return {
        "project_uuid": project,
        "server_uuid": fakes.coolify.server_uuid,
        "environment_name": "production",
        "docker_registry_image_name": "ghcr.io/acme/portal",
        "docker_registry_image_tag": "1.2.3",
        "ports_exposes": "8080",
        "instant_deploy": False,
        **extra,
    }


def test_projects_are_plain_json_and_names_are_not_unique(api: httpx.Client, project: str) -> None:
    second = api.post("/projects", json={"name": "acme"})
    assert second.status_code == 201 and set(second.json()) == {"uuid"}
    listed = api.get("/projects").json()
    assert isinstance(listed, list)
    assert [p["name"] for p in listed] == ["acme", "acme"]
    detail = api.get(f"/projects/{project}").json()
    assert detail["uuid"] == project and detail["description"] == "Acme Inc."
    assert [e["name"] for e in detail["environments"]] == ["production"]
    patched = api.patch(f"/projects/{project}", json={"name": "acme-2"})
    assert patched.status_code == 201 and patched.json()["name"] == "acme-2"


def test_not_found_bodies(api: httpx.Client) -> None:
    missing_project = api.get("/projects/doesnotexist")
    assert missing_project.status_code == 404
    assert missing_project.json() == {"message": "Project not found."}
    missing_app = api.get("/applications/doesnotexist")
    assert missing_app.status_code == 404
    assert missing_app.json() == {"message": "Application not found."}


def test_unknown_and_missing_fields_are_422(
    api: httpx.Client, fakes: FakeProviders, project: str
) -> None:
    unknown = api.post("/projects", json={"name": "x", "colour": "blue"})
    assert unknown.status_code == 422
    assert unknown.json() == {
        "message": "Validation failed.",
        "errors": {"colour": ["This field is not allowed."]},
    }
    body = image_app(fakes, project)
    del body["docker_registry_image_name"]
    missing = api.post("/applications/dockerimage", json=body)
    assert missing.status_code == 422
    assert missing.json()["errors"] == {
        "docker_registry_image_name": ["The docker registry image name field is required."]
    }
    bad_ports = api.post(
        "/applications/dockerimage", json=image_app(fakes, project, ports_exposes="80:80")
    )
    assert bad_ports.status_code == 422 and "ports_exposes" in bad_ports.json()["errors"]
    not_json = api.post("/projects", content=b"name=x", headers={"Content-Type": "text/plain"})
    assert not_json.status_code == 400


def test_environments_conflict_and_lookup(api: httpx.Client, project: str) -> None:
    duplicate = api.post(f"/projects/{project}/environments", json={"name": "production"})
    assert duplicate.status_code == 409
    assert duplicate.json() == {"message": "Environment with this name already exists."}
    created = api.post(f"/projects/{project}/environments", json={"name": "staging"})
    assert created.status_code == 201
    env_uuid = created.json()["uuid"]
    by_name = api.get(f"/projects/{project}/staging").json()
    by_uuid = api.get(f"/projects/{project}/{env_uuid}").json()
    assert by_name["uuid"] == by_uuid["uuid"] == env_uuid
    assert by_name["applications"] == []
    names = [e["name"] for e in api.get(f"/projects/{project}/environments").json()]
    assert names == ["production", "staging"]
    assert api.get(f"/projects/{project}/nope").json() == {"message": "Environment not found."}


def test_docker_image_application_round_trip(
    api: httpx.Client, fakes: FakeProviders, project: str
) -> None:
    created = api.post(
        "/applications/dockerimage",
        json=image_app(fakes, project, name="portal", domains="https://portal.acme.test"),
    )
    assert created.status_code == 201 and set(created.json()) == {"uuid"}
    uuid = created.json()["uuid"]
    app = api.get(f"/applications/{uuid}").json()
    assert app["name"] == "portal" and app["fqdn"] == "https://portal.acme.test"
    assert app["docker_registry_image_tag"] == "1.2.3" and app["build_pack"] == "dockerimage"
    for hidden in ("project_uuid", "server_uuid", "environment_name", "environment_id", "id"):
        assert hidden not in app
    assert fakes.coolify.application(uuid)["_project_uuid"] == project
    patched = api.patch(f"/applications/{uuid}", json={"docker_registry_image_tag": "1.2.4"})
    assert patched.json() == {"uuid": uuid}
    assert api.get(f"/applications/{uuid}").json()["docker_registry_image_tag"] == "1.2.4"
    assert uuid in [a["uuid"] for a in api.get("/applications").json()]
    assert api.patch(f"/applications/{uuid}", json={"project_uuid": project}).status_code == 422


def test_domain_conflict_is_409_unless_forced(
    api: httpx.Client, fakes: FakeProviders, project: str
) -> None:
    api.post(
        "/applications/dockerimage", json=image_app(fakes, project, domains="https://a.acme.test")
    )
    clash = api.post(
        "/applications/dockerimage",
        json=image_app(fakes, project, domains="http://a.acme.test:8080"),
    )
    assert clash.status_code == 409
    assert clash.json()["message"].startswith("Domain conflicts detected.")
    assert clash.json()["conflicts"][0]["domain"] == "a.acme.test"
    forced = api.post(
        "/applications/dockerimage",
        json=image_app(fakes, project, domains="https://a.acme.test", force_domain_override=True),
    )
    assert forced.status_code == 201


def test_lifecycle_is_post_only_and_deploy_queues(
    api: httpx.Client, fakes: FakeProviders, project: str
) -> None:
    uuid = api.post("/applications/dockerimage", json=image_app(fakes, project)).json()["uuid"]
    wrong_method = api.get(f"/applications/{uuid}/start")
    assert wrong_method.status_code == 405
    assert "Supported methods: POST" in wrong_method.json()["message"]
    started = api.post(f"/applications/{uuid}/start").json()
    assert started["message"] == "Deployment request queued." and started["deployment_uuid"]
    assert api.get(f"/applications/{uuid}").json()["status"].startswith("running")
    assert api.post(f"/applications/{uuid}/stop").json() == {
        "message": "Application stopping request queued."
    }
    assert api.post(f"/applications/{uuid}/restart").json()["message"] == "Restart request queued."
    deploy = api.post("/deploy", params={"uuid": uuid}).json()
    assert deploy["deployments"][0]["resource_uuid"] == uuid
    assert [d["kind"] for d in fakes.coolify.deployments()] == ["start", "restart", "deploy"]
    assert api.post("/deploy", params={"uuid": "missing"}).status_code == 404


def test_env_vars_create_conflict_update_bulk_delete(
    api: httpx.Client, fakes: FakeProviders, project: str
) -> None:
    uuid = api.post("/applications/dockerimage", json=image_app(fakes, project)).json()["uuid"]
    created = api.post(f"/applications/{uuid}/envs", json={"key": "DATABASE_URL", "value": "a"})
    assert created.status_code == 201 and set(created.json()) == {"uuid"}
    again = api.post(f"/applications/{uuid}/envs", json={"key": "DATABASE_URL", "value": "b"})
    assert again.status_code == 409
    updated = api.patch(f"/applications/{uuid}/envs", json={"key": "DATABASE_URL", "value": "c"})
    assert updated.status_code == 201 and updated.json()["value"] == "c"
    bulk = api.patch(
        f"/applications/{uuid}/envs/bulk",
        json={"data": [{"key": "DATABASE_URL", "value": "d"}, {"key": "SECRET", "value": "s"}]},
    )
    assert bulk.status_code == 201 and [e["key"] for e in bulk.json()] == ["DATABASE_URL", "SECRET"]
    envs = {e["key"]: e for e in api.get(f"/applications/{uuid}/envs").json()}
    assert envs["DATABASE_URL"]["value"] == "d" and len(envs) == 2
    deleted = api.delete(f"/applications/{uuid}/envs/{envs['SECRET']['uuid']}")
    assert deleted.json() == {"message": "Environment variable deleted."}
    assert api.delete(f"/applications/{uuid}/envs/{envs['SECRET']['uuid']}").status_code == 404
    assert api.post(f"/applications/{uuid}/envs", json={"key": "X", "bogus": 1}).status_code == 422


def test_project_with_applications_cannot_be_deleted(
    api: httpx.Client, fakes: FakeProviders, project: str
) -> None:
    uuid = api.post("/applications/dockerimage", json=image_app(fakes, project)).json()["uuid"]
    blocked = api.delete(f"/projects/{project}")
    assert blocked.status_code == 400
    assert blocked.json() == {"message": "Project has resources, so it cannot be deleted."}
    assert api.delete(f"/applications/{uuid}").status_code == 200
    assert api.delete(f"/projects/{project}").json() == {"message": "Project deleted."}
    assert api.get(f"/projects/{project}").status_code == 404


def test_public_git_application(api: httpx.Client, fakes: FakeProviders, project: str) -> None:
    body = {
        "project_uuid": project,
        "server_uuid": fakes.coolify.server_uuid,
        "environment_name": "production",
        "git_repository": "https://github.com/acme/chat",
        "git_branch": "main",
        "build_pack": "nixpacks",
        "ports_exposes": "3000",
    }
    uuid = api.post("/applications/public", json=body).json()["uuid"]
    app = api.get(f"/applications/{uuid}").json()
    assert app["git_repository"] == "acme/chat" and app["build_pack"] == "nixpacks"
    no_env = api.post("/applications/public", json={**body, "environment_name": None})
    assert no_env.status_code == 422
    wrong_server = api.post("/applications/public", json={**body, "server_uuid": "nope"})
    assert wrong_server.json() == {"message": "Server not found."}


def test_servers_and_auth(api: httpx.Client, fakes: FakeProviders) -> None:
    servers = api.get("/servers").json()
    assert [s["uuid"] for s in servers] == [fakes.coolify.server_uuid]
    unauthenticated = httpx.get(
        f"{fakes.coolify_url}/projects", headers={"Authorization": "Bearer x"}
    )
    assert unauthenticated.status_code == 401
    assert unauthenticated.json() == {"message": "Unauthenticated."}


@pytest.mark.parametrize(
    "body",
    [
        {"data": [{"key": "D", "value": "4", "foo": 1}]},
        {"data": [{"key": "E", "value": "4"}], "foo": 1},
    ],
)
def test_bulk_env_vars_refuse_unknown_fields_like_every_other_write(
    api: httpx.Client, fakes: FakeProviders, project: str, body: dict[str, Any]
) -> None:
    uuid = api.post("/applications/dockerimage", json=image_app(fakes, project)).json()["uuid"]
    refused = api.patch(f"/applications/{uuid}/envs/bulk", json=body)
    assert refused.status_code == 422 and refused.json()["message"] == "Validation failed."
    assert api.get(f"/applications/{uuid}/envs").json() == []


@pytest.mark.parametrize("abilities", [("root",), ("read:sensitive",), ("read", "write")])
def test_env_values_are_shown_only_to_a_token_that_may_read_sensitive_data(
    api: httpx.Client, fakes: FakeProviders, project: str, abilities: tuple[str, ...]
) -> None:
    uuid = api.post("/applications/dockerimage", json=image_app(fakes, project)).json()["uuid"]
    api.post(f"/applications/{uuid}/envs", json={"key": "DATABASE_URL", "value": "a"})
    fakes.coolify.set_token_abilities(*abilities)
    [env] = api.get(f"/applications/{uuid}/envs").json()
    if "read:sensitive" in abilities or "root" in abilities:
        assert env["value"] == env["real_value"] == "a"
    else:
        assert env["key"] == "DATABASE_URL" and "value" not in env and "real_value" not in env
