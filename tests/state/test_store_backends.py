"""The store on SQLite and PostgreSQL: schema versions, URLs, the lock, unique violations."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from trueup.errors import ConflictError, ExitCode, UsageError
from trueup.execute.gates import acquire
from trueup.model import Plan, Target
from trueup.state import schema
from trueup.state.db import PAGE_SIZE, Database, StoreUnavailable, UniqueViolation
from trueup.state.store import RunLocked, Store

TRUEUP = str(Path(sys.executable).parent / "trueup")
WS = Target("profile", "ws", "Workstation", "/srv/ws")


@pytest.fixture(params=["sqlite", "postgresql"])
def blank_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database, not migrated at all."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'blank.db'}"
    url: str = request.getfixturevalue("postgres_schema")
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = Store.open(store_url)
    yield opened
    opened.close()


def plan_for(target: Target) -> Plan:
    return Plan(target, "/srv/profile.toml", "d" * 64, {}, ())


def test_head_is_alembics_head() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(schema.MIGRATIONS))
    scripts = ScriptDirectory.from_config(config)
    assert scripts.get_heads() == [schema.HEAD]
    assert [s.revision for s in scripts.walk_revisions()][::-1] == list(schema.KNOWN)


def test_postgres_options_reach_psycopg_and_alembic(postgres_schema: str) -> None:
    Store.open(postgres_schema).close()  # Alembic (SQLAlchemy + psycopg) creates the tables
    schema_name = postgres_schema.rsplit("%3D", 1)[1]
    db = Database(postgres_schema)  # plain psycopg
    try:
        assert db.one("SELECT current_schema()") == (schema_name,)
        tables = {
            r[0]
            for r in db.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = :s",
                {"s": schema_name},
            )
        }
        assert {"alembic_version", "runs", "audit", "grants"} <= tables
        assert db.one("SELECT version_num FROM alembic_version") == (schema.HEAD,)
    finally:
        db.close()


def test_a_store_behind_says_how_to_migrate(blank_url: str) -> None:
    schema.migrate(blank_url, "0001")
    with pytest.raises(UsageError) as caught:
        Store.open(blank_url)
    assert f"is at schema 0001; this trueup needs {schema.HEAD}" in caught.value.message
    assert caught.value.hint is not None and "trueup state migrate" in caught.value.hint
    done = subprocess.run(
        [TRUEUP, "state", "migrate", "--state", blank_url],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("TRUEUP_")},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"is at schema {schema.HEAD}" in done.stdout
    Store.open(blank_url).close()


def test_a_build_that_fails_leaves_the_store_as_it_was(blank_url: str) -> None:
    """All migrations or none: a first run stopped half-way (here by a table in the way
    of migration 0003) leaves no half-built store, which no later run could build on."""
    db = Database(blank_url)
    db.execute("CREATE TABLE org_states (in_the_way INTEGER)")
    db.close()
    with pytest.raises(Exception, match="org_states"):
        schema.migrate(blank_url)
    db = Database(blank_url)
    try:
        assert not db.table_exists("runs") and not db.table_exists("alembic_version")
        db.execute("DROP TABLE org_states")
    finally:
        db.close()
    assert schema.migrate(blank_url) == schema.HEAD
    Store.open(blank_url).close()


def test_first_runs_at_once_build_one_store(tmp_path: Path) -> None:
    """Several trueup commands started together on a new machine: one builds the store,
    the others wait for it and find it built."""
    url = f"sqlite:///{tmp_path / 'new.db'}"
    opening = "import sys\nfrom trueup.state.store import Store\nStore.open(sys.argv[1]).close()\n"
    runs = [
        subprocess.Popen([sys.executable, "-c", opening, url], stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    failures = [err for run in runs if (err := run.communicate(timeout=60)[1]) and run.returncode]
    assert failures == []
    db = Database(url)
    try:
        assert db.execute("SELECT version_num FROM alembic_version") == [(schema.HEAD,)]
    finally:
        db.close()


def test_a_new_store_locked_past_the_wait_is_named_and_left_unbuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding a new store's write lock longer than trueup waits
    (TRUEUP_STATE_TIMEOUT): the store is named, with the next step, not a driver error."""
    import sqlite3

    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    monkeypatch.setenv("TRUEUP_STATE_TIMEOUT", "0.2")
    try:
        with pytest.raises(StoreUnavailable, match="locked") as refused:
            schema.migrate(f"sqlite:///{path}")
        assert refused.value.exit_code == ExitCode.TRANSPORT
        assert "TRUEUP_STATE_TIMEOUT" in refused.value.message
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert schema.migrate(f"sqlite:///{path}") == schema.HEAD


def test_a_store_ahead_is_refused_untouched(store_url: str) -> None:
    db = Database(store_url)
    db.execute("UPDATE alembic_version SET version_num = '0099'")
    db.close()
    with pytest.raises(UsageError, match="newer than this trueup knows") as caught:
        Store.open(store_url)
    assert caught.value.exit_code == ExitCode.USAGE
    db = Database(store_url)
    assert db.one("SELECT version_num FROM alembic_version") == ("0099",)
    db.close()


def test_unique_violations_are_known_by_code_never_by_message(store: Store) -> None:
    db = store.db
    row = {"id": "r", "key": "k", "t": "{}", "h": "h", "a": "a", "at": "2024"}
    insert = (
        "INSERT INTO runs (id, target_key, target, status, host, pid, actor, started_at) "
        "VALUES (:id, :key, :t, 'running', :h, 1, :a, :at)"
    )
    db.execute(insert, row)
    with pytest.raises(UniqueViolation) as caught:
        db.execute(insert, {**row, "id": "r2"})
    assert caught.value.constraint in (None, "runs_one_active_per_target")
    if db.dialect == "postgresql":
        assert caught.value.constraint == "runs_one_active_per_target"
        # The code decides: a 23505 with any words is a unique violation...
        with pytest.raises(UniqueViolation) as odd:
            db.execute(
                "DO $$ BEGIN RAISE EXCEPTION 'nothing to see' USING ERRCODE = '23505', "
                "CONSTRAINT = 'runs_one_active_per_target'; END $$"
            )
        assert odd.value.constraint == "runs_one_active_per_target"
        # ...and the words alone, with another code, are not.
        with pytest.raises(Exception) as lookalike:
            db.execute(
                "DO $$ BEGIN RAISE EXCEPTION 'duplicate key value violates unique constraint "
                "\"runs_one_active_per_target\"' USING ERRCODE = 'P0001'; END $$"
            )
    else:
        db.execute(
            "CREATE TEMP TRIGGER lookalike BEFORE INSERT ON journal BEGIN "
            "SELECT RAISE(ABORT, 'UNIQUE constraint failed: runs.target_key'); END"
        )
        with pytest.raises(Exception) as lookalike:
            db.execute("INSERT INTO journal (run_id, event, at) VALUES ('r', 'e', 'now')")
    assert not isinstance(lookalike.value, UniqueViolation)
    assert "unique constraint" in str(lookalike.value).lower()


def test_the_lock_refuses_a_second_run_and_names_the_holder(store: Store) -> None:
    first = acquire(store, WS, plan_for(WS), "user:alice")
    with pytest.raises(RunLocked) as raw:
        store.start_run(WS, "e" * 64, None, "user:bob")
    assert raw.value.holder is not None and raw.value.holder.id == first.id
    with pytest.raises(ConflictError) as caught:
        acquire(store, WS, plan_for(WS), "user:bob")
    error = caught.value
    assert error.exit_code == ExitCode.CONFLICT
    for part in (first.id, f"host {socket.gethostname()}", f"pid {os.getpid()}", first.started_at):
        assert part in error.message
    assert "is still running" in error.message
    other = Target("profile", "ws", "Workstation", "/srv/other")
    assert acquire(store, other, plan_for(other), "user:bob").id != first.id, "per target"


def test_a_dead_holder_on_this_host_is_reported(store: Store) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run = store.start_run(WS, "e" * 64, None, "user:alice")
    store.db.execute("UPDATE runs SET pid = :pid WHERE id = :id", {"pid": dead.pid, "id": run.id})
    with pytest.raises(ConflictError) as caught:
        acquire(store, WS, plan_for(WS), "user:bob")
    assert "its process is gone" in caught.value.message
    assert caught.value.hint is not None and f"trueup recover {run.id}" in caught.value.hint


def test_of_two_processes_taking_over_a_dead_run_only_one_gets_it(store: Store) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run = store.start_run(WS, "e" * 64, None, "user:alice")
    store.db.execute("UPDATE runs SET pid = :pid WHERE id = :id", {"pid": dead.pid, "id": run.id})
    seen = [r for r in store.blocked_runs() if r.id == run.id]  # what both processes read
    assert len(seen) == 1 and seen[0].holder_alive is False
    store.take_over(seen[0])  # the first one
    with pytest.raises(ConflictError, match="taken over by another trueup process"):
        store.take_over(seen[0])  # the second, with what it read before the first took it


def _catalog(url: str) -> dict[str, list[tuple[object, ...]]]:
    db = Database(url)
    try:
        return {
            "columns": db.execute(
                "SELECT table_name, column_name, data_type, is_nullable, column_default "
                "FROM information_schema.columns WHERE table_schema = current_schema() "
                "ORDER BY 1, 2"
            ),
            "indexes": db.execute(
                "SELECT tablename, indexname, regexp_replace(indexdef, ' ON \\S+\\.', ' ON ') "
                "FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1, 2"
            ),
            "triggers": db.execute(
                "SELECT tgname, tgtype, tgenabled FROM pg_trigger t JOIN pg_class c "
                "ON c.oid = t.tgrelid WHERE c.relnamespace = current_schema()::regnamespace "
                "AND NOT tgisinternal ORDER BY 1"
            ),
            "version": db.execute("SELECT version_num FROM alembic_version"),
        }
    finally:
        db.close()


def test_the_offline_script_builds_what_the_online_migrations_build(
    postgres_schemas: Callable[[], str], postgres_ddl: str
) -> None:
    """``state migrate --sql`` (and the test fixture) build what Alembic builds online."""
    import psycopg

    online_url, scripted_url = postgres_schemas(), postgres_schemas()
    Store.open(online_url).close()  # online, through Alembic and SQLAlchemy
    with psycopg.connect(scripted_url, autocommit=True) as conn:
        conn.execute(postgres_ddl.encode())
    online, offline = _catalog(online_url), _catalog(scripted_url)
    assert online["version"] == [(schema.HEAD,)] and len(online["triggers"]) == 4
    assert online == offline


def test_a_new_sqlite_store_is_built_by_alembic_with_the_stores_settings(
    tmp_path: Path,
) -> None:
    """One schema, the migrations': a first run builds its store with them, WAL and big pages."""
    path = tmp_path / "new.db"
    Store.open(f"sqlite:///{path}").close()
    db = Database(f"sqlite:///{path}")
    try:
        triggers = db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        assert ("audit_append_only_update",) in triggers
        assert db.execute("SELECT version_num FROM alembic_version") == [(schema.HEAD,)]
        assert db.execute("PRAGMA journal_mode") == [("wal",)]
        assert db.execute("PRAGMA page_size") == [(PAGE_SIZE,)]
    finally:
        db.close()
    assert not list(schema.MIGRATIONS.glob("*.sql")), "the migrations are the only schema"


def test_the_run_this_process_holds_is_what_a_lost_store_names(store: Store) -> None:
    """Held from its start (or take-over) until it is over; interrupted, it still needs recover."""
    run = store.start_run(WS, "e" * 64, None, "user:alice")
    assert store.db.holding == run.id
    store.set_run_status(run.id, "interrupted", "interrupted", "stopped")
    assert store.db.holding == run.id
    store.set_run_status(run.id, "finished", "converged", "")
    assert store.db.holding is None
