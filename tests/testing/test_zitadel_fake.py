"""The fake ZITADEL over real HTTP: protojson shapes, uniqueness, NoChangesFound, org scoping."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from trueup.testing import FakeProviders

M = "/management/v1"


@pytest.fixture(scope="module")
def fakes() -> Iterator[FakeProviders]:
    with FakeProviders() as running:
        yield running


@pytest.fixture()
def zt(fakes: FakeProviders) -> Iterator[httpx.Client]:
    fakes.reset()
    headers = {"Authorization": f"Bearer {fakes.tokens.zitadel}"}
    with httpx.Client(base_url=fakes.zitadel_url, headers=headers, timeout=5) as client:
        yield client


@pytest.fixture()
def org(zt: httpx.Client) -> dict[str, str]:
    """A fresh org, as the header that scopes management calls to it."""
    created = zt.post(f"{M}/orgs", json={"name": "Acme"})
    assert created.status_code == 200
    return {"x-zitadel-orgid": created.json()["id"]}


@pytest.fixture()
def project(zt: httpx.Client, org: dict[str, str]) -> str:
    project_id: str = zt.post(f"{M}/projects", json={"name": "portal"}, headers=org).json()["id"]
    return project_id


def test_create_returns_id_and_string_details(zt: httpx.Client, org: dict[str, str]) -> None:
    body = zt.post(f"{M}/projects", json={"name": "portal"}, headers=org).json()
    assert body["id"].isdigit()
    details = body["details"]
    assert set(details) == {"sequence", "creationDate", "changeDate", "resourceOwner"}
    assert isinstance(details["sequence"], str) and details["sequence"].isdigit()
    assert details["resourceOwner"] == org["x-zitadel-orgid"]


def test_get_omits_false_and_zero_fields(
    zt: httpx.Client, org: dict[str, str], project: str
) -> None:
    got = zt.get(f"{M}/projects/{project}", headers=org).json()["project"]
    assert got["name"] == "portal" and got["state"] == "PROJECT_STATE_ACTIVE"
    for omitted in (
        "projectRoleAssertion",
        "projectRoleCheck",
        "hasProjectCheck",
        "privateLabelingSetting",
    ):
        assert omitted not in got
    zt.put(
        f"{M}/projects/{project}",
        json={"name": "portal", "projectRoleAssertion": True},
        headers=org,
    )
    assert (
        zt.get(f"{M}/projects/{project}", headers=org).json()["project"]["projectRoleAssertion"]
        is True
    )


def test_duplicate_project_name_is_409_already_exists(
    zt: httpx.Client, org: dict[str, str], project: str
) -> None:
    again = zt.post(f"{M}/projects", json={"name": "portal"}, headers=org)
    assert again.status_code == 409
    body = again.json()
    assert body["code"] == 6
    # Translated, as a real server answers: the key never reaches a client.
    assert body["message"] == "Project already exists on Organisation (COMMAND-1n3fs)"
    assert body["details"][0]["id"] == "COMMAND-1n3fs"
    assert isinstance(body["details"], list)
    # the same name in another org is fine
    assert zt.post(f"{M}/projects", json={"name": "portal"}).status_code == 200


def test_update_without_change_is_no_changes_found(
    zt: httpx.Client, org: dict[str, str], project: str
) -> None:
    same = zt.put(f"{M}/projects/{project}", json={"name": "portal"}, headers=org)
    assert same.status_code == 400
    assert same.json()["code"] == 9
    assert same.json()["message"] == "No changes (COMMAND-1m88i)"
    renamed = zt.put(f"{M}/projects/{project}", json={"name": "portal-2"}, headers=org)
    assert renamed.status_code == 200 and "creationDate" not in renamed.json()["details"]


def test_search_uses_string_totals_and_omits_empty_results(
    zt: httpx.Client, org: dict[str, str], project: str
) -> None:
    zt.post(f"{M}/projects", json={"name": "chat"}, headers=org)
    everything = zt.post(f"{M}/projects/_search", json={}, headers=org).json()
    assert everything["details"]["totalResult"] == "2"
    query = {"nameQuery": {"name": "portal", "method": "TEXT_QUERY_METHOD_EQUALS"}}
    found = zt.post(f"{M}/projects/_search", json={"queries": [query]}, headers=org).json()
    assert [p["id"] for p in found["result"]] == [project]
    assert found["details"]["totalResult"] == "1"
    query = {"nameQuery": {"name": "POR", "method": "TEXT_QUERY_METHOD_STARTS_WITH_IGNORE_CASE"}}
    assert (
        len(
            zt.post(f"{M}/projects/_search", json={"queries": [query]}, headers=org).json()[
                "result"
            ]
        )
        == 1
    )
    none = zt.post(
        f"{M}/projects/_search", json={"queries": [{"nameQuery": {"name": "nope"}}]}, headers=org
    ).json()
    assert "result" not in none and "totalResult" not in none["details"]
    paged = zt.post(
        f"{M}/projects/_search", json={"query": {"offset": "1", "limit": 1}}, headers=org
    )
    assert len(paged.json()["result"]) == 1 and paged.json()["details"]["totalResult"] == "2"
    too_many = zt.post(f"{M}/projects/_search", json={"query": {"limit": "1001"}}, headers=org)
    assert too_many.status_code == 400


def test_org_header_scopes_every_call(
    zt: httpx.Client, fakes: FakeProviders, org: dict[str, str], project: str
) -> None:
    outside = zt.get(f"{M}/projects/{project}")
    assert outside.status_code == 404
    assert outside.json()["code"] == 5 and outside.json()["message"].startswith(
        "Project not found ("
    )
    me = zt.get(f"{M}/orgs/me").json()["org"]
    assert me["id"] == fakes.zitadel.default_org_id and me["state"] == "ORG_STATE_ACTIVE"
    assert zt.get(f"{M}/orgs/me", headers=org).json()["org"]["name"] == "Acme"
    assert zt.get(f"{M}/orgs/me", headers={"x-zitadel-orgid": "1"}).status_code == 404
    assert zt.post(f"{M}/orgs", json={"name": "acme"}).status_code == 409


def test_roles_lifecycle(zt: httpx.Client, org: dict[str, str], project: str) -> None:
    base = f"{M}/projects/{project}/roles"
    assert (
        zt.post(base, json={"roleKey": "admin", "displayName": "Admin"}, headers=org).status_code
        == 200
    )
    assert (
        zt.post(base, json={"roleKey": "admin", "displayName": "Admin"}, headers=org).status_code
        == 409
    )
    roles = zt.post(f"{base}/_search", json={}, headers=org).json()["result"]
    assert roles[0]["key"] == "admin" and "group" not in roles[0]
    assert zt.put(f"{base}/admin", json={"displayName": "Admin"}, headers=org).json()["code"] == 9
    assert (
        zt.put(
            f"{base}/admin", json={"displayName": "Admins", "group": "ops"}, headers=org
        ).status_code
        == 200
    )
    assert zt.delete(f"{base}/admin", headers=org).status_code == 200
    assert zt.put(f"{base}/admin", json={"displayName": "x"}, headers=org).status_code == 404
    invalid = zt.post(base, json={"displayName": "No key"}, headers=org)
    assert invalid.status_code == 400 and invalid.json()["code"] == 3


def test_oidc_secret_only_at_creation_and_zero_enums_omitted(
    zt: httpx.Client, org: dict[str, str], project: str
) -> None:
    config = {
        "redirectUris": ["https://portal.acme.test/callback"],
        "responseTypes": ["OIDC_RESPONSE_TYPE_CODE"],
        "grantTypes": ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE", "OIDC_GRANT_TYPE_REFRESH_TOKEN"],
        "appType": "OIDC_APP_TYPE_WEB",
        "authMethodType": "OIDC_AUTH_METHOD_TYPE_BASIC",
    }
    created = zt.post(
        f"{M}/projects/{project}/apps/oidc", json={"name": "portal", **config}, headers=org
    )
    body = created.json()
    assert set(body) == {"appId", "details", "clientId", "clientSecret"}
    assert (
        zt.post(
            f"{M}/projects/{project}/apps/oidc", json={"name": "portal", **config}, headers=org
        ).status_code
        == 409
    )
    found = zt.post(f"{M}/projects/{project}/apps/_search", json={}, headers=org).json()["result"]
    oidc = found[0]["oidcConfig"]
    assert "clientSecret" not in oidc and oidc["clientId"] == body["clientId"]
    assert "appType" not in oidc and "authMethodType" not in oidc  # WEB and BASIC are enum 0
    assert oidc["responseTypes"] == ["OIDC_RESPONSE_TYPE_CODE"]
    assert "devMode" not in oidc
    url = f"{M}/projects/{project}/apps/{body['appId']}/oidc_config"
    assert zt.put(url, json=config, headers=org).json()["code"] == 9
    changed = zt.put(url, json={**config, "devMode": True}, headers=org)
    assert changed.status_code == 200
    public = zt.post(
        f"{M}/projects/{project}/apps/oidc",
        json={
            "name": "spa",
            **config,
            "appType": "OIDC_APP_TYPE_USER_AGENT",
            "authMethodType": "OIDC_AUTH_METHOD_TYPE_NONE",
        },
        headers=org,
    ).json()
    assert "clientSecret" not in public
    assert (
        zt.delete(f"{M}/projects/{project}/apps/{public['appId']}", headers=org).status_code == 200
    )


def test_project_grants(zt: httpx.Client, org: dict[str, str], project: str) -> None:
    zt.post(
        f"{M}/projects/{project}/roles",
        json={"roleKey": "user", "displayName": "User"},
        headers=org,
    )
    other = zt.post("/v2/organizations", json={"name": "Beta"})
    assert other.status_code == 201
    beta = other.json()["organizationId"]
    base = f"{M}/projects/{project}/grants"
    grant = zt.post(base, json={"grantedOrgId": beta, "roleKeys": ["user"]}, headers=org).json()
    assert grant["grantId"].isdigit()
    assert (
        zt.post(base, json={"grantedOrgId": beta, "roleKeys": ["user"]}, headers=org).status_code
        == 409
    )
    unknown_role = zt.post(base, json={"grantedOrgId": beta, "roleKeys": ["nope"]}, headers=org)
    assert unknown_role.status_code == 400 and unknown_role.json()["code"] == 9
    listed = zt.post(f"{base}/_search", json={}, headers=org).json()["result"]
    assert listed[0]["grantedOrgId"] == beta and listed[0]["grantedRoleKeys"] == ["user"]
    url = f"{base}/{grant['grantId']}"
    assert zt.put(url, json={"roleKeys": ["user"]}, headers=org).json()["code"] == 9
    cleared = zt.put(url, json={"roleKeys": []}, headers=org)
    assert cleared.status_code == 200
    got = zt.get(url, headers=org).json()["projectGrant"]
    assert "grantedRoleKeys" not in got
    assert zt.delete(url, headers=org).status_code == 200
    assert zt.get(url, headers=org).status_code == 404


def test_v2_organizations(zt: httpx.Client) -> None:
    created = zt.post("/v2/organizations", json={"name": "Gamma"})
    assert created.status_code == 201
    query = {"nameQuery": {"name": "gamma", "method": "TEXT_QUERY_METHOD_EQUALS_IGNORE_CASE"}}
    found = zt.post("/v2/organizations/_search", json={"queries": [query]}).json()
    assert found["details"]["totalResult"] == "1"
    assert found["result"][0]["id"] == created.json()["organizationId"]
    assert found["result"][0]["state"] == "ORGANIZATION_STATE_ACTIVE"


def test_bad_token_is_401_unauthenticated(fakes: FakeProviders) -> None:
    response = httpx.get(f"{fakes.zitadel_url}{M}/orgs/me", headers={"Authorization": "Bearer x"})
    assert response.status_code == 401 and response.json()["code"] == 16


def test_a_list_query_orders_by_creation_as_asc_says(
    zt: httpx.Client, org: dict[str, str], project: str
) -> None:
    zt.post(f"{M}/projects", json={"name": "chat"}, headers=org)

    def names(asc: bool) -> list[str]:
        body = {"query": {"asc": asc}}
        found = zt.post(f"{M}/projects/_search", json=body, headers=org).json()["result"]
        return [p["name"] for p in found]

    assert names(True) == ["portal", "chat"]
    assert names(False) == ["chat", "portal"]
