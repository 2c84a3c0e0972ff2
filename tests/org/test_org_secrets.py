"""App variables are sealed unless declared public; the audit log keeps no values;
plain http:// to a provider is refused unless it is loopback or allowed."""

from __future__ import annotations

import json
import sqlite3

import pytest
from org_world import ORG, Orgs

from trueup.errors import UsageError
from trueup.model import ActionType, Outcome
from trueup.providers.credentials import endpoint
from trueup.testing import FakeProviders

PLAIN = "plain-by-default-2201"
MARKED = "marked-secret-3302"
REF = "env-ref-secret-4403"
VARS = (
    f'env = {{ LOG_LEVEL = "info", DEFAULTED = "{PLAIN}", '
    f'MARKED = {{ value = "{MARKED}", secret = true }}, FROM_ENV = {{ env = "ORGSEC_REF" }} }}\n'
    'public_env = ["LOG_LEVEL"]'
)
SECRET_ORG = ORG.replace('env = { LOG_LEVEL = "info" }', VARS)


@pytest.fixture(autouse=True)
def _reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORGSEC_REF", REF)


def live_env(fakes: FakeProviders) -> dict[str, str]:
    (app,) = [a for a in fakes.coolify.list_applications() if a["name"] == "portal"]
    return {e["key"]: e["value"] for e in fakes.coolify.list_envs(app["uuid"])}


def test_every_value_not_declared_public_is_sealed_but_reaches_coolify(orgs: Orgs) -> None:
    path = orgs.write(SECRET_ORG)
    prepared = orgs.plan(path)
    body = json.dumps(prepared.plan.body())
    assert "info" in body, "a public value is shown as it is"
    assert not [v for v in (PLAIN, MARKED, REF) if v in body]
    result = orgs.apply(path)
    assert result.outcome is Outcome.CONVERGED, result.message
    assert live_env(orgs.fakes) == {
        "LOG_LEVEL": "info",
        "DEFAULTED": PLAIN,
        "MARKED": MARKED,
        "FROM_ENV": REF,
    }
    assert {a.type for a in orgs.plan(path).plan.actions} == {ActionType.NO_OP}
    for engine in orgs.engines:
        engine.close()
    orgs.engines.clear()
    with sqlite3.connect(orgs.data / "state.db") as db:
        details = [str(row) for row in db.execute("SELECT * FROM audit")]
    assert details and not [v for v in (PLAIN, MARKED, REF) if v in "".join(details)]
    assert not [p for p in orgs.data.rglob("*") if p.is_file() and PLAIN.encode() in p.read_bytes()]


def test_the_audit_row_of_an_apply_is_the_plan_by_digest(orgs: Orgs) -> None:
    path = orgs.write(SECRET_ORG)
    orgs.apply(path)
    with sqlite3.connect(orgs.data / "state.db") as db:
        [(detail, plan_digest)] = db.execute(
            "SELECT detail, plan_digest FROM audit WHERE event = 'plan.applied'"
        ).fetchall()
    after = json.loads(detail)["after"]
    assert after["digest"] == plan_digest
    assert {"resource", "kind", "type", "fields", "payload"} == set(after["actions"][0])


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ('public_env = ["NOPE"]', "'NOPE' is not a variable in env"),
        ('public_env = ["FROM_ENV"]', "'FROM_ENV' is read from a secret reference"),
    ],
)
def test_public_env_names_declared_plain_values(orgs: Orgs, declared: str, problem: str) -> None:
    path = orgs.write(SECRET_ORG.replace('public_env = ["LOG_LEVEL"]', declared))
    with pytest.raises(UsageError, match=problem):
        orgs.plan(path)


def test_a_missing_reference_names_the_app_and_variable(
    orgs: Orgs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ORGSEC_REF")
    with pytest.raises(UsageError) as caught:
        orgs.plan(orgs.write(SECRET_ORG))
    assert "[[app]] 'portal': field 'env': FROM_ENV:" in caught.value.message
    assert "ORGSEC_REF is not set" in caught.value.message


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080", "http://127.3.4.5", "http://[::1]:9", "http://localhost/"]
)
def test_plain_http_to_loopback_is_allowed(url: str) -> None:
    assert endpoint("coolify", {"TRUEUP_COOLIFY_TOKEN": "t0ken-xyz", "TRUEUP_COOLIFY_URL": url})


def test_plain_http_elsewhere_is_refused_unless_allowed() -> None:
    env = {"TRUEUP_COOLIFY_TOKEN": "t0ken-xyz", "TRUEUP_COOLIFY_URL": "http://coolify.lan:8000"}
    with pytest.raises(UsageError) as caught:
        endpoint("coolify", env)
    assert "TRUEUP_COOLIFY_URL is http://coolify.lan:8000" in caught.value.message
    assert "--insecure-http" in (caught.value.hint or "")
    assert endpoint("coolify", env, insecure_http=True).url.startswith("http://coolify.lan")
    assert endpoint("coolify", {**env, "TRUEUP_INSECURE_HTTP": "1"})
