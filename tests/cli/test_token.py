"""``trueup token``: service tokens, shown once, stored as hashes."""

from __future__ import annotations

import sqlite3

from world import World


def test_a_token_is_shown_once_stored_hashed_and_revoked(world: World) -> None:
    created = world.run("token", "create", "service:ci", "--json")
    assert created.code == 0, created.err
    token = created.json["data"]["token"]
    assert token.startswith("tu_")
    db = sqlite3.connect(world.data / "state.db")
    try:
        dump = "\n".join(db.iterdump())
    finally:
        db.close()
    assert token not in dump, "only its hash is kept"
    revoked = world.run("token", "revoke", "service:ci")
    assert revoked.code == 0 and "revoked" in revoked.out
