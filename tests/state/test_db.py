"""The DB layer's promises that do not need a server: URLs fit for messages."""

from __future__ import annotations

import pytest

from trueup.state.db import redact_url


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
