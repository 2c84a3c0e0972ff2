"""In-process support for kind tests: a real engine on a temp root and store."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from trueup.engine import Engine
from trueup.execute.executor import RunResult
from trueup.model import Action, ActionType, Outcome, Plan

HEAD = '[profile]\nid = "k"\nname = "Kinds"\n'


@dataclass
class Machine:
    base: Path
    root: Path
    engine: Engine

    def profile(self, body: str) -> Path:
        path = self.base / "profile.toml"
        path.write_text(HEAD + body)
        return path

    def source(self, relative: str, text: str) -> Path:
        path = self.base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def plan(self, body: str, force: tuple[str, ...] = ()) -> Plan:
        return self.engine.prepare(self.profile(body), self.root, force).plan

    def action(self, body: str, rid: str, force: tuple[str, ...] = ()) -> Action:
        return next(a for a in self.plan(body, force).actions if a.resource_id == rid)

    def preview(self, body: str, rid: str) -> str:
        """The diff a person is shown for resource ``rid`` before applying."""
        prepared = self.engine.prepare(self.profile(body), self.root, ())
        action = next(a for a in prepared.plan.actions if a.resource_id == rid)
        return self.engine.preview(prepared, action)

    def apply(self, body: str, force: tuple[str, ...] = ()) -> RunResult | None:
        prepared = self.engine.prepare(self.profile(body), self.root, force)
        # The profile's display name confirms steps that destroy data.
        return self.engine.apply(prepared, prepared.plan, confirmation="Kinds")

    def converge(self, body: str, force: tuple[str, ...] = ()) -> None:
        result = self.apply(body, force)
        assert result is None or result.outcome is Outcome.CONVERGED, result
        assert {a.type for a in self.plan(body).actions} <= {ActionType.NO_OP}

    def path(self, target: str) -> Path:
        return self.root / target

    def load(self, target: str) -> Any:
        """A config target as plain data, read by a parser that is not trueup's."""
        text = self.path(target).read_text()
        if target.endswith(".toml"):
            return tomllib.loads(text)
        if target.endswith(".json"):
            return json.loads(text)
        return YAML(typ="safe").load(text)

    def put(self, target: str, text: str) -> Path:
        path = self.path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path
