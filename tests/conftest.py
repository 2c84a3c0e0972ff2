"""Fixtures shared by every test directory.

Migrating a fresh SQLite store costs an Alembic start-up; tests copy one
migrated template instead (``fresh_state``), which keeps the suite fast
without skipping the real migrations (they run once per session, here).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from trueup.engine import Engine
from trueup.settings import Settings
from trueup.state.store import Store


@pytest.fixture(scope="session")
def state_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "state.db"
    Store.open(f"sqlite:///{path}").close()
    return path


@pytest.fixture
def fresh_state(state_template: Path) -> StateFactory:
    return StateFactory(state_template)


class StateFactory:
    """Puts a migrated, empty SQLite store at a data directory's default place."""

    def __init__(self, template: Path) -> None:
        self.template = template

    def into(self, data_dir: Path) -> Path:
        data_dir.mkdir(parents=True, exist_ok=True)
        target = data_dir / "state.db"
        shutil.copyfile(self.template, target)
        return target


@pytest.fixture
def engine(tmp_path: Path, fresh_state: StateFactory) -> Iterator[Engine]:
    """An engine on a fresh SQLite store of its own under ``tmp_path/data``."""
    data = tmp_path / "data"
    fresh_state.into(data)
    opened = Engine(Settings(data=data, state_url=f"sqlite:///{data / 'state.db'}", actor="t"))
    yield opened
    opened.close()


# ---------------------------------------------------------------------------
# State back ends (issue 3, shared state): every store test runs on both.
#
# ``store_url`` is a migrated, empty store: a SQLite file copied from the
# template, or a fresh PostgreSQL schema of its own (dropped afterwards),
# reached through ``?options=-csearch_path=...`` like any user's URL would.
# PostgreSQL comes from TRUEUP_TEST_POSTGRES_URL; when it is unreachable the
# PostgreSQL cases are skipped, except under CI=true, where they fail.
# ---------------------------------------------------------------------------
import os  # noqa: E402
import secrets  # noqa: E402
from collections.abc import Callable  # noqa: E402
from urllib.parse import quote  # noqa: E402

POSTGRES_URL = os.environ.get(
    "TRUEUP_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
_pg_problem: list[str] = []


def _postgres_unavailable() -> str | None:
    """Why PostgreSQL cannot be used (checked once per session), or ``None``."""
    if not _pg_problem:
        import psycopg

        try:
            psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
            _pg_problem.append("")
        except psycopg.Error as exc:
            _pg_problem.append(f"PostgreSQL at {POSTGRES_URL} is unreachable: {exc}".strip())
    return _pg_problem[0] or None


def require_postgres() -> None:
    problem = _postgres_unavailable()
    if problem is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{problem} (CI=true: PostgreSQL tests must run)")
    pytest.skip(f"{problem}; set TRUEUP_TEST_POSTGRES_URL to run these")


def schema_url(base: str, schema: str) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options={quote('-csearch_path=' + schema, safe='-')}"


@pytest.fixture
def postgres_schemas() -> Iterator[Callable[[], str]]:
    """Makes PostgreSQL URLs whose search_path is a new, empty schema ``t_<random>``."""
    require_postgres()
    import psycopg

    made: list[str] = []

    def make() -> str:
        schema = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        made.append(schema)
        return schema_url(POSTGRES_URL, schema)

    yield make
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        for schema in made:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def postgres_schema(postgres_schemas: Callable[[], str]) -> str:
    """A PostgreSQL URL whose search_path is a new, empty schema (dropped afterwards)."""
    return postgres_schemas()


@pytest.fixture(scope="session")
def postgres_ddl() -> str:
    """The migrations as one PostgreSQL script (Alembic offline mode), rendered once.

    Replaying it costs one round trip instead of an Alembic start-up per test;
    tests/state/test_store_backends.py checks that it builds exactly the schema
    the online migrations build.
    """
    from trueup.state.schema import migration_sql

    return migration_sql("postgresql")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path, state_template: Path) -> str:
    """A migrated, empty state store on each back end."""
    if request.param == "sqlite":
        path = tmp_path / "state" / "state.db"
        path.parent.mkdir()
        shutil.copyfile(state_template, path)
        return f"sqlite:///{path}"
    url: str = request.getfixturevalue("postgres_schema")
    ddl: str = request.getfixturevalue("postgres_ddl")
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(ddl.encode())
    return url


# ---------------------------------------------------------------------------
# A state database that goes away: a TCP proxy in front of PostgreSQL whose
# connections a test cuts, as a network failure or a server restart would.
# ---------------------------------------------------------------------------
import socket  # noqa: E402
import threading  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402


class TcpProxy:
    """Forwards loopback connections to PostgreSQL until ``cut``."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def route(self, url: str) -> str:
        """``url`` (a PostgreSQL URL) reaching its database through this proxy."""
        parts = urlsplit(url)
        user = parts.netloc.rpartition("@")[0]
        return parts._replace(netloc=f"{user}@127.0.0.1:{self.port}").geturl()

    def cut(self) -> None:
        """Refuse new connections and drop every open one, both ways."""
        self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # cut
                return
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._open += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)  # pass the end on


@pytest.fixture
def tcp_proxy() -> Iterator[TcpProxy]:
    """A proxy to the test PostgreSQL server (see ``TcpProxy``), cut afterwards."""
    require_postgres()
    parts = urlsplit(POSTGRES_URL)
    proxy = TcpProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    yield proxy
    proxy.cut()
