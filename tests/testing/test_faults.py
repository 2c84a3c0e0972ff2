"""Fault injection, control endpoints, request log, persistence and the CLI entry point."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from trueup.testing import FakeProviders, Faults


@pytest.fixture(scope="module")
def fakes() -> Iterator[FakeProviders]:
    with FakeProviders() as running:
        yield running


@pytest.fixture()
def coolify(fakes: FakeProviders) -> Iterator[httpx.Client]:
    fakes.reset()
    headers = {"Authorization": f"Bearer {fakes.tokens.coolify}"}
    with httpx.Client(base_url=fakes.coolify_url, headers=headers, timeout=5) as client:
        yield client


@pytest.fixture()
def control(fakes: FakeProviders, coolify: httpx.Client) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{fakes.origin('coolify')}/_fake", timeout=5) as client:
        yield client


def test_rate_limit_burst_answers_429_with_retry_after(
    fakes: FakeProviders, coolify: httpx.Client
) -> None:
    fakes.faults.coolify.update(rate_limit=2, retry_after=3)
    for _ in range(2):
        limited = coolify.get("/projects")
        assert limited.status_code == 429
        assert limited.headers["Retry-After"] == "3"
        assert limited.json() == {"message": "Too Many Attempts."}
    assert coolify.get("/projects").status_code == 200
    assert fakes.faults.coolify.rate_limit == 0


def test_per_token_limit_uses_a_sliding_window(fakes: FakeProviders, coolify: httpx.Client) -> None:
    fakes.faults.coolify.update(token_limit=3, token_window=30)
    statuses = [coolify.get("/projects").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    refused = coolify.get("/projects")
    assert 1 <= int(refused.headers["Retry-After"]) <= 30
    fakes.faults.coolify.update(token_window=0.2)
    time.sleep(0.25)
    assert coolify.get("/projects").status_code == 200


def test_real_per_token_limits_are_the_providers(fakes: FakeProviders) -> None:
    cf = Faults()
    now = 1000.0
    decisions = [cf.decide("t", (1200, 300.0), now=now).status for _ in range(1201)]
    assert decisions.count(None) == 1200 and decisions[-1] == 429
    later = cf.decide("t", (1200, 300.0), now=now + 300.5)
    assert later.status is None
    assert cf.decide("other-token", (1200, 300.0), now=now).status is None
    coolify = Faults()
    assert [coolify.decide("t", (200, 60.0), now=now).status for _ in range(201)][-1] == 429
    assert Faults(token_limit=0).decide("t", (1, 60.0), now=now).status is None


def test_server_errors_cycle_500_502_503(fakes: FakeProviders, coolify: httpx.Client) -> None:
    fakes.faults.coolify.update(server_errors=4)
    statuses = [coolify.get("/projects").status_code for _ in range(5)]
    assert statuses == [500, 502, 503, 500, 200]


def test_cloudflare_faults_keep_the_envelope(fakes: FakeProviders) -> None:
    fakes.reset()
    fakes.faults.cloudflare.update(server_errors=1, rate_limit=1)
    headers = {"Authorization": f"Bearer {fakes.tokens.cloudflare}"}
    limited = httpx.get(f"{fakes.cloudflare_url}/zones", headers=headers)
    failed = httpx.get(f"{fakes.cloudflare_url}/zones", headers=headers)
    assert limited.status_code == 429 and "Retry-After" in limited.headers
    assert failed.status_code == 500
    for response in (limited, failed):
        assert response.json()["success"] is False and response.json()["result"] is None


def test_seeded_randomness_is_reproducible(fakes: FakeProviders, coolify: httpx.Client) -> None:
    def run() -> list[int]:
        fakes.faults.coolify.update(fail_ratio=0.5, seed=42)
        return [coolify.get("/projects").status_code for _ in range(12)]

    first, second = run(), run()
    assert first == second
    assert {200} < set(first) <= {200, 429, 500, 502, 503}
    fakes.faults.coolify.update(fail_ratio=0, server_error_rate=1.0, server_error_statuses=[503])
    assert {coolify.get("/projects").status_code for _ in range(3)} == {503}


def test_drop_closes_the_connection_without_a_response(
    fakes: FakeProviders, coolify: httpx.Client
) -> None:
    fakes.faults.coolify.update(drop=1)
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        coolify.get("/projects")
    assert coolify.get("/projects").status_code == 200
    # also on a brand-new connection
    fakes.faults.coolify.update(drop=1)
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        httpx.get(f"{fakes.coolify_url}/projects")
    log = fakes.request_log.coolify
    dropped = [e for e in log.entries if e.fault == "drop"]
    assert len(dropped) == 2 and all(e.status is None for e in dropped)


def test_latency_delays_every_request(fakes: FakeProviders, coolify: httpx.Client) -> None:
    coolify.get("/projects")
    fakes.faults.coolify.update(latency=0.2)
    started = time.monotonic()
    assert coolify.get("/projects").status_code == 200
    assert time.monotonic() - started >= 0.2


def logged(control: httpx.Client, count: int) -> dict[str, Any]:
    """The request log once it holds ``count`` requests: an entry is written as its
    response goes out, so on a busy machine the last one can lag the client by a moment."""
    deadline = time.monotonic() + 10
    while True:
        log: dict[str, Any] = control.get("/requests").json()
        if log["counts"]["total"] >= count or time.monotonic() > deadline:
            return log
        time.sleep(0.02)


def test_control_endpoints_set_faults_and_read_the_log(
    fakes: FakeProviders, coolify: httpx.Client, control: httpx.Client
) -> None:
    config = control.post(
        "/faults", json={"server_errors": 1, "server_error_statuses": [502]}
    ).json()
    assert config["server_errors"] == 1 and config["server_error_statuses"] == [502]
    assert coolify.get("/projects").status_code == 502
    coolify.post("/projects", json={"name": "acme"})
    log = logged(control, 2)
    assert [(r["method"], r["path"], r["status"]) for r in log["requests"]] == [
        ("GET", "/api/v1/projects", 502),
        ("POST", "/api/v1/projects", 201),
    ]
    assert log["counts"]["total"] == 2
    assert log["counts"]["by_status"] == {"502": 1, "201": 1}
    assert log["counts"]["by_route"]["POST /api/v1/projects"] == 1
    assert control.post("/faults", json={"nonsense": 1}).status_code == 400
    assert control.post("/faults", json={"fail_ratio": 2}).status_code == 400


def test_control_endpoints_ignore_faults_and_reset_everything(
    fakes: FakeProviders, coolify: httpx.Client, control: httpx.Client
) -> None:
    coolify.post("/projects", json={"name": "acme"})
    control.post("/faults", json={"fail_ratio": 1.0})
    assert coolify.get("/projects").status_code != 200
    assert control.get("/faults").status_code == 200
    assert control.post("/reset").json() == {"reset": True}
    assert coolify.get("/projects").json() == []
    assert control.get("/requests").json()["counts"]["total"] == 1
    assert control.get("/faults").json()["fail_ratio"] == 0


def test_faults_given_at_construction_per_provider() -> None:
    faults = {"zitadel": Faults(server_errors=1, server_error_statuses=(503,))}
    with FakeProviders(faults=faults) as fakes:
        headers = {"Authorization": f"Bearer {fakes.tokens.zitadel}"}
        first = httpx.get(f"{fakes.zitadel_url}/management/v1/orgs/me", headers=headers)
        assert first.status_code == 503 and first.json()["code"] == 14
        assert (
            httpx.get(f"{fakes.zitadel_url}/management/v1/orgs/me", headers=headers).status_code
            == 200
        )
        fakes.reset()
        assert fakes.faults.zitadel.server_errors == 1


def test_faults_validate_their_settings() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        Faults().update(sparkle=True)
    with pytest.raises(ValueError):
        Faults(latency=-1)
    with pytest.raises(ValueError):
        Faults(server_error_statuses=(404,))


def test_state_file_survives_a_restart(tmp_path: Path) -> None:
    with FakeProviders(state_dir=tmp_path) as fakes:
        zone = fakes.cloudflare.add_zone("acme.test")
        headers = {"Authorization": f"Bearer {fakes.tokens.coolify}"}
        uuid = httpx.post(
            f"{fakes.coolify_url}/projects", json={"name": "acme"}, headers=headers
        ).json()["uuid"]
        account = fakes.cloudflare.account_id
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cloudflare.json",
        "coolify.json",
        "zitadel.json",
    ]
    with FakeProviders(state_dir=tmp_path) as again:
        assert again.cloudflare.zone_id("acme.test") == zone
        assert again.cloudflare.account_id == account
        headers = {"Authorization": f"Bearer {again.tokens.coolify}"}
        assert httpx.get(f"{again.coolify_url}/projects/{uuid}", headers=headers).status_code == 200


def test_module_main_serves_until_sigterm(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trueup.testing.servers",
            "--state-dir",
            str(tmp_path),
            "--zone",
            "acme.test",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        described = json.loads(process.stdout.readline())
        headers = {"Authorization": f"Bearer {described['tokens']['cloudflare']}"}
        zones = httpx.get(f"{described['cloudflare_url']}/zones", headers=headers).json()["result"]
        assert [z["name"] for z in zones] == ["acme.test"]
        assert described["coolify_url"].endswith("/api/v1")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
