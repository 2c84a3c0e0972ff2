"""The DB layer's promises: URLs fit for messages, a store that goes away in words."""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from trueup.errors import ExitCode, UsageError
from trueup.redact import redact, redact_url
from trueup.state.db import Database, StoreUnavailable
from trueup.state.store import Store

if TYPE_CHECKING:
    from conftest import TcpProxy


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


def test_a_lost_postgres_connection_is_a_transport_error_naming_the_run_left(
    postgres_schema: str, tcp_proxy: TcpProxy
) -> None:
    password = f"pw{secrets.token_hex(6)}"  # trust auth: any password is accepted
    url = tcp_proxy.route(postgres_schema).replace("postgres@", f"postgres:{password}@", 1)
    db = Database(url)
    try:
        assert db.one("SELECT 1") == (1,)
        tcp_proxy.cut()
        with pytest.raises(StoreUnavailable) as lost, db.transaction():
            db.execute("SELECT 1")
        assert lost.value.exit_code == ExitCode.TRANSPORT
        shown = redact(f"{lost.value.message} {lost.value.hint}")
        assert "stopped answering" in shown and f"127.0.0.1:{tcp_proxy.port}" in shown
        assert password not in shown
        assert "run the command again" in (lost.value.hint or "")
        db.holding = "RUN-1"  # what the store sets while this process holds a run
        with pytest.raises(StoreUnavailable, match="run RUN-1 was left unfinished") as lost:
            db.execute("SELECT 1")
        assert "trueup recover RUN-1" in (lost.value.hint or "")
    finally:
        db.close()


def test_a_sqlite_store_locked_too_long_is_a_transport_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = Database(f"sqlite:///{path}")
    db.execute("PRAGMA busy_timeout = 10")  # not a minute, as trueup waits
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreUnavailable, match="database is locked") as lost, db.transaction():
            db.execute("SELECT 1")
        assert lost.value.exit_code == ExitCode.TRANSPORT
    finally:
        other.close()
        db.close()


def test_a_new_sqlite_store_has_big_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    from trueup.state.db import PAGE_SIZE

    Store.open(f"sqlite:///{tmp_path / 'new.db'}").db.close()  # built, tables and all
    built = sqlite3.connect(tmp_path / "new.db")
    assert built.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 16384
    built.close()
    old_path = tmp_path / "old.db"
    old = sqlite3.connect(old_path)
    old.execute("PRAGMA page_size=4096")
    old.execute("CREATE TABLE kept (n INTEGER)")
    old.execute("INSERT INTO kept VALUES (1)")
    old.commit()
    old.close()
    reopened = Database(f"sqlite:///{old_path}")
    assert reopened.execute("PRAGMA page_size")[0][0] == 4096
    assert reopened.execute("SELECT n FROM kept")[0][0] == 1
    reopened.close()


def test_sqlite_keeps_its_temporary_files_in_memory(tmp_path: Path) -> None:
    """Statement journals of big journal updates never reach /var/tmp's disk."""
    db = Database(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        assert db.execute("PRAGMA temp_store")[0][0] == 2  # MEMORY
    finally:
        db.close()
