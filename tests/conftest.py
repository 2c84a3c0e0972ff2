"""Fixtures shared by every test directory.

Migrating a fresh SQLite store costs an Alembic start-up; tests copy one
migrated template instead (``fresh_state``), which keeps the suite fast
without skipping the real migrations (they run once per session, here).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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
