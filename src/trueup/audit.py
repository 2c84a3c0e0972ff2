"""The audit log: who planned and applied what, append-only and hash-chained.

Each row's hash is the sha256 of the canonical JSON of the row, including the
previous row's hash, so editing, deleting or reordering any row breaks the
chain from that row on, and ``verify`` says where. Appends are serialised so
the chain never forks: a transaction-scoped advisory lock on PostgreSQL,
``BEGIN IMMEDIATE`` on SQLite (one writer at a time). Triggers refuse UPDATE
and DELETE; the chain catches whoever disables them.

Deleting the newest rows leaves a shorter chain that is still consistent; to
catch that, keep the head that ``verify`` prints somewhere else and pass it
back as an anchor.

Rows carry ids, names, digests and reasons, never secret values: reasons pass
through redaction like every message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trueup.authz import Actor
from trueup.canonical import canonical_json, sha256_hex
from trueup.model import Plan, Target
from trueup.redact import redact_message
from trueup.state.store import Store, now

OUTCOMES = ("success", "refused", "failed")
GENESIS = "0" * 64
# pg_advisory_xact_lock key for chain appends: "trueaudt" as a 64-bit integer.
_LOCK_KEY = int.from_bytes(b"trueaudt", "big")
_COLUMNS = (
    "seq, at, event, outcome, reason, actor, target, target_key, plan_digest, run_id, detail, "
    "prev_hash, hash"
)


@dataclass(frozen=True, slots=True)
class Entry:
    seq: int
    at: str
    event: str
    outcome: str
    reason: str | None
    actor: dict[str, Any]
    target: dict[str, Any]
    target_key: str
    plan_digest: str | None
    run_id: str | None
    detail: dict[str, Any] | None
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Any]:
        """What the hash covers: every field but the hash itself."""
        return {
            "seq": self.seq,
            "at": self.at,
            "event": self.event,
            "outcome": self.outcome,
            "reason": self.reason,
            "actor": self.actor,
            "target": self.target,
            "target_key": self.target_key,
            "plan_digest": self.plan_digest,
            "run_id": self.run_id,
            "detail": self.detail,
            "prev_hash": self.prev_hash,
        }

    def computed_hash(self) -> str:
        return sha256_hex(canonical_json(self.body()))

    def to_json(self) -> dict[str, Any]:
        return {**self.body(), "hash": self.hash}


def _entry(row: Any) -> Entry:
    seq, at, event, outcome, reason, actor, target, key, plan, run, detail, prev, hsh = row
    return Entry(
        seq=int(seq),
        at=at,
        event=event,
        outcome=outcome,
        reason=reason,
        actor=_loads(actor),
        target=_loads(target),
        target_key=key,
        plan_digest=plan,
        run_id=run,
        detail=_loads(detail) if detail is not None else None,
        prev_hash=prev,
        hash=hsh,
    )


def _loads(text: Any) -> Any:
    """A stored JSON column; one edited into something else is shown, not a crash.

    Its row's hash cannot match any more, so ``verify`` names the row.
    """
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return {"not_json": str(text)}


def _text(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


def record(
    store: Store,
    event: str,
    outcome: str,
    actor: Actor,
    target: Target,
    *,
    reason: str | None = None,
    plan_digest: str | None = None,
    run_id: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> Entry:
    """Append one row at the head of the chain."""
    if outcome not in OUTCOMES:
        raise ValueError(f"audit outcome must be one of {OUTCOMES}, not {outcome!r}")
    db = store.db
    with db.transaction():
        if db.dialect == "postgresql":
            db.execute("SELECT pg_advisory_xact_lock(:key)", {"key": _LOCK_KEY})
        head = db.one("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")
        seq, prev = (int(head[0]) + 1, str(head[1])) if head else (1, GENESIS)
        partial = Entry(
            seq=seq,
            at=now(),
            event=event,
            outcome=outcome,
            reason=redact_message(reason) if reason is not None else None,
            actor=actor.to_json(),
            target={"kind": target.kind, "id": target.id, "name": target.name},
            target_key=target.key,
            plan_digest=plan_digest,
            run_id=run_id,
            detail=json.loads(_text(dict(detail))) if detail is not None else None,
            prev_hash=prev,
            hash="",
        )
        entry = Entry(**{**partial.body(), "hash": partial.computed_hash()})
        db.execute(
            f"INSERT INTO audit ({_COLUMNS}) VALUES (:seq, :at, :event, :outcome, :reason, "
            ":actor, :target, :target_key, :plan_digest, :run_id, :detail, :prev_hash, :hash)",
            {
                **entry.body(),
                "actor": _text(entry.actor),
                "target": _text(entry.target),
                "detail": _text(entry.detail) if entry.detail is not None else None,
                "hash": entry.hash,
            },
        )
    return entry


def outline(plan: Plan) -> dict[str, Any]:
    """A plan as an audit row's "after" value: what it does to which resource, by name
    and digest, never a value.

    The log is append-only, so whatever enters it can never be purged: a
    declared value (an app's variable, say) stays out; its step's payload is
    there by digest, which the saved plan it came from can be checked against.
    """
    return {
        "digest": plan.digest,
        "actions": [
            {
                "resource": a.resource_id,
                "kind": a.kind,
                "type": a.type.value,
                "fields": sorted(str(f) for f in a.payload.get("fields", ())),
                "payload": sha256_hex(canonical_json(dict(a.payload))),
            }
            for a in plan.actions
        ],
    }


def _like(glob: str) -> str:
    """A target glob as a LIKE pattern (``\\`` escapes)."""
    out = []
    for char in glob:
        if char in "\\%_":
            out.append("\\" + char)
        elif char == "*":
            out.append("%")
        elif char == "?":
            out.append("_")
        else:
            out.append(char)
    return "".join(out)


def entries(
    store: Store,
    target: str | None = None,
    event: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[Entry]:
    """Newest first; ``target`` is a target key, a glob over keys, or a target id."""
    where: list[str] = []
    params: dict[str, Any] = {"limit": limit, "offset": offset}
    if target:
        if any(c in target for c in "*?"):
            where.append("target_key LIKE :t ESCAPE '\\'")
            params["t"] = _like(target)
        else:
            where.append("(target_key = :t OR target_key LIKE :id ESCAPE '\\')")
            params.update({"t": target, "id": "%:" + _like(target) + "@%"})
    if event:
        where.append("event LIKE :e ESCAPE '\\'")
        params["e"] = _like(event) + "%"
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    rows = store.db.execute(
        f"SELECT {_COLUMNS} FROM audit {clause}ORDER BY seq DESC LIMIT :limit OFFSET :offset",
        params,
    )
    return [_entry(r) for r in rows]


@dataclass
class Verification:
    rows: int = 0
    head: str = GENESIS
    head_seq: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "rows": self.rows,
            "head": {"seq": self.head_seq, "hash": self.head},
            "problems": self.problems,
        }


def verify(store: Store, anchor: tuple[int, str] | None = None, batch: int = 5000) -> Verification:
    """Walk the whole chain oldest first and report every break.

    ``anchor`` is a ``(seq, hash)`` kept outside the database: the row must
    still be there with that hash, which catches a truncated tail.
    """
    report = Verification()
    expected_seq, prev = 1, GENESIS
    after = 0
    while True:
        rows = store.db.execute(
            f"SELECT {_COLUMNS} FROM audit WHERE seq > :after ORDER BY seq LIMIT :n",
            {"after": after, "n": batch},
        )
        if not rows:
            break
        for row in rows:
            entry = _entry(row)
            after = entry.seq
            report.rows += 1
            if entry.seq > expected_seq:
                last = entry.seq - 1
                gap = str(last) if last == expected_seq else f"{expected_seq}-{last}"
                report.problems.append(f"row(s) {gap} missing (deleted)")
            if entry.prev_hash != prev:
                report.problems.append(
                    f"row {entry.seq} does not follow the row before it "
                    "(a row was deleted, inserted or reordered)"
                )
            if entry.computed_hash() != entry.hash:
                report.problems.append(f"row {entry.seq} was edited (its hash does not match)")
            expected_seq, prev = entry.seq + 1, entry.hash
            report.head, report.head_seq = entry.hash, entry.seq
    if anchor is not None:
        seq, hsh = anchor
        found = store.db.one("SELECT hash FROM audit WHERE seq = :s", {"s": seq})
        if found is None:
            report.problems.append(f"anchor row {seq} is gone (the log was truncated)")
        elif found[0] != hsh:
            report.problems.append(f"anchor row {seq} has a different hash (rewritten)")
    return report
