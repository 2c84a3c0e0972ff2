"""Support for the org engine tests: the sample org and a driver for plans and applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trueup.org.engine import OrgApplied, OrgEngine, OrgPrepared
from trueup.providers.http import RetryPolicy
from trueup.settings import Settings
from trueup.testing import FakeProviders
from trueup.testing.acme import ACME_ORG

ORG = ACME_ORG


class Orgs:
    """Runs plans and applies of org files the way the CLI does, in this process."""

    def __init__(self, fakes: FakeProviders, base: Path) -> None:
        self.fakes = fakes
        self.base = base
        self.data = base / "data"
        self.settings = Settings(data=self.data, state_url=f"sqlite:///{self.data / 'state.db'}")
        self.env = fakes.env()
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
