"""The fake Cloudflare v4 API over real HTTP: envelope, DNS quirks, email routing."""

from __future__ import annotations

import re
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
def cf(fakes: FakeProviders) -> Iterator[httpx.Client]:
    fakes.reset()
    headers = {"Authorization": f"Bearer {fakes.tokens.cloudflare}"}
    with httpx.Client(base_url=fakes.cloudflare_url, headers=headers, timeout=5) as client:
        yield client


@pytest.fixture()
def zone(fakes: FakeProviders, cf: httpx.Client) -> str:
    return fakes.cloudflare.add_zone("acme.test")


def record(cf: httpx.Client, zone: str, **body: Any) -> httpx.Response:
    return cf.post(f"/zones/{zone}/dns_records", json=body)


def errors(response: httpx.Response) -> list[int]:
    body = response.json()
    assert body["success"] is False
    assert body["result"] is None
    return [e["code"] for e in body["errors"]]


def test_zone_lookup_by_name_uses_the_list_envelope(cf: httpx.Client, zone: str) -> None:
    response = cf.get("/zones", params={"name": "acme.test"})
    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True and body["errors"] == [] and body["messages"] == []
    assert [z["id"] for z in body["result"]] == [zone]
    assert re.fullmatch(r"[0-9a-f]{32}", zone)
    assert body["result_info"] == {
        "page": 1,
        "per_page": 20,
        "count": 1,
        "total_count": 1,
        "total_pages": 1,
    }
    assert cf.get("/zones", params={"name": "other.test"}).json()["result"] == []


def test_record_names_come_back_fully_qualified(cf: httpx.Client, zone: str) -> None:
    created = record(cf, zone, type="A", name="portal", content="192.0.2.10", ttl=300).json()
    assert created["success"] is True
    assert created["result"]["name"] == "portal.acme.test"
    assert re.fullmatch(r"[0-9a-f]{32}", created["result"]["id"])
    apex = record(cf, zone, type="TXT", name="@", content="hello").json()["result"]
    assert apex["name"] == "acme.test"
    fetched = cf.get(f"/zones/{zone}/dns_records/{created['result']['id']}").json()["result"]
    assert fetched["content"] == "192.0.2.10" and fetched["ttl"] == 300


def test_identical_record_is_81058_and_cname_clash_is_81057(cf: httpx.Client, zone: str) -> None:
    assert record(cf, zone, type="A", name="www", content="192.0.2.1").status_code == 200
    again = record(cf, zone, type="A", name="www.acme.test", content="192.0.2.1")
    assert again.status_code == 400
    assert errors(again) == [81058]
    assert again.json()["errors"][0]["message"] == "An identical record already exists."
    # a second A with other content is fine; a CNAME at the same name is not
    assert record(cf, zone, type="A", name="www", content="192.0.2.2").status_code == 200
    clash = record(cf, zone, type="CNAME", name="www", content="elsewhere.test")
    assert clash.status_code == 400 and errors(clash) == [81057]
    assert record(cf, zone, type="CNAME", name="app", content="x.test").status_code == 200
    onto_cname = record(cf, zone, type="TXT", name="app", content="v=1")
    assert errors(onto_cname) == [81057]


@pytest.mark.parametrize(
    ("ttl", "ok"), [(1, True), (60, True), (86400, True), (30, False), (86401, False)]
)
def test_ttl_must_be_auto_or_60_to_86400(cf: httpx.Client, zone: str, ttl: int, ok: bool) -> None:
    response = record(cf, zone, type="A", name=f"t{ttl}", content="192.0.2.3", ttl=ttl)
    if ok:
        assert response.json()["result"]["ttl"] == ttl
    else:
        assert response.status_code == 400 and errors(response) == [9021]


def test_proxied_records_report_automatic_ttl(cf: httpx.Client, zone: str) -> None:
    result = record(cf, zone, type="A", name="p", content="192.0.2.4", ttl=300, proxied=True)
    assert result.json()["result"]["ttl"] == 1
    not_proxiable = record(cf, zone, type="TXT", name="p", content="x", proxied=True)
    assert not_proxiable.status_code == 400


def test_pagination_ends_with_an_empty_successful_page(cf: httpx.Client, zone: str) -> None:
    for i in range(5):
        assert record(cf, zone, type="TXT", name=f"r{i}", content=f"v{i}").status_code == 200
    seen: list[str] = []
    page = 1
    while True:
        body = cf.get(f"/zones/{zone}/dns_records", params={"page": page, "per_page": 2}).json()
        assert body["success"] is True
        if not body["result"]:
            assert body["result_info"]["count"] == 0
            break
        assert body["result_info"]["total_count"] == 5
        assert body["result_info"]["total_pages"] == 3
        seen += [r["name"] for r in body["result"]]
        page += 1
    assert page == 4
    assert sorted(seen) == [f"r{i}.acme.test" for i in range(5)]
    default = cf.get(f"/zones/{zone}/dns_records").json()["result_info"]
    assert default["per_page"] == 100
    capped = cf.get(f"/zones/{zone}/dns_records", params={"per_page": 100000}).json()
    assert capped["result_info"]["per_page"] == 5000


def test_list_filters_type_and_exact_name(cf: httpx.Client, zone: str) -> None:
    record(cf, zone, type="A", name="mail", content="192.0.2.5")
    record(cf, zone, type="TXT", name="mail", content="v=spf1 -all")
    record(cf, zone, type="TXT", name="other", content="x")
    by_name = cf.get(f"/zones/{zone}/dns_records", params={"name.exact": "mail.acme.test"})
    assert {r["type"] for r in by_name.json()["result"]} == {"A", "TXT"}
    both = cf.get(f"/zones/{zone}/dns_records", params={"type": "TXT", "name": "mail.acme.test"})
    assert [r["content"] for r in both.json()["result"]] == ["v=spf1 -all"]


def test_put_patch_delete_by_id(cf: httpx.Client, zone: str) -> None:
    created = record(cf, zone, type="A", name="api", content="192.0.2.6").json()["result"]
    url = f"/zones/{zone}/dns_records/{created['id']}"
    patched = cf.patch(url, json={"content": "192.0.2.7", "comment": "moved"}).json()["result"]
    assert patched["content"] == "192.0.2.7" and patched["name"] == "api.acme.test"
    assert patched["comment"] == "moved"
    put = cf.put(url, json={"type": "CNAME", "name": "api", "content": "lb.acme.test"})
    assert put.json()["result"]["type"] == "CNAME"
    assert cf.delete(url).json()["result"] == {"id": created["id"]}
    missing = cf.get(url)
    assert missing.status_code == 404 and errors(missing) == [81044]
    assert errors(cf.delete(url)) == [81044]


def test_unknown_and_malformed_ids(cf: httpx.Client, zone: str) -> None:
    malformed = cf.get("/zones/acme.test/dns_records")
    assert malformed.status_code == 400 and errors(malformed) == [7003, 7000]
    unknown = cf.get(f"/zones/{'0' * 32}/dns_records")
    assert unknown.status_code == 404 and errors(unknown) == [7003]


def test_bad_token_gets_the_401_envelope(fakes: FakeProviders, zone: str) -> None:
    wrong = httpx.get(f"{fakes.cloudflare_url}/zones", headers={"Authorization": "Bearer nope"})
    missing = httpx.get(f"{fakes.cloudflare_url}/zones")
    for response in (wrong, missing):
        assert response.status_code == 401
        assert errors(response) == [10000]


def test_email_routing_enable_adds_locked_records_and_disable_removes_them(
    cf: httpx.Client, zone: str
) -> None:
    settings = cf.get(f"/zones/{zone}/email/routing").json()["result"]
    assert settings["enabled"] is False and settings["status"] == "unconfigured"
    nameless = cf.post(f"/zones/{zone}/email/routing/dns")
    assert nameless.status_code == 400, "the body names the zone"
    enabled = cf.post(f"/zones/{zone}/email/routing/dns", json={"name": "acme.test"})
    assert enabled.json()["result"]["enabled"] is True
    assert enabled.json()["result"]["status"] == "ready"
    records = cf.get(f"/zones/{zone}/dns_records").json()["result"]
    routing = [r for r in records if r["meta"].get("email_routing")]
    assert sorted(r["type"] for r in routing) == ["MX", "MX", "MX", "TXT"]
    assert all(r["name"] == "acme.test" and r["locked"] for r in routing)
    disabled = cf.delete(f"/zones/{zone}/email/routing/dns").json()["result"]
    assert disabled["enabled"] is False
    assert cf.get(f"/zones/{zone}/dns_records").json()["result"] == []
    # the deprecated endpoints still answer
    assert cf.post(f"/zones/{zone}/email/routing/enable").json()["result"]["enabled"] is True
    assert cf.post(f"/zones/{zone}/email/routing/disable").json()["result"]["enabled"] is False


def test_routing_rules_and_catch_all(cf: httpx.Client, zone: str) -> None:
    rule_body = {
        "name": "sales",
        "enabled": True,
        "priority": 5,
        "matchers": [{"type": "literal", "field": "to", "value": "sales@acme.test"}],
        "actions": [{"type": "forward", "value": ["owner@example.test"]}],
    }
    created = cf.post(f"/zones/{zone}/email/routing/rules", json=rule_body).json()["result"]
    assert re.fullmatch(r"[0-9a-f]{32}", created["id"]) and created["tag"] == created["id"]
    listed = cf.get(f"/zones/{zone}/email/routing/rules").json()
    assert [r["name"] for r in listed["result"]] == ["sales"] and "result_info" in listed
    url = f"/zones/{zone}/email/routing/rules/{created['id']}"
    updated = cf.put(url, json={**rule_body, "enabled": False}).json()["result"]
    assert updated["enabled"] is False
    bad = cf.post(f"/zones/{zone}/email/routing/rules", json={**rule_body, "actions": []})
    assert bad.status_code == 400
    two = {"type": "forward", "value": ["owner@example.test", "other@example.test"]}
    several = cf.post(f"/zones/{zone}/email/routing/rules", json={**rule_body, "actions": [two]})
    assert several.status_code == 400, "a rule forwards to a single destination"
    assert "single destination" in several.json()["errors"][0]["message"]
    assert cf.delete(url).json()["success"] is True
    assert cf.get(url).status_code == 404
    catch_all = cf.get(f"/zones/{zone}/email/routing/rules/catch_all").json()["result"]
    assert catch_all["matchers"] == [{"type": "all"}] and catch_all["enabled"] is False
    forward = {"type": "forward", "value": ["owner@example.test"]}
    put = cf.put(
        f"/zones/{zone}/email/routing/rules/catch_all",
        json={"enabled": True, "matchers": [{"type": "all"}], "actions": [forward]},
    ).json()["result"]
    assert put["enabled"] is True and put["actions"] == [forward]


def test_destination_addresses_stay_unverified_until_confirmed(
    fakes: FakeProviders, cf: httpx.Client
) -> None:
    account = fakes.cloudflare.account_id
    base = f"/accounts/{account}/email/routing/addresses"
    created = cf.post(base, json={"email": "owner@example.test"}).json()["result"]
    assert created["verified"] is None
    duplicate = cf.post(base, json={"email": "owner@example.test"})
    assert duplicate.status_code == 400
    assert cf.get(base, params={"verified": "true"}).json()["result"] == []
    fakes.cloudflare.verify_address("owner@example.test")
    fetched = cf.get(f"{base}/{created['id']}").json()["result"]
    assert isinstance(fetched["verified"], str) and fetched["verified"].endswith("Z")
    assert [a["email"] for a in cf.get(base, params={"verified": "true"}).json()["result"]] == [
        "owner@example.test"
    ]
    assert cf.delete(f"{base}/{created['id']}").json()["result"]["id"] == created["id"]
    assert cf.get(f"/accounts/{'f' * 32}/email/routing/addresses").status_code == 404


def test_state_persists_across_connections(
    fakes: FakeProviders, cf: httpx.Client, zone: str
) -> None:
    record(cf, zone, type="A", name="keep", content="192.0.2.9")
    headers = {"Authorization": f"Bearer {fakes.tokens.cloudflare}"}
    with httpx.Client(base_url=fakes.cloudflare_url, headers=headers) as other:
        names = [r["name"] for r in other.get(f"/zones/{zone}/dns_records").json()["result"]]
    assert names == ["keep.acme.test"]
    assert [r["name"] for r in fakes.cloudflare.records(zone)] == ["keep.acme.test"]
