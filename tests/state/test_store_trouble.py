"""A SQLite store that cannot be used says why, by its result code, and exits 6."""

from __future__ import annotations

from pathlib import Path

import pytest

from trueup.errors import ExitCode, UsageError
from trueup.state.db import Database, StoreReadOnly, StoreUnavailable, busy_seconds
from trueup.state.store import Store


def test_a_full_store_is_named_as_full(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = Database(f"sqlite:///{path}")
    try:
        db.execute("CREATE TABLE t (x BLOB)")
        pages = db.one("PRAGMA page_count")
        assert pages is not None
        db.execute(f"PRAGMA max_page_count = {pages[0] + 2}")  # a disk with no room left
        with pytest.raises(StoreUnavailable, match="it is full") as full, db.transaction():
            db.execute("INSERT INTO t VALUES (zeroblob(1000000))")
        assert full.value.exit_code == ExitCode.TRANSPORT
        assert str(path) in full.value.message and "free some space" in (full.value.hint or "")
    finally:
        db.close()


def test_a_write_to_a_read_only_store_is_named_and_optional_ones_are_skipped(
    tmp_path: Path,
) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        store.db.execute("PRAGMA query_only = 1")  # SQLite's own read-only refusal
        with pytest.raises(StoreReadOnly, match="it is read-only") as refused:
            store.replace_drift("profile:p@/r", [])
        assert refused.value.exit_code == ExitCode.TRANSPORT
        assert not store.read_only
        with store.if_writable():
            store.replace_drift("profile:p@/r", [])
        assert store.read_only, "skipped, and remembered so a plan can say so"
    finally:
        store.close()


def test_a_file_that_is_no_database_is_unusable_not_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"not SQLite at all\n" * 1000)
    with pytest.raises(StoreUnavailable, match="damaged, or not a SQLite database") as broken:
        Store.open(f"sqlite:///{path}")
    assert str(path) in broken.value.message and "backup" in (broken.value.hint or "")


@pytest.mark.parametrize(("text", "seconds"), [(None, 60.0), ("0.5", 0.5), ("0", 0.0)])
def test_the_wait_for_another_process_lock_is_settable(
    monkeypatch: pytest.MonkeyPatch, text: str | None, seconds: float
) -> None:
    if text is None:
        monkeypatch.delenv("TRUEUP_STATE_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("TRUEUP_STATE_TIMEOUT", text)
    assert busy_seconds() == seconds


@pytest.mark.parametrize("text", ["soon", "-1", "nan", "1e9"])
def test_a_wait_that_is_no_number_of_seconds_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setenv("TRUEUP_STATE_TIMEOUT", text)
    with pytest.raises(UsageError, match="TRUEUP_STATE_TIMEOUT"):
        busy_seconds()
