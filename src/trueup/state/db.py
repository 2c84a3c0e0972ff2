"""A thin DB-API layer that speaks one SQL dialect to SQLite and PostgreSQL.

Alembic (and so SQLAlchemy) owns the schema and its migrations; the runtime
queries are plain portable SQL over the standard drivers. That keeps a no-op
``trueup plan`` from paying SQLAlchemy's import cost on every run, while the
schema still has exactly one definition (the migrations).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from trueup.errors import ExitCode, TrueupError, UsageError
from trueup.private import private_store_file
from trueup.redact import PLACEHOLDER, redact_url, register_url

Row = tuple[Any, ...]
Params = Mapping[str, Any]

# Matched as text: urllib refuses a malformed URL (a stray "[") before its scheme is known.
_POSTGRES = re.compile(r"postgres(ql)?(\+psycopg)?://", re.IGNORECASE)
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


PRIMARY_KEY = "primary key"
#: How long a SQLite store locked by another process is waited for, in seconds
#: (``TRUEUP_STATE_TIMEOUT``): a timer or CI job may rather give up sooner.
DEFAULT_BUSY_SECONDS = 60.0


class StoreUnavailable(TrueupError):
    """The state store stopped answering in the middle of a command.

    A dropped connection, a server gone away, a failing disk or a SQLite file
    locked for too long is no bug in trueup (exit 1): it exits 6, as any other
    transport failure. Nothing more can be journaled after it, so the hint
    names the run this process leaves unfinished, for recover.
    """

    exit_code = ExitCode.TRANSPORT


class StoreReadOnly(StoreUnavailable):
    """The store can be read but not written (its file, or its folder, is read-only).

    A plan needs nothing written (the stat cache and the drift summary only
    save time and answer ``status``), so it goes on without them; anything that
    must journal or record stops here, with nothing changed yet.
    """


def sqlite_trouble(exc: BaseException, where: str) -> StoreUnavailable | None:
    """A SQLite store that cannot be used, in words, by the driver's result code.

    ``None`` for anything else (a constraint, a bug in a query): those stay
    what they are. Each names the store and what a person can do about it.
    """
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorname", "") or ""
    reason = str(exc)
    prefix = f"the state store {where} cannot be used"
    if code.startswith("SQLITE_READONLY"):
        return StoreReadOnly(
            f"{prefix}: it is read-only ({reason})",
            hint="let this user write the file, its folder and its -wal and -shm files, or "
            "point --state / TRUEUP_STATE at a store it may write; trueup plan works meanwhile",
        )
    if code.startswith("SQLITE_CANTOPEN"):
        return StoreUnavailable(
            f"{prefix}: the file cannot be opened ({reason})",
            hint="check that this user may read and write the file and its folder, or point "
            "--state / TRUEUP_STATE at another store",
        )
    if code.startswith("SQLITE_FULL"):
        return StoreUnavailable(
            f"{prefix}: it is full, no room is left on its disk ({reason})",
            hint="free some space where the store lives, then run the command again",
        )
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreUnavailable(
            f"{prefix}: another process holds it locked, for longer than trueup waits "
            f"({busy_seconds():g} s; TRUEUP_STATE_TIMEOUT) ({reason})",
            hint="let the other process (another trueup, or a program with the database "
            "open) finish, then run the command again",
        )
    if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return StoreUnavailable(
            f"{prefix}: it is damaged, or not a SQLite database ({reason})",
            hint="restore it from a backup, or move it aside to start an empty store (trueup "
            "then has no record of what it applied, and asks before replacing those files)",
        )
    if code.startswith("SQLITE_IOERR"):
        # A file grown past its limit (a quota, ulimit -f) is an I/O error to SQLite too.
        return StoreUnavailable(
            f"{prefix}: its disk failed to read or write, or the file may not grow ({reason})",
            hint="check the disk the store lives on (free space, quota, errors), then run the "
            "command again",
        )
    return None


def busy_seconds() -> float:
    """``TRUEUP_STATE_TIMEOUT``, or a minute: how long another process's lock is waited for."""
    text = os.environ.get("TRUEUP_STATE_TIMEOUT")
    if not text:
        return DEFAULT_BUSY_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86400:
        raise UsageError(
            f"TRUEUP_STATE_TIMEOUT={text!r} is not a number of seconds from 0 to 86400",
            hint="unset TRUEUP_STATE_TIMEOUT (trueup then waits a minute)",
        )
    return value


class UniqueViolation(Exception):
    """An INSERT hit a unique constraint; ``constraint`` names it when known.

    PostgreSQL names the constraint (SQLSTATE 23505 carries it); SQLite only
    says whether it was a primary key (``PRIMARY_KEY``) or another unique
    index (``None``), by its extended result code, never by message text.
    """

    def __init__(self, constraint: str | None) -> None:
        super().__init__(constraint or "unique constraint")
        self.constraint = constraint


#: PostgreSQL's SQLSTATEs for a store trueup may read but not write: a read-only
#: transaction (a hot standby, default_transaction_read_only) or a role without the grant.
_PG_READ_ONLY = ("25006", "42501")

#: Bytes per page of a new SQLite store.
PAGE_SIZE = 16384


def _open_sqlite(path: Path) -> sqlite3.Connection:
    """Open (or create) the store's file; a mistyped or broken one is a usage error.

    The folder must exist: a typo in ``--state`` must not quietly start an
    empty store elsewhere (the default folder is made by the engine).
    """
    if not path.parent.is_dir():
        relative = "" if path.is_absolute() else " (a relative path: sqlite:////PATH is absolute)"
        raise UsageError(
            f"the state store's folder {path.parent} does not exist{relative}",
            hint=f"check --state / TRUEUP_STATE, or create it: mkdir -p {path.parent}",
        )
    private_store_file(path)  # only its owner reads what trueup applied, journaled, audited
    waited = busy_seconds()
    try:
        # Concurrent remote steps journal from worker threads; ``Database``'s lock
        # serialises every use of the one connection.
        connection = sqlite3.connect(
            path, isolation_level=None, timeout=waited, check_same_thread=False
        )
        # Only a new store takes it (an existing one keeps its size): a first apply
        # of 10,000 files journals some 40,000 rows, and 16 KiB pages write them in
        # a quarter of the system calls 4 KiB pages take.
        connection.execute(f"PRAGMA page_size={PAGE_SIZE}")
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute(f"PRAGMA busy_timeout={int(waited * 1000)}")
        # A statement journal of a batch's updates (half a megabyte each) is a file in
        # /var/tmp otherwise: another disk to write, and nothing a crash needs.
        connection.execute("PRAGMA temp_store=MEMORY")
    except sqlite3.Error as exc:
        trouble = sqlite_trouble(exc, str(path))
        if getattr(exc, "sqlite_errorname", "").startswith("SQLITE_CANTOPEN"):
            reading = _read_only_sqlite(path)
            if reading is not None:
                return reading
        raise trouble or UsageError(
            f"the state store {path} cannot be used: {exc}",
            hint="restore it from a backup, or point --state / TRUEUP_STATE at another file",
        ) from None
    return connection


def _read_only_sqlite(path: Path) -> sqlite3.Connection | None:
    """The store in a folder nobody may write in, opened to be read, if it can be.

    A WAL store needs its -shm file made beside it even to be read; where that
    cannot be, and no -wal file holds anything the main file lacks, the main
    file is the whole store, and SQLite may read it as it is (``immutable``).
    Every write then fails as read-only, which ``plan`` goes on without.
    """
    if not path.is_file() or os.path.lexists(f"{path}-wal"):
        return None
    from urllib.request import pathname2url  # rarely needed: not on the start-up path

    try:
        uri = f"file:{pathname2url(str(path.absolute()))}?immutable=1"
        connection = sqlite3.connect(uri, uri=True, isolation_level=None)
        connection.execute("PRAGMA temp_store=MEMORY")
        connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except sqlite3.Error:
        return None
    return connection


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL; a URL no file can be is a usage error."""
    if not url.startswith("sqlite:///"):
        return None
    spelt = url[len("sqlite:///") :]
    path = unquote(spelt)
    why = (
        "it names no file"
        if not path or path == ":memory:"  # a store gone with the process keeps no record
        else "it holds a NUL character"
        if "\0" in path
        else "a query (?...) is not read: name the file alone"
        if "?" in spelt
        else None
    )
    if why is not None:
        raise UsageError(
            f"the state URL {url!r} cannot be used: {why}",
            hint="write sqlite:////absolute/path/state.db (four slashes) or "
            "sqlite:///relative/path/state.db",
        )
    return Path(path)


class Database:
    """One connection to the store, with explicit transactions.

    Safe to share between threads: concurrent remote steps journal from their
    worker threads, and one re-entrant lock serialises every statement and
    holds the connection for a whole transaction, so another thread's write
    never lands inside it.
    """

    def __init__(self, url: str) -> None:
        register_url(url)  # whatever quotes the URL later never shows its password
        self.url = url
        path = sqlite_path(url)
        if path is not None:
            self.dialect = "sqlite"
            self._sqlite = _open_sqlite(path)
            self._pg: Any = None
        elif _POSTGRES.match(url):
            import psycopg

            self.dialect = "postgresql"
            try:
                self._pg = psycopg.connect(_libpq_url(url), autocommit=True)
            except psycopg.OperationalError as exc:
                # No answer, or a refusal: the store cannot be opened (exit 6, as the
                # README's exit codes say), not a mistake in the command (2).
                raise StoreUnavailable(
                    f"cannot connect to the state database {redact_url(url)}: {exc}".strip(),
                    hint="check that the server runs and accepts this user, "
                    "or point --state / TRUEUP_STATE at another store",
                ) from None
            except psycopg.ProgrammingError as exc:  # libpq could not parse it
                reason = _password_hidden(str(exc).strip(), url)
                raise UsageError(
                    f"the state URL {redact_url(url)} is not a valid PostgreSQL URL: {reason}",
                    hint="check --state / TRUEUP_STATE: postgresql://USER@HOST:PORT/DB",
                ) from None
        else:
            raise UsageError(
                f"unsupported state URL {redact_url(url)!r}",
                hint="use sqlite:///PATH or postgresql://USER@HOST:PORT/DB",
            )
        self._depth = 0
        self._lock = threading.RLock()
        #: The unfinished run this process holds (set by the store), named in
        #: the next step should the store stop answering.
        self.holding: str | None = None

    def close(self) -> None:
        if self.dialect == "sqlite":
            self._sqlite.close()
        else:
            self._pg.close()

    def _sql(self, sql: str, positional: bool = False) -> str:
        """psycopg's spelling of ``sql``: ``:name`` is ``%(name)s``; with ``positional``
        (the bulk statements: a tuple per row binds faster than a dict),
        ``?`` is ``%s``, so such a statement holds no other question mark."""
        if self.dialect == "sqlite":
            return sql
        escaped = sql.replace("%", "%%")
        return escaped.replace("?", "%s") if positional else _NAMED.sub(r"%(\1)s", escaped)

    @contextmanager
    def _driver(self) -> Iterator[None]:
        """Driver errors a caller can act on, in trueup's terms; any other as it is."""
        try:
            yield
        except Exception as exc:
            _raise_unique(exc)
            self._raise_unavailable(exc)
            raise

    def _raise_unavailable(self, exc: Exception) -> None:
        """A store that cannot be used (any more), known by the driver's error class or code.

        psycopg raises ``OperationalError`` for a connection lost or closed and for a
        server that cannot serve (shutting down, out of resources); SQLite names
        a lock held too long, a read-only or full file, a damaged one or an I/O
        error by its extended result code.
        """
        if self.dialect == "sqlite":
            trouble = sqlite_trouble(exc, str(sqlite_path(self.url)))
        else:
            trouble = _postgres_trouble(exc, redact_url(self.url))
        if trouble is None:
            return
        message, hint = trouble.message, trouble.hint
        if (run := self.holding) is not None:
            message += f"; run {run} was left unfinished"
            hint = f"once it answers again: trueup recover {run}   (or: trueup abandon {run})"
        raise type(trouble)(message, hint=hint) from exc

    def execute(self, sql: str, params: Params | None = None) -> list[Row]:
        with self._lock, self._driver():
            if self.dialect == "sqlite":
                cursor = self._sqlite.execute(sql, params or {})
                return cursor.fetchall()
            with self._pg.cursor() as cur:
                cur.execute(self._sql(sql), params or {})
                return list(cur.fetchall()) if cur.description else []

    def execute_count(self, sql: str, params: Params | None = None) -> int:
        """Run a write statement; how many rows it changed."""
        with self._lock, self._driver():
            if self.dialect == "sqlite":
                return int(self._sqlite.execute(sql, params or {}).rowcount)
            with self._pg.cursor() as cur:
                cur.execute(self._sql(sql), params or {})
                return int(cur.rowcount)

    def executemany(self, sql: str, rows: Sequence[Params] | Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        with self._lock, self._driver():
            if self.dialect == "sqlite":
                self._sqlite.executemany(sql, rows)
            else:
                with self._pg.cursor() as cur:
                    positional = not isinstance(rows[0], Mapping)
                    cur.executemany(self._sql(sql, positional), rows)

    def one(self, sql: str, params: Params | None = None) -> Row | None:
        rows = self.execute(sql, params)
        return rows[0] if rows else None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction; nested calls (same thread) join the outer one."""
        with self._lock, self._transaction():
            yield

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._depth = 1
        try:
            with self._driver():
                if self.dialect == "sqlite":
                    self._sqlite.execute("BEGIN IMMEDIATE")
                    try:
                        yield
                    except BaseException:
                        # An I/O error (or a busy one) may have rolled it back already,
                        # and "no transaction is active" must not hide why.
                        if self._sqlite.in_transaction:
                            self._sqlite.execute("ROLLBACK")
                        raise
                    self._sqlite.execute("COMMIT")
                else:
                    with self._pg.transaction():
                        yield
        finally:
            self._depth = 0

    def table_exists(self, name: str) -> bool:
        """Whether ``name`` exists where unqualified queries look (PostgreSQL: search_path)."""
        if self.dialect == "sqlite":
            sql = "SELECT 1 FROM sqlite_master WHERE type='table' AND name=:name"
        else:
            sql = "SELECT 1 FROM pg_catalog.pg_class WHERE oid = to_regclass(:name)"
        return self.one(sql, {"name": name}) is not None

    @property
    def epoch_sql(self) -> str:
        """SQL for the database's clock in epoch seconds.

        Leases compare against the database's clock, never a worker's, so
        workers on hosts with skewed clocks still agree on when a lease ends.
        """
        if self.dialect == "sqlite":
            return "((julianday('now') - 2440587.5) * 86400.0)"
        return "CAST(extract(epoch FROM clock_timestamp()) AS double precision)"


def _postgres_trouble(exc: Exception, where: str) -> StoreUnavailable | None:
    """A PostgreSQL store that cannot be used, in words, by SQLSTATE or error class."""
    import psycopg  # already loaded by the connection

    reason = " ".join(str(exc).split())  # libpq's reasons span indented lines
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate in _PG_READ_ONLY:
        return StoreReadOnly(
            f"the state store {where} cannot be used: trueup's role may not write it ({reason})",
            hint="grant the role the right to write trueup's tables (docs/teams.md), or point "
            "--state / TRUEUP_STATE at a store it may write",
        )
    if sqlstate == "53100":  # disk_full
        return StoreUnavailable(
            f"the state store {where} cannot be used: its disk is full ({reason})",
            hint="free space on the database server, then run the command again",
        )
    if isinstance(exc, psycopg.OperationalError):
        return StoreUnavailable(
            f"the state store {where} stopped answering ({reason})",
            hint="once it answers again, run the command again (trueup status: any run left over)",
        )
    return None


def _raise_unique(exc: Exception) -> None:
    """Translate a driver's unique violation by its code, never its message."""
    if isinstance(exc, sqlite3.IntegrityError):
        name = getattr(exc, "sqlite_errorname", "")
        if name == "SQLITE_CONSTRAINT_UNIQUE":
            raise UniqueViolation(None) from exc
        if name == "SQLITE_CONSTRAINT_PRIMARYKEY":
            raise UniqueViolation(PRIMARY_KEY) from exc
        return
    if getattr(exc, "sqlstate", None) == "23505":
        diag = getattr(exc, "diag", None)
        raise UniqueViolation(getattr(diag, "constraint_name", None)) from exc


def _password_hidden(text: str, url: str) -> str:
    """``text`` (libpq quotes what it could not parse) without the URL's password."""
    text = text.replace(_libpq_url(url), redact_url(url))
    password = re.match(r"[^:]*://[^:/@]+:([^@]*)@", url)
    return text.replace(password[1], PLACEHOLDER) if password and password[1] else text


def _libpq_url(url: str) -> str:
    return re.sub(r"^postgres(ql)?(\+psycopg)?://", "postgresql://", url)


def sqlalchemy_url(url: str) -> str:
    if sqlite_path(url) is not None:
        return url
    return re.sub(r"^postgres(ql)?(\+psycopg)?://", "postgresql+psycopg://", url)
