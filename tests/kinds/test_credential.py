"""The credential kind: required by reference, checked for presence, never read out.

Cases: present (converged), absent (a human action with the exact command),
the keyring unavailable, a file readable by others, and at no point the value
in a plan, a run's results or the state store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator

import keyring
import pytest
from jaraco.classes.properties import classproperty
from keyring.backend import KeyringBackend
from keyring.backends import fail
from machine import Machine

from trueup.errors import UsageError
from trueup.model import ActionType as T
from trueup.model import Outcome

SECRET = "sk-live-do-not-show-4242"


class MemoryKeyring(KeyringBackend):
    """A keyring that lives in this process (the OS one is not ours to fill).

    Never viable: keyring registers every subclass it sees, and would otherwise
    choose this one for every later test in the process that asks it for one.
    """

    @classproperty
    def priority(cls) -> float:  # type: ignore[override]
        raise RuntimeError("installed by the ring fixture only")

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.values.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.values[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.values.pop((service, username), None)


@pytest.fixture
def ring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def declared(store: str, name: str | None = None, target: str = "credentials/openai") -> str:
    named = f'name = "{name}"\n' if name else ""
    return f"""
[[resource]]
id = "openai"
kind = "credential"
target = "{target}"
store = "{store}"
{named}"""


def everything_kept(machine: Machine) -> str:
    """The state store's every row, as text."""
    db = sqlite3.connect(machine.base / "data" / "state.db")
    tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
    return json.dumps([list(db.execute(f"select * from {t}")) for t in tables], default=str)


def test_a_keyring_credential_present_is_converged_and_never_read_out(
    machine: Machine, ring: MemoryKeyring
) -> None:
    ring.set_password("openai", "api-key", SECRET)
    body = declared("keyring", "openai/api-key")
    action = machine.action(body, "openai")
    assert action.type is T.NO_OP and "the OS keyring (openai/api-key)" in action.summary
    machine.converge(body)
    assert SECRET not in json.dumps(machine.plan(body).body())
    assert SECRET not in everything_kept(machine)


def test_a_keyring_credential_absent_is_a_human_action_with_the_command(
    machine: Machine, ring: MemoryKeyring
) -> None:
    body = declared("keyring", "openai/api-key")
    action = machine.action(body, "openai")
    assert action.type is T.HUMAN_ACTION
    assert "store it with `keyring set openai api-key`" in action.summary
    result = machine.apply(body)
    assert result is not None and result.outcome is Outcome.HUMAN_ACTION_REQUIRED
    ring.set_password("openai", "api-key", SECRET)
    assert machine.action(body, "openai").type is T.NO_OP


def test_an_unavailable_keyring_is_a_human_action_not_a_crash(machine: Machine) -> None:
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        action = machine.action(declared("keyring", "openai/api-key"), "openai")
    finally:
        keyring.set_keyring(previous)
    assert action.type is T.HUMAN_ACTION
    assert "the OS keyring cannot be read here (NoKeyringError)" in action.summary
    assert "`keyring set openai api-key`" in action.summary


def test_an_env_credential_is_present_only_when_set(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = declared("env", "OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    action = machine.action(body, "openai")
    assert action.type is T.HUMAN_ACTION
    assert "OPENAI_API_KEY is not set: export it" in action.summary
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert machine.action(body, "openai").type is T.NO_OP
    assert SECRET not in json.dumps(machine.plan(body).body())


def test_a_file_credential_must_exist_and_be_readable_by_its_owner_only(
    machine: Machine,
) -> None:
    body = declared("file", target=".config/openai/key")
    action = machine.action(body, "openai")
    assert action.type is T.HUMAN_ACTION and "(umask 077; cat >" in action.summary
    key = machine.put(".config/openai/key", SECRET)
    key.chmod(0o644)
    action = machine.action(body, "openai")
    assert action.type is T.HUMAN_ACTION
    assert f"run `chmod 600 {key}`" in action.summary
    key.chmod(0o600)
    assert machine.action(body, "openai").type is T.NO_OP
    assert key.read_text() == SECRET  # looked at, never touched


def test_an_empty_credential_file_is_not_a_credential(machine: Machine) -> None:
    machine.put(".config/openai/key", "").chmod(0o600)
    action = machine.action(declared("file", target=".config/openai/key"), "openai")
    assert action.type is T.HUMAN_ACTION and "is empty" in action.summary


@pytest.mark.parametrize(
    ("store", "name", "field"),
    [
        ("keyring", "no-slash", "a keyring credential is named SERVICE/USERNAME"),
        ("env", "NOT A NAME", "an env credential names its variable"),
        ("file", "x", "a file credential is its target"),
    ],
)
def test_a_reference_that_cannot_name_a_credential_is_refused_at_load(
    machine: Machine, store: str, name: str, field: str
) -> None:
    with pytest.raises(UsageError, match=f"resource 'openai': field 'name': {field}"):
        machine.plan(declared(store, name))


def test_what_depends_on_a_missing_credential_waits_and_the_rest_goes_on(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    body = (
        declared("env", "OPENAI_API_KEY")
        + """
[[resource]]
id = "agent-config"
kind = "config"
target = ".codex/config.toml"
keys = { model = "gpt-5" }
depends_on = ["openai"]

[[resource]]
id = "notes"
kind = "file"
target = "notes.md"
content = "independent\\n"
"""
    )
    result = machine.apply(body)
    assert result is not None and result.outcome is Outcome.HUMAN_ACTION_REQUIRED
    status = {r.action.resource_id: (r.action.type, r.status) for r in result.results}
    assert status["agent-config"] == (T.BLOCKED, "skipped")
    assert status["notes"] == (T.WRITE_FILE, "succeeded")
    assert not machine.path(".codex/config.toml").exists()
    assert machine.path("notes.md").read_text() == "independent\n"
    skipped = next(r for r in result.results if r.action.resource_id == "agent-config")
    assert "depends on 'openai', which needs a person" in skipped.message
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    machine.converge(body)
    assert machine.load(".codex/config.toml") == {"model": "gpt-5"}
