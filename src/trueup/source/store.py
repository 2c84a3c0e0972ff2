"""The source's rows: revisions, blobs, followers, invitations, reports.

One store for every ``source serve`` process: SQLite by default, PostgreSQL
when several hosts serve behind a load balancer. Secrets are kept as their
sha256 only; revisions and blobs are never changed once written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trueup.canonical import canonical_json, sha256_hex
from trueup.errors import UsageError
from trueup.source.wire import Revision
from trueup.state.db import Database, UniqueViolation
from trueup.state.store import Store, now


@dataclass(frozen=True)
class Follower:
    id: str
    name: str
    groups: tuple[str, ...]
    enrolled_at: str
    revoked_at: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "groups": list(self.groups),
            "enrolled_at": self.enrolled_at,
            "revoked_at": self.revoked_at,
        }


@dataclass(frozen=True)
class Report:
    follower: Follower
    revision_id: str | None
    seq: int | None
    outcome: str | None
    detail: dict[str, Any]
    reported_at: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "follower": self.follower.to_json(),
            "revision": self.revision_id,
            "seq": self.seq,
            "outcome": self.outcome,
            "drift": self.detail.get("drift", []),
            "human": self.detail.get("human", []),
            "message": self.detail.get("message"),
            "reported_at": self.reported_at,
        }


@dataclass(frozen=True)
class NewReport:
    """What a follower reported about one sync."""

    follower: str
    revision_id: str
    seq: int
    outcome: str
    detail: dict[str, Any]


_FOLLOWER = "id, name, groups, enrolled_at, revoked_at"


class SourceStore:
    """The source's tables, over the one state store."""

    def __init__(self, store: Store) -> None:
        self.db: Database = store.db

    # -- revisions and blobs ------------------------------------------------
    def latest_seq(self) -> tuple[int, str | None]:
        row = self.db.one("SELECT seq, profile_id FROM source_revisions ORDER BY seq DESC LIMIT 1")
        return (int(row[0]), str(row[1])) if row else (0, None)

    def add_revision(self, revision: Revision, blobs: Mapping[str, bytes], actor: str) -> None:
        """Store a signed revision and the blobs it reads that the store lacks, at once."""
        manifest = revision.manifest
        with self.db.transaction():
            have = self.have_blobs(list(blobs))
            self.db.executemany(
                "INSERT INTO source_blobs (digest, size, data) VALUES (?, ?, ?)",
                [(d, len(data), data) for d, data in blobs.items() if d not in have],
            )
            try:
                self.db.execute(
                    "INSERT INTO source_revisions (seq, id, profile_id, manifest, signature, "
                    "entries, published_by, published_at) VALUES (:seq, :id, :profile, "
                    ":manifest, :signature, :entries, :by, :at)",
                    {
                        "seq": revision.seq,
                        "id": revision.id,
                        "profile": manifest["profile"]["id"],
                        "manifest": canonical_json(manifest).decode("utf-8"),
                        "signature": revision.signature,
                        "entries": json.dumps(list(revision.entries), sort_keys=True),
                        "by": actor,
                        "at": manifest["published_at"],
                    },
                )
            except UniqueViolation:
                raise UsageError(
                    f"revision {revision.seq} was published meanwhile by another process",
                    hint="publish again",
                ) from None

    def have_blobs(self, digests: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(digests), 500):
            chunk = digests[start : start + 500]
            names = ", ".join(f":d{i}" for i in range(len(chunk)))
            rows = self.db.execute(
                f"SELECT digest FROM source_blobs WHERE digest IN ({names})",
                {f"d{i}": d for i, d in enumerate(chunk)},
            )
            found.update(str(row[0]) for row in rows)
        return found

    def blob(self, digest: str) -> bytes | None:
        row = self.db.one("SELECT data FROM source_blobs WHERE digest = :d", {"d": digest})
        return bytes(row[0]) if row else None

    def revision(self, which: str | int | None = None) -> Revision | None:
        """The newest revision, or the one with this sequence number or id."""
        columns = "SELECT manifest, signature, entries FROM source_revisions"
        if which is None:
            row = self.db.one(f"{columns} ORDER BY seq DESC LIMIT 1")
        elif isinstance(which, int) or str(which).isdigit():
            row = self.db.one(f"{columns} WHERE seq = :seq", {"seq": int(which)})
        else:
            row = self.db.one(f"{columns} WHERE id = :id", {"id": which})
        if row is None:
            return None
        return Revision(json.loads(row[0]), str(row[1]), tuple(json.loads(row[2])))

    def newest(self) -> tuple[int, str] | None:
        """The newest revision's sequence number and id: one small row per follower poll."""
        row = self.db.one("SELECT seq, id FROM source_revisions ORDER BY seq DESC LIMIT 1")
        return (int(row[0]), str(row[1])) if row else None

    def revisions(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT seq, id, manifest, published_by FROM source_revisions ORDER BY seq"
        )
        listed = []
        for seq, rid, manifest, by in rows:
            meta = json.loads(manifest)
            listed.append(
                {
                    "seq": int(seq),
                    "id": str(rid),
                    "profile": meta["profile"]["id"],
                    "resources": meta["count"],
                    "note": meta.get("note"),
                    "published_at": meta["published_at"],
                    "published_by": str(by),
                }
            )
        return listed

    # -- invitations and followers ------------------------------------------
    def add_invitation(self, code: str, groups: list[str], expires_at: float, by: str) -> None:
        self.db.execute(
            "INSERT INTO source_invitations (digest, groups, expires_at, created_by, created_at) "
            "VALUES (:d, :g, :e, :by, :at)",
            {
                "d": sha256_hex(code.encode()),
                "g": json.dumps(groups),
                "e": expires_at,
                "by": by,
                "at": now(),
            },
        )

    def enroll(self, code: str, name: str, follower_id: str, credential: str) -> Follower:
        """Use an invitation once: a follower with its groups.

        ``LookupError`` says why the invitation is not valid; ``ValueError``, that
        the name is taken (the invitation is then left unused).
        """
        digest = sha256_hex(code.encode())
        with self.db.transaction():
            row = self.db.one(
                "SELECT groups, expires_at, used_at FROM source_invitations WHERE digest = :d",
                {"d": digest},
            )
            if row is None:
                raise LookupError("the invitation is not known to this source")
            if row[2] is not None:
                raise LookupError("the invitation was used already")
            if float(row[1]) < time.time():
                raise LookupError("the invitation has expired")
            if (
                self.db.one("SELECT 1 FROM source_followers WHERE name = :n", {"n": name})
                is not None
            ):
                raise ValueError(f"a follower named {name!r} is enrolled already")
            at = now()
            self.db.execute(
                "UPDATE source_invitations SET used_by = :f, used_at = :at WHERE digest = :d "
                "AND used_at IS NULL",
                {"f": follower_id, "at": at, "d": digest},
            )
            self.db.execute(
                "INSERT INTO source_followers (id, name, groups, credential_digest, enrolled_at) "
                "VALUES (:id, :n, :g, :c, :at)",
                {
                    "id": follower_id,
                    "n": name,
                    "g": row[0],
                    "c": sha256_hex(credential.encode()),
                    "at": at,
                },
            )
        return Follower(follower_id, name, tuple(json.loads(row[0])), at, None)

    def follower_by_credential(self, credential: str) -> Follower | None:
        row = self.db.one(
            f"SELECT {_FOLLOWER} FROM source_followers WHERE credential_digest = :c",
            {"c": sha256_hex(credential.encode())},
        )
        return _follower(row) if row else None

    def follower(self, name_or_id: str) -> Follower | None:
        row = self.db.one(
            f"SELECT {_FOLLOWER} FROM source_followers WHERE name = :n OR id = :n",
            {"n": name_or_id},
        )
        return _follower(row) if row else None

    def followers(self) -> list[Follower]:
        rows = self.db.execute(f"SELECT {_FOLLOWER} FROM source_followers ORDER BY name")
        return [_follower(row) for row in rows]

    def revoke(self, follower: Follower, by: str) -> None:
        self.db.execute(
            "UPDATE source_followers SET revoked_at = :at, revoked_by = :by WHERE id = :id",
            {"at": now(), "by": by, "id": follower.id},
        )

    # -- reports ------------------------------------------------------------
    def add_reports(self, reports: list[NewReport]) -> None:
        """Store reports in one transaction: a fleet reporting at once costs one commit."""
        at = now()
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO source_reports (follower_id, revision_id, seq, outcome, detail, "
                "reported_at) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (r.follower, r.revision_id, r.seq, r.outcome, json.dumps(r.detail), at)
                    for r in reports
                ],
            )

    def fleet(self) -> list[Report]:
        """Every follower with its last report (or none yet)."""
        reports = []
        for follower in self.followers():
            row = self.db.one(
                "SELECT revision_id, seq, outcome, detail, reported_at FROM source_reports "
                "WHERE follower_id = :f ORDER BY id DESC LIMIT 1",
                {"f": follower.id},
            )
            if row is None:
                reports.append(Report(follower, None, None, None, {}, None))
            else:
                reports.append(
                    Report(
                        follower,
                        str(row[0]),
                        int(row[1]),
                        str(row[2]),
                        json.loads(row[3]),
                        str(row[4]),
                    )
                )
        return reports


def _follower(row: Any) -> Follower:
    return Follower(
        str(row[0]),
        str(row[1]),
        tuple(json.loads(row[2])),
        str(row[3]),
        str(row[4]) if row[4] is not None else None,
    )
