"""Secret config values and file contents: written to the target, sealed everywhere else."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from machine import Machine

from trueup.errors import UsageError
from trueup.model import ActionType, Outcome

KEY = "literal-key-secret-1357"
NAMED = "named-token-secret-2468"
REF = "ref-env-secret-9753"
FILE = "file-content-secret-8642"

CONFIG = f"""
[[resource]]
id = "cfg"
kind = "config"
target = "app/config.toml"
keys = {{ model = "gpt-5", "db.key" = "{KEY}", "auth.api_token" = "{NAMED}", "db.url" = {{ env = "SEALT_DB" }} }}
secret = ["db.key"]
"""
SECRET_FILE = f"""
[[resource]]
id = "f"
kind = "file"
target = "secret.txt"
content = "{FILE}"
secret = true
"""
ALL = (KEY, NAMED, REF, FILE)


@pytest.fixture(autouse=True)
def _reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEALT_DB", REF)


def stored(machine: Machine) -> str:
    """Everything the state store and the data folder hold, as text."""
    data = machine.base / "data"
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in data.rglob("*") if p.is_file()
    )


def test_a_secret_config_value_is_written_and_shown_or_stored_nowhere(machine: Machine) -> None:
    body = CONFIG + SECRET_FILE
    plan = machine.plan(body)
    text = json.dumps(plan.body())
    assert not [s for s in ALL if s in text], text
    preview = machine.preview(body, "cfg") + machine.preview(body, "f")
    assert not [s for s in ALL if s in preview], preview
    assert "secret content" in preview
    result = machine.apply(body)
    assert result is not None and result.outcome is Outcome.CONVERGED, result
    written = machine.load("app/config.toml")
    assert written["db"] == {"key": KEY, "url": REF}
    assert written["auth"]["api_token"] == NAMED and written["model"] == "gpt-5"
    assert machine.path("secret.txt").read_text() == FILE
    for target in ("app/config.toml", "secret.txt"):
        assert stat.S_IMODE(machine.path(target).stat().st_mode) == 0o600, target
    assert {a.type for a in machine.plan(body).actions} == {ActionType.NO_OP}
    machine.engine.close()  # the WAL is folded into the database file
    assert not [s for s in ALL if s in stored(machine)]


def test_a_rotated_secret_is_an_update_and_a_hand_edit_of_it_is_drift(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine.converge(CONFIG)
    monkeypatch.setenv("SEALT_DB", "rotated-secret-0000")
    action = machine.action(CONFIG, "cfg")
    assert action.type is ActionType.WRITE_CONFIG and "rotated-secret-0000" not in str(action)
    machine.converge(CONFIG)
    assert machine.load("app/config.toml")["db"]["url"] == "rotated-secret-0000"
    path = machine.path("app/config.toml")
    path.write_text(path.read_text().replace(KEY, "edited-by-hand-1111"))
    drift = machine.action(CONFIG, "cfg")
    assert drift.type is ActionType.DRIFT_CONFLICT
    assert "edited-by-hand-1111" not in machine.preview(CONFIG, "cfg")


def test_a_profile_spelling_out_a_secret_is_never_cached(machine: Machine) -> None:
    machine.plan(CONFIG)
    cache = machine.base / "data" / "cache"
    assert not any(KEY in p.read_text() for p in cache.rglob("*") if p.is_file())


def test_a_missing_reference_names_the_file_resource_and_field(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEALT_DB")
    with pytest.raises(UsageError) as caught:
        machine.plan(CONFIG)
    message = caught.value.message
    assert "profile.toml: resource 'cfg': field 'keys': key 'db.url'" in message, message
    assert "SEALT_DB is not set" in message
    missing = (
        '\n[[resource]]\nid = "g"\nkind = "file"\ntarget = "g"\ncontent = { env = "SEALT_NO" }\n'
    )
    with pytest.raises(UsageError, match=r"resource 'g': field 'content'.*SEALT_NO is not set"):
        machine.plan(missing)


def test_secret_lists_only_declared_keys(machine: Machine) -> None:
    with pytest.raises(UsageError, match="field 'secret': 'nope' is not one of the declared keys"):
        machine.plan(CONFIG.replace('secret = ["db.key"]', 'secret = ["nope"]'))


def test_a_secret_file_from_a_source_is_0600_and_never_diffed(machine: Machine) -> None:
    machine.source("files/token", FILE)
    body = '\n[[resource]]\nid = "s"\nkind = "file"\ntarget = "t"\nsource = "files/token"\nsecret = true\n'
    assert FILE not in machine.preview(body, "s")
    machine.converge(body)
    assert stat.S_IMODE(Path(machine.path("t")).stat().st_mode) == 0o600
