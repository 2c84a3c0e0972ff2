"""The audit log on both back ends: append-only, hash-chained, linear under concurrency."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from trueup import audit
from trueup.authz import Actor
from trueup.model import Target
from trueup.redact import register_secret
from trueup.state.store import Store

ALICE = Actor("human", "alice", "Alice Example")
CI = Actor("service", "ci", "ci")
ACME = Target("org", "acme", "Acme Inc", "")
WS = Target("profile", "ws", "Workstation", "/home/alice")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = Store.open(store_url)
    yield opened
    opened.close()


def fill(store: Store, n: int = 5) -> None:
    for i in range(n):
        audit.record(store, "plan.computed", "success", ALICE, ACME, plan_digest=f"{i:064x}")


def untriggered(store: Store, *statements: str) -> None:
    """Tamper as someone with write access to the database would: around the trigger."""
    db = store.db
    if db.dialect == "postgresql":
        db.execute("ALTER TABLE audit DISABLE TRIGGER USER")
    else:
        for verb in ("update", "delete"):
            db.execute(f"DROP TRIGGER IF EXISTS audit_append_only_{verb}")
    for sql in statements:
        db.execute(sql)
    if db.dialect == "postgresql":
        db.execute("ALTER TABLE audit ENABLE TRIGGER USER")


def problems(store: Store) -> list[str]:
    return audit.verify(store).problems


def test_rows_chain_and_read_newest_first(store: Store) -> None:
    first = audit.record(store, "plan.computed", "success", ALICE, WS, plan_digest="d" * 64)
    audit.record(store, "plan.applied", "refused", CI, ACME, reason="not authorized")
    third = audit.record(store, "plan.applied", "success", ALICE, WS, run_id="r1")
    assert first.prev_hash == audit.GENESIS and first.seq == 1
    newest = audit.entries(store)
    assert [e.seq for e in newest] == [3, 2, 1]
    assert newest[1].actor == {"type": "service", "id": "ci", "name": "ci"}
    assert newest[1].target == {"kind": "org", "id": "acme", "name": "Acme Inc"}
    assert newest[1].reason == "not authorized" and newest[1].outcome == "refused"
    assert [e.seq for e in audit.entries(store, target="profile:ws@*")] == [3, 1]
    assert [e.seq for e in audit.entries(store, target="acme")] == [2]
    assert [e.seq for e in audit.entries(store, event="plan.applied")] == [3, 2]
    report = audit.verify(store)
    assert report.ok and report.rows == 3 and report.head == third.hash
    assert audit.verify(store, anchor=(3, third.hash)).ok


def test_the_database_refuses_update_and_delete(store: Store) -> None:
    fill(store, 2)
    for sql in ("UPDATE audit SET outcome = 'success'", "DELETE FROM audit WHERE seq = 1"):
        with pytest.raises(Exception, match="append-only"), store.db.transaction():
            store.db.execute(sql)
    assert audit.verify(store).rows == 2


def test_an_edited_row_is_caught(store: Store) -> None:
    fill(store)
    untriggered(store, "UPDATE audit SET outcome = 'refused' WHERE seq = 3")
    assert problems(store) == ["row 3 was edited (its hash does not match)"]


def test_a_json_column_edited_into_something_else_is_caught_not_a_crash(store: Store) -> None:
    fill(store)
    untriggered(store, "UPDATE audit SET actor = 'x' WHERE seq = 1")
    assert problems(store) == ["row 1 was edited (its hash does not match)"]
    assert audit.entries(store)[-1].actor == {"not_json": "x"}


def test_a_deleted_row_is_caught(store: Store) -> None:
    fill(store)
    untriggered(store, "DELETE FROM audit WHERE seq = 2")
    found = problems(store)
    assert "row(s) 2 missing (deleted)" in found
    assert any("row 3 does not follow" in p for p in found)


def test_a_swapped_pair_is_caught(store: Store) -> None:
    fill(store)
    untriggered(
        store,
        "UPDATE audit SET seq = CASE seq WHEN 2 THEN -3 ELSE -2 END WHERE seq IN (2, 3)",
        "UPDATE audit SET seq = -seq WHERE seq < 0",
    )
    found = problems(store)
    assert "row 2 was edited (its hash does not match)" in found
    assert "row 3 was edited (its hash does not match)" in found
    assert any("row 2 does not follow" in p for p in found)


def test_a_truncated_tail_is_caught_with_an_anchor(store: Store) -> None:
    fill(store, 3)
    head = audit.verify(store)
    untriggered(store, "DELETE FROM audit WHERE seq = 3")
    assert audit.verify(store).ok, "a shorter chain is consistent on its own"
    report = audit.verify(store, anchor=(head.head_seq, head.head))
    assert report.problems == ["anchor row 3 is gone (the log was truncated)"]


def test_reasons_are_redacted(store: Store) -> None:
    register_secret("s3cr3t-value-xyz")
    entry = audit.record(
        store, "plan.applied", "failed", ALICE, ACME, reason="token s3cr3t-value-xyz rejected"
    )
    assert entry.reason == "token [REDACTED] rejected"
    assert "s3cr3t" not in str(store.db.execute("SELECT * FROM audit"))


def test_eight_concurrent_writers_keep_one_linear_chain(store: Store, store_url: str) -> None:
    per_writer = 15
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def write(n: int) -> None:
        own = Store.open(store_url)
        try:
            start.wait()
            for i in range(per_writer):
                actor = Actor("service", f"w{n}", f"writer {n}")
                audit.record(own, "plan.computed", "success", actor, ACME, detail={"i": i})
        except BaseException as exc:
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    report = audit.verify(store)
    assert report.ok, report.problems
    assert report.rows == 8 * per_writer == report.head_seq
    hashes = [r[0] for r in store.db.execute("SELECT prev_hash FROM audit")]
    assert len(set(hashes)) == len(hashes), "no two rows share a parent: no fork"
