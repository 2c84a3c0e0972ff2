"""No declared secret anywhere but its target, through plan, apply, a kill -9 and recover.

Secrets are declared every way there is: a config key marked secret, a key
whose name says so, an environment reference, a secret file's content, and an
app variable of an org (sealed by default) applied against the fake providers.
After human and JSON plans, a saved plan, an apply, an apply killed mid-run and
``trueup recover``, every output, every file under the data folder, the SQLite
bytes and (on PostgreSQL) every row of every table are scanned for each value.
"""

from __future__ import annotations

import signal

from world import Result, World

from trueup.testing import FakeProviders
from trueup.testing.acme import ACME_ORG, seed_acme

MARKED = "marked-config-secret-5150"
NAMED = "named-token-secret-6160"
FROM_ENV = "env-reference-secret-7170"
ROTATED = "rotated-reference-secret-8180"
FILE = "secret-file-content-9190"
APP_VAR = "coolify-app-secret-1020"
APP_REF = "coolify-env-ref-secret-2030"
SECRETS = (MARKED, NAMED, FROM_ENV, ROTATED, FILE, APP_VAR, APP_REF)

PROFILE = f"""
[profile]
id = "scan"
name = "Scan"

[[resource]]
id = "cfg"
kind = "config"
target = "app/config.toml"
keys = {{ model = "gpt-5", "db.key" = "{MARKED}", "auth.api_token" = "{NAMED}", "db.url" = {{ env = "SCAN_DB_URL" }} }}
secret = ["db.key"]

[[resource]]
id = "key-file"
kind = "file"
target = "keys/service.key"
content = "{FILE}"
secret = true
"""
ORG = ACME_ORG.replace(
    'env = { LOG_LEVEL = "info" }',
    f'env = {{ LOG_LEVEL = "info", SESSION = "{APP_VAR}", UPSTREAM = {{ env = "SCAN_APP_REF" }} }}\n'
    'public_env = ["LOG_LEVEL"]',
)


class Scan:
    """Runs ``trueup`` against one state store and keeps every output to scan."""

    def __init__(self, world: World, fakes: FakeProviders, store_url: str) -> None:
        self.world = world
        self.outputs: list[str] = []
        self.env = {
            **fakes.env(),
            "TRUEUP_STATE": store_url,
            "SCAN_DB_URL": FROM_ENV,
            "SCAN_APP_REF": APP_REF,
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }

    def run(self, *args: str, **extra: str) -> Result:
        result = self.world.run(*args, env={**self.env, **extra})
        self.outputs += [result.out, result.err]
        return result


def test_no_declared_secret_is_shown_or_stored(
    world: World, running_fakes: FakeProviders, store_url: str
) -> None:
    seed_acme(running_fakes)
    scan = Scan(world, running_fakes, store_url)
    profile = str(world.write("scan.toml", PROFILE))
    org = str(world.write("acme.toml", ORG))
    root = ("--root", str(world.root))
    saved, org_saved = world.base / "plan.json", world.base / "org-plan.json"

    assert scan.run("plan", profile, *root).code == 0
    assert scan.run("plan", profile, *root, "--json").json["status"] == "changes-pending"
    assert scan.run("plan", profile, *root, "-o", str(saved)).code == 0
    applied = scan.run("apply", str(saved), "--yes")
    assert applied.code == 0, applied.out + applied.err
    config = world.target("app/config.toml").read_text()
    assert MARKED in config and NAMED in config and FROM_ENV in config
    assert world.target("keys/service.key").read_text() == FILE

    assert scan.run("org", "plan", org).code == 0
    assert scan.run("org", "plan", org, "--json").code == 0
    assert scan.run("org", "plan", org, "-o", str(org_saved)).code == 0
    applied = scan.run("org", "apply", str(org_saved), "--confirm", "Acme Inc")
    assert applied.code == 0, applied.out + applied.err

    # The reference now holds a new value: an apply killed mid-write, then recovered.
    scan.env["SCAN_DB_URL"] = ROTATED
    killed = scan.run("apply", profile, *root, "--yes", TRUEUP_CRASH_AT="mutated:1")
    assert killed.code == -signal.SIGKILL, killed.out + killed.err
    recovered = scan.run("recover")
    assert recovered.code == 0, recovered.out + recovered.err
    assert ROTATED in world.target("app/config.toml").read_text()
    assert scan.run("plan", profile, *root).code == 0
    assert scan.run("audit", "list", "--json", "--limit", "200").code == 0
    assert scan.run("status", "--json").code in (0, 3)

    found = {
        secret: where
        for secret in SECRETS
        for where in _places(scan, world, store_url)
        if secret.encode() in where[1]
    }
    assert not found, {s: w[0] for s, w in found.items()}


def _places(scan: Scan, world: World, store_url: str) -> list[tuple[str, bytes]]:
    """Every output, every file under the data folder and beside the plans, the
    SQLite bytes, and every PostgreSQL row, each with a name for the failure."""
    places = [(f"output #{i}", text.encode()) for i, text in enumerate(scan.outputs)]
    folders = [world.data, world.base / "state"]
    files = [p for folder in folders if folder.exists() for p in folder.rglob("*")]
    files += [world.base / "plan.json", world.base / "org-plan.json"]
    places += [(str(p), p.read_bytes()) for p in files if p.is_file()]
    if store_url.startswith("postgresql"):
        places += _postgres_rows(store_url)
    return places


def _postgres_rows(url: str) -> list[tuple[str, bytes]]:
    import psycopg

    rows: list[tuple[str, bytes]] = []
    with psycopg.connect(url) as db:
        tables = [
            str(t)
            for (t,) in db.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        ]
        assert {"audit", "journal", "applied_resources"} <= set(tables), tables
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                rows.append((f"postgresql {table}", repr(row).encode()))
    return rows
