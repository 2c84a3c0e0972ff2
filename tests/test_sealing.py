"""Declared secrets: references resolve in process and sealed values stay sealed."""

from __future__ import annotations

from typing import Any

import keyring
import pytest

from trueup.errors import UsageError
from trueup.redact import PLACEHOLDER, SEALED, redact, unseal
from trueup.sealing import (
    holds_literal,
    is_reference,
    mask,
    resolve_reference,
    sealed_leaves,
    sealed_strings,
    unsealed_leaves,
)


@pytest.fixture
def memory_keyring(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, str], str]:
    """The OS keyring as a dict (no backend class: keyring would register it for good)."""
    values: dict[tuple[str, str], str] = {}
    monkeypatch.setattr(keyring, "get_password", lambda s, n: values.get((s, n)))
    return values


def test_an_env_reference_resolves_and_is_redacted_from_then_on() -> None:
    value = resolve_reference({"env": "SEAL_T_DB"}, {"SEAL_T_DB": "env-secret-4711"})
    assert value == "env-secret-4711"
    assert redact("dsn=env-secret-4711") == f"dsn={PLACEHOLDER}"


def test_a_missing_env_reference_is_a_usage_error_naming_the_variable() -> None:
    with pytest.raises(UsageError) as caught:
        resolve_reference({"env": "SEAL_T_NOT_SET"}, {})
    assert "SEAL_T_NOT_SET is not set" in caught.value.message
    assert "export SEAL_T_NOT_SET" in (caught.value.hint or "")


def test_a_keyring_reference_reads_the_os_keyring(
    memory_keyring: dict[tuple[str, str], str],
) -> None:
    memory_keyring[("acme", "db")] = "ring-secret-0815"
    assert resolve_reference({"credential": "keyring:acme/db"}) == "ring-secret-0815"
    with pytest.raises(UsageError) as caught:
        resolve_reference({"credential": "keyring:acme/absent"})
    assert "no such credential" in caught.value.message
    assert caught.value.hint == "store it first: keyring set acme absent"
    with pytest.raises(UsageError, match="keyring:SERVICE/NAME"):
        resolve_reference({"credential": "vault:acme/db"})


def test_secret_strings_are_sealed_by_mark_or_by_name_and_open_again() -> None:
    declared: dict[str, Any] = {
        "host": "db.internal",
        "password": "pw-by-name-1234",
        "port": 5432,
        "token": {"env": "SEAL_T_TOK"},
    }
    sealed = sealed_leaves(declared, False, {"SEAL_T_TOK": "tok-by-ref-5678"})
    assert sealed["host"] == "db.internal" and sealed["port"] == 5432
    assert sealed["password"].startswith(SEALED) and sealed["token"].startswith(SEALED)
    assert "pw-by-name-1234" not in str(sealed) and "tok-by-ref-5678" not in str(sealed)
    assert unsealed_leaves(sealed) == {**declared, "token": "tok-by-ref-5678"}
    # Live values seal alike, so a declared secret and the live one still compare.
    assert sealed_strings({"password": "pw-by-name-1234"}, False) == {
        "password": sealed["password"]
    }
    assert sealed_leaves(["a-marked-value"], True)[0] == sealed_strings(["a-marked-value"], True)[0]
    assert unseal(sealed["password"]) == "pw-by-name-1234"


def test_a_live_table_shaped_like_a_reference_is_only_a_table() -> None:
    assert is_reference({"env": "PROD"})
    assert sealed_strings({"env": "PROD"}, False) == {"env": "PROD"}


def test_literal_secrets_are_told_from_references() -> None:
    assert holds_literal({"api_token": "x"}, False)
    assert holds_literal("x", True)
    assert not holds_literal({"api_token": {"env": "X"}}, False)
    assert not holds_literal({"model": "gpt-5"}, False)


def test_mask_hides_secrets_and_refuses_to_show_a_short_one() -> None:
    assert mask("a = long-secret-value\n", ["long-secret-value"]) == f"a = {PLACEHOLDER}\n"
    assert "not shown" in mask("pin = 1234\n", ["1234"])
    assert mask("nothing here\n", ["1234"]) == "nothing here\n"
