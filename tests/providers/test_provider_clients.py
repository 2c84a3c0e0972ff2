"""Provider clients against the fakes: paging, duplicates treated as found, no blind replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from provider_support import logged

from trueup.providers.cloudflare import client as cf
from trueup.providers.coolify import client as cl
from trueup.providers.http import ErrorParser, HttpClient, ProviderError, RetryPolicy
from trueup.providers.secretstore import SecretStore
from trueup.providers.zitadel import client as zc
from trueup.testing import FakeProviders


def no_wait(seconds: float) -> None:
    return None


def _http(
    fakes: FakeProviders, provider: str, parse_error: ErrorParser, **options: Any
) -> HttpClient:
    return HttpClient(
        provider,
        fakes.urls[provider],
        fakes.tokens[provider],
        parse_error=parse_error,
        sleep=no_wait,
        **options,
    )


def cloudflare(fakes: FakeProviders) -> cf.CloudflareClient:
    return cf.CloudflareClient(_http(fakes, "cloudflare", cf.parse_error))


def coolify(fakes: FakeProviders) -> cl.CoolifyClient:
    http = _http(fakes, "coolify", cl.parse_error, policy=RetryPolicy(attempts=3))
    return cl.CoolifyClient(http)


def zitadel(fakes: FakeProviders) -> zc.ZitadelClient:
    return zc.ZitadelClient(_http(fakes, "zitadel", zc.parse_error))


def test_cloudflare_reads_every_page_and_the_later_ones_at_once(fakes: FakeProviders) -> None:
    zone = fakes.cloudflare.add_zone("acme.test")
    for n in range(250):
        fakes.cloudflare.add_record(
            zone, type="A", name=f"h{n}", content=f"10.0.{n // 200}.{n % 200}"
        )
    client = cloudflare(fakes)
    records = client.records(zone)
    assert len(records) == 250 and len({r["id"] for r in records}) == 250
    pages = sorted(e.query for e in logged(fakes.request_log.cloudflare, 3).matching("GET"))
    assert len(pages) == 3 and all("per_page=100" in q for q in pages)


def test_cloudflare_identical_record_counts_as_found(fakes: FakeProviders) -> None:
    zone = fakes.cloudflare.add_zone("acme.test")
    client = cloudflare(fakes)
    body = {
        "type": "MX",
        "name": "acme.test",
        "content": "MX.Example.com.",
        "priority": 10,
        "ttl": 1,
    }
    first = client.create_record(zone, body)
    again = client.create_record(zone, body)
    assert first["id"] == again["id"]
    assert len(fakes.cloudflare.records(zone)) == 1


def test_cloudflare_destination_address_exists_counts_as_found(fakes: FakeProviders) -> None:
    zone = fakes.cloudflare.add_zone("acme.test")
    client = cloudflare(fakes)
    account = client.zone_by_name("acme.test")["account"]["id"]  # type: ignore[index]
    assert (
        zone
        and client.create_address(account, "a@example.com")["id"]
        == (client.create_address(account, "a@example.com")["id"])
    )


def test_coolify_create_after_a_5xx_looks_before_it_sends_again(fakes: FakeProviders) -> None:
    fakes.faults.coolify.update(server_errors=1)
    client = coolify(fakes)
    uuid = client.create_project("Acme", None)
    assert [p["uuid"] for p in fakes.coolify.list_projects()] == [uuid]
    log = logged(fakes.request_log.coolify, 3)
    routes = [f"{e.method} {e.path} {e.status}" for e in log.entries]
    assert routes[:3] == [
        "POST /api/v1/projects 500",
        "GET /api/v1/projects 200",
        "POST /api/v1/projects 201",
    ]


def test_coolify_environment_conflict_counts_as_found(fakes: FakeProviders) -> None:
    client = coolify(fakes)
    project = client.create_project("Acme", None)
    production = client.environment(project, "production")
    assert production is not None
    assert client.create_environment(project, "production") == production["uuid"]


def test_zitadel_conflict_is_found_and_unchanged_update_succeeds(fakes: FakeProviders) -> None:
    client = zitadel(fakes)
    org = client.create_org("Acme Inc")
    assert client.create_org("Acme Inc") == org
    project = client.create_project(org, {"name": "portal"})
    assert client.create_project(org, {"name": "portal"}) == project
    client.update_project(org, project, {"name": "portal"})  # Errors.NoChangesFound
    body = {
        "name": "web",
        "redirectUris": ["https://a.test/cb"],
        "responseTypes": ["OIDC_RESPONSE_TYPE_CODE"],
        "grantTypes": ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE"],
        "appType": "OIDC_APP_TYPE_WEB",
        "authMethodType": "OIDC_AUTH_METHOD_TYPE_BASIC",
    }
    created = client.create_oidc_app(org, project, body)
    assert created["clientSecret"]
    found = client.create_oidc_app(org, project, body)
    assert found["appId"] == created["appId"] and "clientSecret" not in found
    assert [p["name"] for p in client.projects(org)] == ["portal"]


def test_secret_store_falls_back_to_an_owner_only_file(tmp_path: Path) -> None:
    import keyring
    from keyring.backends import fail

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        store = SecretStore(tmp_path)
        ref = store.put("acme/zitadel/portal/web/client-secret", "s3cret-value-xyz")
    finally:
        keyring.set_keyring(previous)
    assert ref == "file:acme/zitadel/portal/web/client-secret"
    (path,) = list((tmp_path / "secrets").iterdir())
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "secrets").stat().st_mode & 0o777 == 0o700
    assert store.get(ref) == "s3cret-value-xyz" and store.has(ref)
    assert not store.has("file:nothing-here")
    # Stored and never recorded (a crash in between): found again by its name.
    assert store.find("acme/zitadel/portal/web/client-secret") == ref
    assert store.find("acme/zitadel/portal/other/client-secret") is None


@pytest.mark.parametrize("name", ["cloudflare", "coolify", "zitadel"])
def test_tokens_come_from_the_environment_and_are_redacted(name: str) -> None:
    from trueup.providers.credentials import endpoint
    from trueup.redact import PLACEHOLDER, redact

    token = f"{name}-token-from-env-123"
    point = endpoint(
        name, {f"TRUEUP_{name.upper()}_TOKEN": token, f"TRUEUP_{name.upper()}_URL": "https://x"}
    )
    assert point.token == token and redact(token) == PLACEHOLDER
    assert token not in repr(point)


def _zitadel_error(status: int, body: dict[str, object]) -> ProviderError:
    import httpx

    from trueup.providers.zitadel.client import parse_error

    request = httpx.Request("PUT", "https://zitadel.test/management/v1/projects/1")
    message, codes = parse_error(httpx.Response(status, json=body, request=request))
    return ProviderError("zitadel", "PUT", "/management/v1/projects/1", status, message, codes)


@pytest.mark.parametrize(
    "message",
    ["No changes (COMMAND-1m88i)", "Keine Änderungen (COMMAND-1m88i)", "Errors.NoChangesFound"],
)
def test_zitadel_no_changes_is_told_by_code_and_error_id_in_any_language(message: str) -> None:
    from trueup.providers.zitadel.client import _unchanged

    detail = {"@type": "type.googleapis.com/zitadel.v1.ErrorDetail", "id": "COMMAND-1m88i"}
    assert _unchanged(_zitadel_error(400, {"code": 9, "message": message, "details": [detail]}))


def test_zitadel_another_precondition_is_not_taken_for_no_changes() -> None:
    from trueup.providers.zitadel.client import _unchanged

    other = {"code": 9, "message": "No changes? (COMMAND-Ghrh3)", "details": []}
    assert not _unchanged(_zitadel_error(400, other))  # the id, from the message's end
    said_so = {"code": 9, "message": "Errors.NoChangesFound", "details": []}
    assert not _unchanged(_zitadel_error(400, said_so)), "the key alone is no id"


def test_cloudflare_an_identical_cname_answered_81057_counts_as_found(
    fakes: FakeProviders,
) -> None:
    zone = fakes.cloudflare.add_zone("acme.test")
    client = cloudflare(fakes)
    body = {"type": "CNAME", "name": "www.acme.test", "content": "portal.acme.test", "ttl": 1}
    first = client.create_record(zone, body)
    assert client.create_record(zone, body)["id"] == first["id"]  # 81057, then looked up
    assert [e.status for e in fakes.request_log.cloudflare.matching("POST")] == [200, 400]


def test_cloudflare_81057_with_nothing_identical_there_is_the_clash_it_says(
    fakes: FakeProviders,
) -> None:
    zone = fakes.cloudflare.add_zone("acme.test")
    fakes.cloudflare.add_record(zone, type="A", name="www", content="192.0.2.1")
    body = {"type": "CNAME", "name": "www.acme.test", "content": "portal.acme.test", "ttl": 1}
    with pytest.raises(ProviderError) as clash:
        cloudflare(fakes).create_record(zone, body)
    assert cf.RECORD_EXISTS in clash.value.codes


@pytest.mark.parametrize("lists", [False, True], ids=["settings", "removed-records"])
def test_cloudflare_routing_is_enabled_by_zone_name_and_either_delete_answer_is_read(
    fakes: FakeProviders, lists: bool
) -> None:
    zone = fakes.cloudflare.add_zone("acme.test")
    client = cloudflare(fakes)
    on = client.set_routing(zone, "acme.test", True)  # the fake refuses it without the name
    assert on["enabled"] is True
    fakes.cloudflare.routing_delete_lists = lists
    try:
        off = client.set_routing(zone, "acme.test", False)
    finally:
        fakes.cloudflare.routing_delete_lists = False
    assert off["enabled"] is False and off["status"] == "unconfigured"
