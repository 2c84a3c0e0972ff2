"""The job queue: runs that carry a step list, claimed by workers under a lease.

A job is a row of ``runs`` with ``steps`` set, so the target's lock keeps one
definition (one active row per target) whether the apply runs in the
foreground or waits in the queue. Every write by a worker is fenced by its
lease: ``WHERE lease_owner = :owner AND status = 'running'``. A worker whose
lease was taken over finds that its writes match no row and stops, so a step
checkpointed by one worker is never run again by another.

Lease times are the database's clock (``Database.epoch_sql``), never a
worker's, so hosts with skewed clocks agree on when a lease ends.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trueup.canonical import canonical_json
from trueup.model import Target
from trueup.state.db import Row, UniqueViolation
from trueup.state.store import (
    LOCK_INDEX,
    RUN_COLUMNS,
    RunInfo,
    RunLocked,
    Store,
    new_run_id,
    now,
    run_from_row,
)

_JOB_COLUMNS = f"{RUN_COLUMNS}, steps, checkpoints, failure, lease_owner, attempts"
_N = len(RUN_COLUMNS.split(","))


@dataclass(frozen=True, slots=True)
class Job:
    """A queued or running job as the store has it."""

    run: RunInfo
    steps: tuple[dict[str, Any], ...]
    checkpoints: dict[str, dict[str, Any]]
    failure: dict[str, Any] | None
    lease_owner: str | None
    attempts: int

    @property
    def id(self) -> str:
        return self.run.id


def _job(row: Sequence[Any]) -> Job:
    steps, checkpoints, failure, owner, attempts = row[_N:]
    return Job(
        run=run_from_row(row[:_N]),
        steps=tuple(json.loads(steps)),
        checkpoints=json.loads(checkpoints) if checkpoints else {},
        failure=json.loads(failure) if failure else None,
        lease_owner=owner,
        attempts=int(attempts),
    )


def _text(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


class JobStore:
    """Queue queries over one store connection (not shared between threads)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
        # A job's columns, its lease read by the database's clock (store.run_columns).
        self._columns = _JOB_COLUMNS.format(clock=self.db.epoch_sql)

    def enqueue(
        self,
        target: Target,
        steps: Sequence[Mapping[str, Any]],
        actor: str,
        plan_digest: str | None = None,
        declaration: str | None = None,
        affinity: str | None = None,
    ) -> str:
        """Insert a queued job, which takes the target's lock; ``RunLocked`` if held.

        ``affinity`` names the only host whose workers may run it (a machine's
        root lives on one host); ``None`` lets any worker run it (an org).
        """
        run_id = new_run_id()
        stamp = now()
        try:
            with self.db.transaction():
                self.db.execute(
                    "INSERT INTO runs (id, target_key, target, status, plan_digest, declaration, "
                    "host, pid, actor, started_at, steps, checkpoints, attempts, updated_at, "
                    "affinity) VALUES (:id, :key, :target, 'queued', :plan, :declaration, :host, "
                    ":pid, :actor, :at, :steps, '{}', 0, :at, :affinity)",
                    {
                        "id": run_id,
                        "key": target.key,
                        "target": _text(target.to_json()),
                        "plan": plan_digest,
                        "declaration": declaration,
                        "host": socket.gethostname(),
                        "pid": os.getpid(),
                        "actor": actor,
                        "at": stamp,
                        "steps": _text(list(steps)),
                        "affinity": affinity,
                    },
                )
                self.store.event(run_id, "run.queued", {"steps": len(steps)})
        except UniqueViolation as exc:
            if exc.constraint not in (None, LOCK_INDEX):
                raise
            raise RunLocked(self.store.holder(target.key)) from None
        return run_id

    def job(self, run_id: str) -> Job | None:
        row = self.db.one(
            f"SELECT {self._columns} FROM runs WHERE id = :id AND steps IS NOT NULL",
            {"id": run_id},
        )
        return _job(row) if row else None

    def jobs(self, statuses: Sequence[str] = (), limit: int = 50, offset: int = 0) -> list[Job]:
        where = ""
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if statuses:
            names = [f":s{i}" for i in range(len(statuses))]
            where = f"AND status IN ({', '.join(names)}) "
            params.update({f"s{i}": s for i, s in enumerate(statuses)})
        rows = self.db.execute(
            f"SELECT {self._columns} FROM runs WHERE steps IS NOT NULL {where}"
            "ORDER BY started_at DESC, id DESC LIMIT :limit OFFSET :offset",
            params,
        )
        return [_job(r) for r in rows]

    def counts(self) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT status, COUNT(*) FROM runs WHERE steps IS NOT NULL GROUP BY status"
        )
        return {str(status): int(n) for status, n in rows}

    def _atomic(self, sql: str, params: Mapping[str, Any]) -> Row | None:
        """One write statement, atomically, in as few round trips as the back end allows.

        PostgreSQL runs a single statement atomically in autocommit. SQLite
        needs ``BEGIN IMMEDIATE``: a statement that reads before it writes
        could otherwise lose the race to become the writer (SQLITE_BUSY_SNAPSHOT,
        which no busy timeout retries).
        """
        if self.db.dialect == "postgresql":
            return self.db.one(sql, params)
        with self.db.transaction():
            return self.db.one(sql, params)

    # -- claiming -----------------------------------------------------------
    def _claim_sql(self, which: str) -> str:
        clock = self.db.epoch_sql
        return (
            "UPDATE runs SET status = 'running', lease_owner = :owner, "
            f"lease_expires_at = {clock} + :ttl, host = :host, pid = :pid, "
            f"attempts = attempts + 1, updated_at = :at WHERE {which} "
            f"RETURNING {self._columns}"
        )

    def _claim_params(self, owner: str, ttl: float) -> dict[str, Any]:
        return {
            "owner": owner,
            "ttl": float(ttl),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "at": now(),
        }

    def claim_next(self, owner: str, ttl: float, skip: Collection[str] = ()) -> Job | None:
        """Take the oldest queued job, or one whose worker's lease ran out.

        PostgreSQL: ``FOR UPDATE SKIP LOCKED`` lets workers claim different
        jobs concurrently without waiting on each other; SQLite has one writer
        at a time, so ``BEGIN IMMEDIATE`` is its equivalent.
        """
        clock = self.db.epoch_sql
        locking = " FOR UPDATE SKIP LOCKED" if self.db.dialect == "postgresql" else ""
        skipped = {f"k{i}": run_id for i, run_id in enumerate(sorted(skip))}
        names = ", ".join(f":{name}" for name in skipped)
        not_these = f"AND id NOT IN ({names}) " if skipped else ""
        pick = (
            "id = (SELECT id FROM runs WHERE steps IS NOT NULL AND (status = 'queued' OR "
            f"(status = 'running' AND lease_expires_at < {clock})) "
            "AND (affinity IS NULL OR affinity = :host) "
            f"{not_these}ORDER BY started_at, id LIMIT 1{locking})"
        )
        row = self._atomic(self._claim_sql(pick), {**self._claim_params(owner, ttl), **skipped})
        return _job(row) if row else None

    def release(self, run_id: str, owner: str) -> bool:
        """Give a claimed job back to the queue untouched (this worker may not run it)."""
        return self._fenced(
            "status = 'queued', lease_owner = NULL, lease_expires_at = NULL, "
            "attempts = attempts - 1",
            run_id,
            owner,
            {},
        )

    def claim(self, run_id: str, owner: str, ttl: float) -> Job | None:
        """Take one named job: queued, failed, already ours, or with a lapsed lease."""
        clock = self.db.epoch_sql
        which = (
            "id = :id AND steps IS NOT NULL AND (status IN ('queued', 'failed') OR "
            "(status = 'running' AND (lease_owner = :owner OR lease_expires_at IS NULL "
            f"OR lease_expires_at < {clock})))"
        )
        row = self._atomic(self._claim_sql(which), {**self._claim_params(owner, ttl), "id": run_id})
        return _job(row) if row else None

    # -- fenced writes ------------------------------------------------------
    def _fenced(
        self,
        sets: str,
        run_id: str,
        owner: str,
        params: Mapping[str, Any],
        event: tuple[str, dict[str, Any] | None] | None = None,
    ) -> bool:
        """Update the job only while we hold its lease; journal ``event`` with it."""
        sql = (
            f"UPDATE runs SET {sets}, updated_at = :at WHERE id = :id "
            "AND lease_owner = :owner AND status = 'running' RETURNING id"
        )
        values = {**params, "id": run_id, "owner": owner, "at": now()}
        if event is None:
            return self._atomic(sql, values) is not None
        with self.db.transaction():
            row = self.db.one(sql, values)
            if row is not None:
                self.store.event(run_id, *event)
        return row is not None

    def renew(self, run_id: str, owner: str, ttl: float) -> bool:
        return self._fenced(
            f"lease_expires_at = {self.db.epoch_sql} + :ttl", run_id, owner, {"ttl": float(ttl)}
        )

    def checkpoint(self, run_id: str, owner: str, checkpoints: Mapping[str, Any]) -> bool:
        return self._fenced("checkpoints = :cp", run_id, owner, {"cp": _text(dict(checkpoints))})

    def clear_failure(self, run_id: str, owner: str) -> bool:
        return self._fenced("failure = NULL, outcome = NULL, message = NULL", run_id, owner, {})

    def fail(self, run_id: str, owner: str, failure: Mapping[str, Any]) -> bool:
        """Record the failing step; the job keeps the lock until resumed or abandoned."""
        return self._fenced(
            "status = 'failed', outcome = 'failed', failure = :failure, message = :message, "
            "lease_owner = NULL, lease_expires_at = NULL",
            run_id,
            owner,
            {"failure": _text(dict(failure)), "message": str(failure.get("message", ""))},
            ("run.failed", {"step": failure.get("step")}),
        )

    def succeed(self, run_id: str, owner: str) -> bool:
        return self._fenced(
            "status = 'succeeded', outcome = 'succeeded', finished_at = :done, "
            "lease_owner = NULL, lease_expires_at = NULL",
            run_id,
            owner,
            {"done": now()},
            ("run.succeeded", None),
        )

    def requeue(self, run_id: str) -> bool:
        """A failed job back in the queue, for a worker to resume from its checkpoint."""
        with self.db.transaction():
            row = self.db.one(
                "UPDATE runs SET status = 'queued', updated_at = :at WHERE id = :id "
                "AND steps IS NOT NULL AND status = 'failed' RETURNING id",
                {"id": run_id, "at": now()},
            )
            if row is not None:
                self.store.event(run_id, "run.requeued", None)
        return row is not None
