"""The DB layer's promises that do not need a server: URLs fit for messages."""

from __future__ import annotations

import secrets

import pytest

from trueup.errors import UsageError
from trueup.redact import redact_url
from trueup.state.store import Store


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres:S3cretPW@127.0.0.1:5432/db",
        "postgresql://postgres@127.0.0.1:5432/db?password=S3cretPW",
        "postgresql://postgres@127.0.0.1/db?sslmode=require&PASSWORD=S3cretPW#x",
    ],
)
def test_a_password_never_reaches_a_message(url: str) -> None:
    shown = redact_url(url)
    assert "S3cretPW" not in shown and "[REDACTED]" in shown
    assert shown.startswith("postgresql://postgres")


def test_a_postgres_schema_that_does_not_exist_is_a_usage_error(postgres_schema: str) -> None:
    # The fixture's URL sets search_path to a schema it made; point it at one that is not.
    base, _, _ = postgres_schema.rpartition("%3D")
    url = f"{base}%3Dmissing_{secrets.token_hex(4)}"
    with pytest.raises(UsageError, match="cannot hold trueup's tables") as refused:
        Store.open(url)
    assert "the schema must exist" in (refused.value.hint or "")


def test_a_state_password_is_never_shown_by_a_command(postgres_schema: str) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    password = f"pw{secrets.token_hex(6)}"  # trust auth: any password is accepted
    url = postgres_schema.replace("postgresql://postgres@", f"postgresql://postgres:{password}@")
    assert password in url
    trueup = str(Path(sys.executable).parent / "trueup")
    env = {**os.environ, "TRUEUP_STATE": url, "NO_COLOR": "1"}
    for verb in ("recover", "abandon"):
        shown = subprocess.run(
            [trueup, verb, "no-such-run", "--json"], capture_output=True, text=True, env=env
        )
        assert shown.returncode == 2, shown.stdout + shown.stderr
        assert "no run 'no-such-run'" in shown.stdout
        assert password not in shown.stdout + shown.stderr
