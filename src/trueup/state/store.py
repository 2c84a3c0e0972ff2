"""Queries over the state store, one method per question the engine asks.

Secret values never reach these tables: resources carry references and
digests, evidence carries digests and exit codes, never raw output.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from trueup.canonical import storage_text
from trueup.errors import ConflictError
from trueup.model import Action, Applied, Resource, Target
from trueup.statcache import CacheEntry, StatCache
from trueup.state.db import Database, StoreReadOnly, UniqueViolation
from trueup.state.holder import identity
from trueup.state.schema import ensure_current

# Statuses that hold the target's lock (the partial unique index of migration 0002):
# a queued job and a failed job waiting to be resumed hold it as a running run does.
ACTIVE = ("queued", "running", "interrupted", "failed")
LOCK_INDEX = "runs_one_active_per_target"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)


@dataclass(frozen=True, slots=True)
class RunInfo:
    id: str
    target: Target
    status: str
    outcome: str | None
    plan_digest: str | None
    declaration: str | None
    host: str
    pid: int
    actor: str
    started_at: str
    finished_at: str | None
    message: str | None
    job: bool = False
    lease_expires_at: float | None = None
    #: The holding process's identity (state/holder.py), where the system told it.
    holder: str | None = None

    @property
    def holder_alive(self) -> bool | None:
        """Whether the holder still works on it; ``None`` when that cannot be known here.

        A job's holder is alive while its lease runs (the lease is renewed while
        the worker works, on any host); a direct run's holder is its process:
        its pid, unless another process has that pid now.
        """
        if self.job:
            if self.status != "running":
                return None
            return self.lease_expires_at is not None and self.lease_expires_at > time.time()
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # somebody else's process: alive, but is it the holder?
        if self.holder is not None:
            found = identity(self.pid)
            if found is not None and found != self.holder:
                return False  # the pid was reused (a reboot, a container restarted)
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "target": self.target.to_json(),
            "status": self.status,
            "outcome": self.outcome,
            "plan_digest": self.plan_digest,
            "declaration": self.declaration,
            "host": self.host,
            "pid": self.pid,
            "actor": self.actor,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "message": self.message,
            "holder_alive": self.holder_alive if self.status in ACTIVE else None,
            "job": self.job,
        }


@dataclass(frozen=True, slots=True)
class RunAction:
    seq: int
    action: Action
    status: str
    rollback_ref: str | None
    evidence: dict[str, Any] | None
    message: str | None
    #: The identity of what the plan observed at the target (Observed.identity).
    observed: str | None = None
    #: When the action last changed status (when it succeeded, for a finished one).
    at: str | None = None


class RunLocked(Exception):
    """Another run holds the target; carries the holder for the message."""

    def __init__(self, holder: RunInfo | None) -> None:
        super().__init__("target is locked")
        self.holder = holder


# ``{clock}`` is the database's clock (``run_columns``): a lease is read as the
# seconds it has left by that clock, so a host whose own clock is off never takes
# a live job's lease for an expired one.
RUN_COLUMNS = (
    "id, target, status, outcome, plan_digest, declaration, host, pid, actor, "
    "started_at, finished_at, message, steps IS NOT NULL, lease_expires_at - {clock}, holder"
)


def run_columns(db: Database) -> str:
    return RUN_COLUMNS.format(clock=db.epoch_sql)


def run_from_row(row: Sequence[Any]) -> RunInfo:
    return RunInfo(
        id=row[0],
        target=Target.from_json(json.loads(row[1])),
        status=row[2],
        outcome=row[3],
        plan_digest=row[4],
        declaration=row[5],
        host=row[6],
        pid=int(row[7]),
        actor=row[8],
        started_at=row[9],
        finished_at=row[10],
        message=row[11],
        job=bool(row[12]),
        # Seconds left by the database's clock, as a time on this host's.
        lease_expires_at=time.time() + float(row[13]) if row[13] is not None else None,
        holder=row[14],
    )


class Store:
    """The engine's view of the database; every write is one short transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db
        #: Set once a write was skipped because the store is read-only (see ``if_writable``).
        self.read_only = False

    @contextmanager
    def if_writable(self) -> Iterator[None]:
        """Writes that only save time or answer later questions (the stat cache, the
        drift summary, a plan's audit row): skipped on a read-only store, so that
        ``plan`` works against one; a write a run depends on still stops it."""
        try:
            yield
        except StoreReadOnly:
            self.read_only = True

    @classmethod
    def open(cls, url: str) -> Store:
        db = Database(url)
        ensure_current(db)
        return cls(db)

    def close(self) -> None:
        self.db.close()

    # -- stat cache ---------------------------------------------------------
    def load_stat_cache(self) -> StatCache:
        """This host's cache, fetched folder by folder as a run looks paths up."""
        return StatCache(loader=self._stat_rows)

    def _stat_rows(self, folder: str) -> dict[str, CacheEntry]:
        prefix = folder.rstrip("/") + "/"
        rows = self.db.execute(
            "SELECT path, size, mtime_ns, ino, ctime_ns, digest, recorded_ns FROM stat_cache "
            "WHERE host = :host AND path >= :low AND path < :high",
            {"host": socket.gethostname(), "low": prefix, "high": prefix[:-1] + "0"},
        )
        return {
            path: ((size, mtime, ino, ctime), dig, recorded)
            for path, size, mtime, ino, ctime, dig, recorded in rows
        }

    def save_stat_cache(self, cache: StatCache) -> None:
        if not cache.dirty:
            return
        host = socket.gethostname()
        rows = [
            (host, path, key[0], key[1], key[2], key[3], dig, recorded)
            for path, (key, dig, recorded) in cache.dirty.items()
        ]
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO stat_cache "
                "(host, path, size, mtime_ns, ino, ctime_ns, digest, recorded_ns) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (host, path) DO UPDATE SET size=excluded.size, "
                "mtime_ns=excluded.mtime_ns, ino=excluded.ino, ctime_ns=excluded.ctime_ns, "
                "digest=excluded.digest, recorded_ns=excluded.recorded_ns",
                rows,
            )
        cache.dirty.clear()

    # -- applied records ----------------------------------------------------
    def applied(self, target_key: str) -> dict[str, Applied]:
        rows = self.db.execute(
            "SELECT resource, digest, detail, revision, applied_at FROM applied_resources "
            "WHERE target_key = :key",
            {"key": target_key},
        )
        if not rows:
            return {}
        # One decode of all rows: per-row json.loads calls cost more than the parsing.
        resources = json.loads("[" + ",".join(row[0] for row in rows) + "]")
        details = json.loads("[" + ",".join(row[2] for row in rows) + "]")
        records = {}
        for raw, detail, (_, dig, _, revision, at) in zip(resources, details, rows, strict=True):
            res = Resource.from_json(raw)
            records[res.id] = Applied(res, dig, detail, revision, at)
        return records

    def applied_beside(self, target: Target) -> dict[str, dict[str, Applied]]:
        """The applied records of the other profiles on ``target``'s root, by profile id.

        Two profiles declaring the same key or file on one root would otherwise
        each take it back from the other at every apply (plan/claims.py).
        """
        if target.kind != "profile":
            return {}
        suffix = "@" + target.location
        rows = self.db.execute(
            "SELECT target_key FROM applied_resources "
            "WHERE target_key LIKE :pattern ESCAPE '\\' AND target_key <> :key "
            "GROUP BY target_key",
            {"pattern": "profile:%" + _like_escaped(suffix), "key": target.key},
        )
        found = {}
        for (key,) in rows:
            if key.startswith("profile:") and key.endswith(suffix):  # LIKE may ignore case
                found[key[len("profile:") : -len(suffix)]] = self.applied(key)
        return found

    def put_applied(self, target_key: str, records: Sequence[Applied]) -> None:
        self.db.executemany(
            "INSERT INTO applied_resources "
            "(target_key, resource_id, kind, digest, resource, detail, revision, applied_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (target_key, resource_id) DO UPDATE SET kind=excluded.kind, "
            "digest=excluded.digest, resource=excluded.resource, detail=excluded.detail, "
            "revision=excluded.revision, applied_at=excluded.applied_at",
            [
                (
                    target_key,
                    r.resource.id,
                    r.resource.kind,
                    r.digest,
                    storage_text(r.resource.to_json()),
                    storage_text(dict(r.detail)),
                    r.revision,
                    r.applied_at,
                )
                for r in records
            ],
        )

    def delete_applied(self, target_key: str, resource_ids: Iterable[str]) -> None:
        self.db.executemany(
            "DELETE FROM applied_resources WHERE target_key = :key AND resource_id = :rid",
            [{"key": target_key, "rid": rid} for rid in resource_ids],
        )

    def targets(self) -> list[str]:
        """Every target trueup has applied to or run against (a first run may have failed)."""
        rows = self.db.execute(
            "SELECT target_key FROM applied_resources UNION SELECT target_key FROM runs ORDER BY 1"
        )
        return [r[0] for r in rows]

    # -- runs and the lock --------------------------------------------------
    def start_run(
        self,
        target: Target,
        plan_digest: str,
        declaration: str | None,
        actor: str,
        force: Sequence[str] = (),
        declared: str | None = None,
    ) -> RunInfo:
        """Insert the run row, which is the lock; raises ``RunLocked`` if held.

        ``force`` (the ids given to --overwrite) is kept with the start, so a
        recovery plans the rest of the run as the person asked; ``declared``
        (the digest of the declaration planned), so it redoes only that one.
        """
        run_id = new_run_id()
        params = {
            "id": run_id,
            "key": target.key,
            "target": storage_text(target.to_json()),
            "plan": plan_digest,
            "declaration": declaration,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "holder": identity(os.getpid()),
            "actor": actor,
            "at": now(),
        }
        try:
            with self.db.transaction():
                self.db.execute(
                    "INSERT INTO runs (id, target_key, target, status, plan_digest, declaration, "
                    "host, pid, holder, actor, started_at) VALUES (:id, :key, :target, 'running', "
                    ":plan, :declaration, :host, :pid, :holder, :actor, :at)",
                    params,
                )
                started: dict[str, Any] = {"plan": plan_digest}
                if force:
                    started["force"] = list(force)
                if declared:
                    started["declared"] = declared
                self._event(run_id, "run.started", started)
        except UniqueViolation as exc:
            if exc.constraint not in (None, LOCK_INDEX):
                raise
            raise RunLocked(self.holder(target.key)) from None
        self.db.holding = run_id
        info = self.run(run_id)
        assert info is not None
        return info

    def holder(self, target_key: str) -> RunInfo | None:
        row = self.db.one(
            f"SELECT {run_columns(self.db)} FROM runs WHERE target_key = :key "
            "AND status IN ('queued', 'running', 'interrupted', 'failed')",
            {"key": target_key},
        )
        return run_from_row(row) if row else None

    def run_history(self, target_key: str, excluding: str = "") -> str:
        """A marker that changes whenever a run of the target (but ``excluding``) starts or
        ends: the applied records of a target change only within its runs."""
        row = self.db.one(
            "SELECT COUNT(*), MAX(started_at), MAX(finished_at) FROM runs "
            "WHERE target_key = :key AND id != :own",
            {"key": target_key, "own": excluding},
        )
        return ":".join(str(v) for v in row) if row else ""

    def root_history(self, location: str) -> str:
        """As ``run_history``, for every profile's runs on the root ``location``: what
        another profile applied there changes what this one may plan (plan/claims.py)."""
        row = self.db.one(
            "SELECT COUNT(*), MAX(started_at), MAX(finished_at) FROM runs "
            "WHERE target_key LIKE :pattern ESCAPE '\\'",
            {"pattern": "profile:%" + _like_escaped("@" + location)},
        )
        return ":".join(str(v) for v in row) if row else ""

    def run(self, run_id: str) -> RunInfo | None:
        row = self.db.one(f"SELECT {run_columns(self.db)} FROM runs WHERE id = :id", {"id": run_id})
        return run_from_row(row) if row else None

    def runs(self, target_key: str | None = None, limit: int = 20) -> list[RunInfo]:
        where = "WHERE target_key = :key " if target_key else ""
        rows = self.db.execute(
            f"SELECT {run_columns(self.db)} FROM runs {where}ORDER BY started_at DESC LIMIT :limit",
            {"key": target_key, "limit": limit},
        )
        return [run_from_row(r) for r in rows]

    def last_run(self, target_key: str) -> RunInfo | None:
        """The target's latest run that got as far as changing something (a refusal did not)."""
        return next((r for r in self.runs(target_key, 10) if r.outcome != "refused"), None)

    def blocked_runs(self) -> list[RunInfo]:
        """Unfinished runs that wait for a person (queued jobs wait for a worker instead)."""
        rows = self.db.execute(
            f"SELECT {run_columns(self.db)} FROM runs "
            "WHERE status IN ('running', 'interrupted', 'failed') ORDER BY started_at"
        )
        return [run_from_row(r) for r in rows]

    def take_over(self, run: RunInfo) -> None:
        """Make this process the holder of an interrupted run (recover, abandon).

        Only if the run is still as ``run`` read it: of two processes taking
        over the same dead run at once, one gets it and the other is refused.
        """
        with self.db.transaction():
            taken = self.db.execute(
                "UPDATE runs SET status = 'running', host = :host, pid = :pid, holder = :holder "
                "WHERE id = :id AND status = :was AND host = :was_host AND pid = :was_pid "
                "RETURNING id",
                {
                    "id": run.id,
                    "host": socket.gethostname(),
                    "pid": os.getpid(),
                    "holder": identity(os.getpid()),
                    "was": run.status,
                    "was_host": run.host,
                    "was_pid": run.pid,
                },
            )
            if not taken:
                raise ConflictError(
                    f"run {run.id} was taken over by another trueup process meanwhile",
                    hint="see where it stands: trueup status",
                )
            self._event(run.id, "run.taken-over", {"pid": os.getpid()})
        self.db.holding = run.id

    def set_run_status(self, run_id: str, status: str, outcome: str | None, message: str) -> None:
        """Record where a run stands; once it is over, this process holds it no more."""
        with self.db.transaction():
            self.db.execute(
                "UPDATE runs SET status = :status, outcome = :outcome, message = :message, "
                "finished_at = :at WHERE id = :id",
                {
                    "id": run_id,
                    "status": status,
                    "outcome": outcome,
                    "message": message,
                    "at": now() if status not in ACTIVE else None,
                },
            )
            self._event(run_id, f"run.{status}", {"outcome": outcome})
        if status not in ACTIVE and self.db.holding == run_id:
            self.db.holding = None

    # -- the journal --------------------------------------------------------
    def add_actions(
        self,
        run_id: str,
        actions: Sequence[Action],
        first_seq: int = 0,
        observed: Mapping[str, str] | None = None,
    ) -> None:
        """Journal actions pending, each with what its plan saw at the target.

        A recovery redoes an action only while its target still looks like that.
        """
        stamp = now()
        seen = observed or {}
        rows = []
        for i, a in enumerate(actions, start=first_seq):
            action = a.to_json()
            action["observed"] = seen.get(a.resource_id)
            rows.append((run_id, i, a.resource_id, storage_text(action), stamp))
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO run_actions (run_id, seq, resource_id, action, status, updated_at) "
                "VALUES (?, ?, ?, ?, 'pending', ?)",
                rows,
            )

    def mark_running(self, run_id: str, first: int, last: int, manifest: str | None) -> None:
        """Journal a batch (the pending actions ``first..last``) running, in one row.

        Each action's rollback reference is ``manifest#seq`` (RollbackStore.capture).
        An action whose own row still says pending is as its batch says
        (``run_actions``): one row written, not one rewritten per action.
        """
        self.db.execute(
            "INSERT INTO run_batches (run_id, first_seq, last_seq, status, manifest, updated_at) "
            "VALUES (:run, :first, :last, 'running', :manifest, :at) "
            "ON CONFLICT (run_id, first_seq) DO UPDATE SET last_seq = excluded.last_seq, "
            "status = excluded.status, manifest = excluded.manifest, evidence = NULL, "
            "updated_at = excluded.updated_at",
            {"run": run_id, "first": first, "last": last, "manifest": manifest, "at": now()},
        )

    def mark_succeeded(
        self, run_id: str, first: int, verified: Sequence[tuple[int, dict[str, Any]]]
    ) -> None:
        """Journal the actions of the batch starting at ``first`` succeeded, each with its
        verification evidence, in the batch's row (one write, however big the batch)."""
        evidence = {str(seq): ev for seq, ev in verified}
        changed = self.db.execute_count(
            "UPDATE run_batches SET status = 'succeeded', evidence = :evidence, updated_at = :at "
            "WHERE run_id = :run AND first_seq = :first AND last_seq >= :last",
            {
                "run": run_id,
                "first": first,
                "last": max((seq for seq, _ in verified), default=first),
                "evidence": storage_text(evidence),
                "at": now(),
            },
        )
        if not changed:  # not journaled running as one batch: one row each, as ever
            self.set_action_status(
                run_id, [(seq, "succeeded", None, ev, None) for seq, ev in verified]
            )

    def set_action_status(
        self,
        run_id: str,
        updates: Sequence[tuple[int, str, str | None, dict[str, Any] | None, str | None]],
    ) -> None:
        """Apply ``(seq, status, rollback_ref, evidence, message)`` updates at once."""
        stamp = now()
        self.db.executemany(
            "UPDATE run_actions SET status = ?, rollback_ref = COALESCE(?, rollback_ref), "
            "evidence = COALESCE(?, evidence), message = COALESCE(?, message), updated_at = ? "
            "WHERE run_id = ? AND seq = ?",
            [
                (
                    status,
                    ref,
                    storage_text(ev) if ev is not None else None,
                    msg,
                    stamp,
                    run_id,
                    seq,
                )
                for seq, status, ref, ev, msg in updates
            ],
        )

    def run_actions(self, run_id: str) -> list[RunAction]:
        rows = self.db.execute(
            "SELECT seq, action, status, rollback_ref, evidence, message, updated_at "
            "FROM run_actions WHERE run_id = :run ORDER BY seq",
            {"run": run_id},
        )
        batches = _Batches(
            self.db.execute(
                "SELECT first_seq, last_seq, status, manifest, evidence, updated_at "
                "FROM run_batches WHERE run_id = :run ORDER BY first_seq",
                {"run": run_id},
            )
        )
        found = []
        for seq, action, status, ref, ev, msg, at in rows:
            data = json.loads(action)
            evidence = json.loads(ev) if ev else None
            if status == "pending":  # nothing happened to it alone: as its batch says, if any
                status, ref, evidence, at = batches.of(int(seq), ref, evidence, at)
            found.append(
                RunAction(
                    seq=int(seq),
                    action=Action.from_json(data),
                    status=status,
                    rollback_ref=ref,
                    evidence=evidence,
                    message=msg,
                    observed=data.get("observed"),
                    at=at,
                )
            )
        return found

    def action_resource(self, run_id: str, seq: int) -> str:
        row = self.db.one(
            "SELECT resource_id FROM run_actions WHERE run_id = :run AND seq = :seq",
            {"run": run_id, "seq": seq},
        )
        if row is None:
            raise KeyError(f"run {run_id} has no action {seq}")
        return str(row[0])

    def next_seq(self, run_id: str) -> int:
        row = self.db.one(
            "SELECT COALESCE(MAX(seq), -1) FROM run_actions WHERE run_id = :run", {"run": run_id}
        )
        return int(row[0]) + 1 if row else 0

    def event(self, run_id: str, event: str, detail: dict[str, Any] | None = None) -> None:
        with self.db.transaction():
            self._event(run_id, event, detail)

    def last_event(self, run_id: str, event: str) -> dict[str, Any] | None:
        """The detail of a run's latest ``event``, or ``None`` when it has none."""
        row = self.db.one(
            "SELECT detail FROM journal WHERE run_id = :run AND event = :event "
            "ORDER BY id DESC LIMIT 1",
            {"run": run_id, "event": event},
        )
        if row is None or row[0] is None:
            return None
        detail: dict[str, Any] = json.loads(row[0])
        return detail

    def _event(self, run_id: str, event: str, detail: dict[str, Any] | None) -> None:
        self.db.execute(
            "INSERT INTO journal (run_id, event, at, detail) VALUES (:run, :event, :at, :detail)",
            {
                "run": run_id,
                "event": event,
                "at": now(),
                "detail": storage_text(detail) if detail is not None else None,
            },
        )

    # -- drift and revisions ------------------------------------------------
    def replace_drift(self, target_key: str, items: Sequence[dict[str, Any]]) -> None:
        stamp = now()
        with self.db.transaction():
            self.db.execute("DELETE FROM drift WHERE target_key = :key", {"key": target_key})
            self.db.executemany(
                "INSERT INTO drift (target_key, resource_id, summary, observed_digest, "
                "applied_digest, desired_digest, detected_at) VALUES (:key, :rid, :summary, "
                ":observed, :applied, :desired, :at)",
                [{"key": target_key, "at": stamp, **item} for item in items],
            )

    def drift(self, target_key: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT resource_id, summary, observed_digest, applied_digest, desired_digest, "
            "detected_at FROM drift WHERE target_key = :key ORDER BY resource_id",
            {"key": target_key},
        )
        keys = ("resource", "summary", "observed", "applied", "desired", "detected_at")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def record_revision(self, declaration_id: str, digest: str) -> str:
        """Content-addressed: the same declaration content is the same revision."""
        revision_id = f"{declaration_id}:{digest}"
        with self.db.transaction():
            if self.db.one("SELECT 1 FROM revisions WHERE id = :id", {"id": revision_id}):
                return revision_id
            row = self.db.one(
                "SELECT COALESCE(MAX(seq), 0) FROM revisions WHERE declaration_id = :d",
                {"d": declaration_id},
            )
            seq = int(row[0]) + 1 if row else 1
            self.db.execute(
                "INSERT INTO revisions (id, declaration_id, seq, digest, created_at) "
                "VALUES (:id, :d, :seq, :digest, :at)",
                {"id": revision_id, "d": declaration_id, "seq": seq, "digest": digest, "at": now()},
            )
        return revision_id


class _Batches:
    """A run's batch rows, looked up in ascending order of the actions they cover."""

    def __init__(self, rows: Sequence[Sequence[Any]]) -> None:
        self._rows = list(rows)
        self._at = 0
        self._evidence: dict[int, dict[str, Any]] = {}

    def of(
        self, seq: int, ref: str | None, evidence: dict[str, Any] | None, at: str | None
    ) -> tuple[str, str | None, dict[str, Any] | None, str | None]:
        """A pending action's status, rollback reference, evidence and time, as the batch
        covering ``seq`` journaled them (its own, pending, when none covers it)."""
        rows = self._rows
        while self._at < len(rows) and rows[self._at][1] < seq:
            self._at += 1
        if self._at == len(rows) or rows[self._at][0] > seq:
            return "pending", ref, evidence, at
        first, _last, status, manifest, verified, updated = rows[self._at]
        if ref is None and manifest is not None:
            ref = f"{manifest}#{seq}"
        if status == "succeeded":
            if first not in self._evidence:
                self._evidence[first] = json.loads(verified) if verified else {}
            found = self._evidence[first].get(str(seq))
            if found is not None:
                return "succeeded", ref, evidence or found, updated
        return "running", ref, evidence, updated


def _like_escaped(text: str) -> str:
    """``text`` matched as it is by ``LIKE ... ESCAPE '\\'``."""
    return "".join("\\" + c if c in "\\%_" else c for c in text)
