"""``trueup audit``: list the append-only log; verify its hash chain."""

from __future__ import annotations

import sqlite3

from world import World


def test_audit_list_shows_what_was_planned_and_applied(world: World, profile: str) -> None:
    assert world.run("plan", profile, "--root", str(world.root)).code == 0
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    entries = world.run("audit", "list", "--json").json["data"]
    assert {"plan.computed", "plan.applied"} <= {e["event"] for e in entries}
    assert "plan.applied" in world.run("audit", "list").out


def test_audit_verify_passes_an_intact_log_and_fails_an_edited_one(
    world: World, profile: str
) -> None:
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    intact = world.run("audit", "verify")
    assert intact.code == 0 and "intact" in intact.out
    db = sqlite3.connect(world.data / "state.db")
    with db:
        db.execute("DROP TRIGGER IF EXISTS audit_append_only_update")
        db.execute("UPDATE audit SET outcome = 'failure' WHERE seq = 1")
    db.close()
    assert world.run("audit", "verify").code == 7


def test_audit_list_has_a_header_over_its_columns(world: World, profile: str) -> None:
    assert world.run("plan", profile, "--root", str(world.root)).code == 0
    first = world.run("audit", "list").out.splitlines()[0]
    assert first.split() == ["seq", "at", "(UTC)", "event", "outcome", "actor", "target"], first
