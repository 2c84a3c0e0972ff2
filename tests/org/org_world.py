"""Support for the org engine tests: the sample org and a driver for plans and applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trueup.org.engine import OrgApplied, OrgEngine, OrgPrepared
from trueup.providers.http import RetryPolicy
from trueup.settings import Settings
from trueup.testing import FakeProviders

ORG = """
[org]
id = "acme"
name = "Acme Inc"
domain = "acme.test"

[[identity.project]]
name = "portal"
roles = ["admin", "member"]
apps = [{ name = "portal-web", redirect_uris = ["https://portal.acme.test/callback"] }]

[[dns]]
type = "A"
name = "portal"
content = "203.0.113.10"

[mail]
level = "forward"
routes = [{ address = "hello@acme.test", forward_to = ["founders@example.com"] }]

[[app]]
name = "portal"
image = "ghcr.io/acme/portal:1.4.2"
domains = ["https://portal.acme.test"]
env = { LOG_LEVEL = "info" }

[chat]
image = "ghcr.io/acme/chat:2.1"
"""


class Orgs:
    """Runs plans and applies of org files the way the CLI does, in this process."""

    def __init__(self, fakes: FakeProviders, base: Path) -> None:
        self.fakes = fakes
        self.base = base
        self.data = base / "data"
        self.settings = Settings(data=self.data, state_url=f"sqlite:///{self.data / 'state.db'}")
        self.env = {
            "TRUEUP_CLOUDFLARE_URL": fakes.cloudflare_url,
            "TRUEUP_CLOUDFLARE_TOKEN": fakes.tokens.cloudflare,
            "TRUEUP_COOLIFY_URL": fakes.coolify_url,
            "TRUEUP_COOLIFY_TOKEN": fakes.tokens.coolify,
            "TRUEUP_ZITADEL_URL": fakes.zitadel_url,
            "TRUEUP_ZITADEL_TOKEN": fakes.tokens.zitadel,
        }
        self.engines: list[OrgEngine] = []

    def write(self, text: str, name: str = "acme.toml") -> Path:
        path = self.base / name
        path.write_text(text)
        return path

    def engine(self) -> OrgEngine:
        engine = OrgEngine(self.settings, env=self.env, policy=RetryPolicy(attempts=2, base=0.001))
        self.engines.append(engine)
        return engine

    def plan(self, path: Path, force: tuple[str, ...] = ()) -> OrgPrepared:
        return self.engine().plan(path, force)

    def apply(
        self, path: Path, confirm: str | None = "Acme Inc", force: tuple[str, ...] = ()
    ) -> OrgApplied:
        engine = self.engine()
        prepared = engine.prepare(path, force, permission="apply")
        return engine.apply(prepared, prepared.plan, confirm)

    def steps(self, path: Path) -> dict[str, Any]:
        """Resource id -> the step word of every non-no-op action."""
        return {
            a.resource_id: a.payload.get("op", a.type.value)
            for a in self.plan(path).plan.actions
            if a.type.value != "no-op"
        }

    def close(self) -> None:
        for engine in self.engines:
            engine.close()
