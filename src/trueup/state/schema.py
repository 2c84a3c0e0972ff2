"""Schema versions: check cheaply on every open, migrate only on demand.

Reading ``alembic_version`` with one query avoids importing Alembic on the
hot path; ``HEAD`` must name the newest migration (a test keeps them equal).

A brand-new store, SQLite or PostgreSQL, is built by the migrations
themselves: the schema has one definition, and Alembic is imported only on
the first run against a store (bench/README.md has what that costs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trueup.errors import UsageError
from trueup.redact import redact_url
from trueup.state.db import Database, busy_seconds, sqlalchemy_url, sqlite_trouble

HEAD = "0006"
KNOWN = ("0001", "0002", "0003", "0004", "0005", "0006")
MIGRATIONS = Path(__file__).parent / "migrations"


def current_revision(db: Database) -> str | None:
    if not db.table_exists("alembic_version"):
        return None
    row = db.one("SELECT version_num FROM alembic_version")
    return str(row[0]) if row else None


def ensure_current(db: Database) -> None:
    """Create an empty store; refuse one that is behind or ahead of this trueup."""
    revision = current_revision(db)
    if revision == HEAD:
        return
    if revision is None:
        migrate(db.url)
        return
    where = redact_url(db.url)
    if revision in KNOWN:
        raise UsageError(
            f"the state database {where} is at schema {revision}; this trueup needs {HEAD}",
            hint=f"run: trueup state migrate --state {where}",
        )
    raise _newer(where, revision)


def _newer(where: str, revision: str) -> UsageError:
    return UsageError(
        f"the state database {where} is at schema {revision!r}, newer than this trueup knows "
        f"({HEAD}); it was written by a newer trueup",
        hint="upgrade trueup on this machine; nothing was changed",
    )


def migrate(url: str, revision: str = "head") -> str:
    """Upgrade the store to ``revision`` with Alembic; returns the new revision."""
    import sqlalchemy

    db = Database(url)
    try:
        found = current_revision(db)
    finally:
        db.close()
    if found is not None and found not in KNOWN and found != HEAD:  # nothing to upgrade to
        raise _newer(redact_url(url), found)
    engine = sqlalchemy.create_engine(sqlalchemy_url(url))
    if engine.dialect.name == "sqlite":
        _sqlite_in_one_transaction(engine)
    try:
        _upgrade(engine, revision)
    except sqlalchemy.exc.ProgrammingError as exc:  # the database's own refusal
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        raise UsageError(
            f"the state database {redact_url(url)} cannot hold trueup's tables: {reason}",
            hint="the schema must exist and the role must be allowed to create in it "
            "(see docs/teams.md); nothing was changed",
        ) from None
    except sqlalchemy.exc.OperationalError as exc:  # locked past the wait, full, read-only
        trouble = sqlite_trouble(exc.orig, redact_url(url)) if exc.orig is not None else None
        if trouble is None:
            raise
        raise trouble from None
    return revision if revision != "head" else HEAD


def migration_sql(dialect: str, start: str | None = None, revision: str = "head") -> str:
    """The DDL of the migrations as a script (Alembic offline mode), changing nothing.

    For a DBA who applies schema changes by hand, with trueup's own role kept
    to reading and writing rows.
    """
    import io

    from alembic import command
    from alembic.config import Config

    buffer = io.StringIO()
    config = Config(output_buffer=buffer)
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["dialect"] = dialect
    command.upgrade(config, f"{start}:{revision}" if start else revision, sql=True)
    return buffer.getvalue()


def _upgrade(engine: Any, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    try:
        with engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.exec_driver_sql("SELECT pg_advisory_xact_lock(7240731)")
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS))
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        engine.dispose()


def _sqlite_in_one_transaction(engine: Any) -> None:
    """Run a SQLite store's migrations in one transaction that holds the file's write lock.

    Python's sqlite3 driver opens a transaction only before an INSERT, UPDATE
    or DELETE: every CREATE and ALTER before the first one would commit on its
    own, each with its disk flush, and a first run stopped there would leave a
    half-built store that no later run could build on. With the driver's own
    transaction handling off, SQLAlchemy's begin is a BEGIN IMMEDIATE (as
    SQLAlchemy's documentation shows): all the migrations or none, and another
    process migrating the same file waits for them, as PostgreSQL's advisory
    lock makes it.
    """
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _driver_transactions_off(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        # As long as any other use of the store waits for another process's lock.
        dbapi_connection.execute(f"PRAGMA busy_timeout={int(busy_seconds() * 1000)}")

    @event.listens_for(engine, "begin")
    def _begin_immediate(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
