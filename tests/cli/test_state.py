"""``trueup state migrate``: upgrade a store, or print the DDL for a DBA."""

from __future__ import annotations

from world import World


def test_migrate_a_current_store_says_its_schema(world: World) -> None:
    result = world.run("state", "migrate")
    assert result.code == 0, result.err
    assert "is at schema" in result.out


def test_migrate_builds_a_new_store_with_the_migrations(world: World) -> None:
    url = f"sqlite:///{world.base / 'new.db'}"
    result = world.run("state", "migrate", "--state", url)
    assert result.code == 0, result.err
    assert world.run("status", "--state", url).code == 0


def test_migrate_sql_prints_the_ddl_and_changes_nothing(world: World) -> None:
    result = world.run("state", "migrate", "--sql", "sqlite")
    assert result.code == 0 and "CREATE TABLE" in result.out


def test_a_store_that_cannot_be_opened_exits_6(world: World) -> None:
    # Nothing listens on port 1: the store cannot be opened, which is transport (6).
    unreachable = "postgresql://trueup@127.0.0.1:1/trueup?connect_timeout=5"
    for args in (("status",), ("status", "--json"), ("audit", "list")):
        result = world.run(*args, "--state", unreachable)
        assert result.code == 6, (args, result.out, result.err)
    damaged = world.base / "damaged.db"
    damaged.write_text("not a database")
    assert world.run("status", "--state", f"sqlite:///{damaged}").code == 6
