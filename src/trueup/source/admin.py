"""What a source's operator does: init, publish, invite, revoke, and look at the fleet.

Each change is authorised like an apply (grants on the ``source:`` target)
and audited: publishing, inviting and revoking are who-did-what questions.
Enrollment and reports come from followers over HTTPS and are recorded in
their own tables, not in the audit log (the README says so).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trueup import audit
from trueup.errors import UsageError
from trueup.model import Target
from trueup.session import Session
from trueup.source.keys import SourceKeys
from trueup.source.revisions import draft
from trueup.source.store import Follower, Report, SourceStore
from trueup.source.wire import Revision, manifest_for
from trueup.state.store import now

#: What grants and the audit log name a source's changes against.
SOURCE = Target("source", "revisions", "this source's revisions and followers", "")
INVITE_PREFIX = "trueup-invite:"
MAX_INVITE_SECONDS = 24 * 3600


def keys_for(session: Session) -> SourceKeys:
    return SourceKeys(session.settings.data / "source")


@dataclass(frozen=True)
class Published:
    revision: Revision
    new_blobs: int
    unchanged: bool


class SourceAdmin:
    """A source's operations as one actor, against one store."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.keys = keys_for(session)

    @property
    def rows(self) -> SourceStore:
        return SourceStore(self.session.store)

    def _authorize(self, event: str) -> None:
        """Refuse (and audit) an actor no grant allows to change the source."""
        self.session.gates(SOURCE, event).authorize("apply")

    def _audit(self, event: str, detail: dict[str, Any]) -> None:
        audit.record(
            self.session.store, event, "success", self.session.actor, SOURCE, detail=detail
        )

    def init(self, hosts: list[str]) -> SourceKeys:
        self._authorize("source.initialised")
        self.keys.create(hosts)
        self._audit(
            "source.initialised",
            {
                "signing": self.keys.signing_fingerprint(),
                "tls": self.keys.tls_fingerprint(),
                "hosts": hosts,
            },
        )
        return self.keys

    def publish(self, path: Path, note: str | None) -> Published:
        """Sign and store a revision of ``path``; the same content again is no new revision."""
        self.keys.require()
        self._authorize("source.published")
        made = draft(path, self.session.settings.max_file_bytes)
        rows = self.rows
        seq, profile_id = rows.latest_seq()
        if profile_id is not None and profile_id != made.profile["id"]:
            raise UsageError(
                f"{path}: this source publishes profile {profile_id!r}, not "
                f"{made.profile['id']!r}; its followers apply one profile",
                hint="publish it from another source (its own TRUEUP_DATA)",
            )
        manifest = manifest_for(made.profile, made.entries, seq + 1, note, now())
        latest = rows.revision()
        if latest is not None and latest.manifest["digest"] == manifest["digest"]:
            return Published(latest, 0, unchanged=True)
        signature = self.keys.sign(Revision(manifest, "", ()).signed_bytes())
        revision = Revision(manifest, signature, tuple(made.entries))
        new = set(made.blobs) - rows.have_blobs(list(made.blobs))
        rows.add_revision(revision, made.blobs, self.session.actor.key)
        self._audit(
            "source.published",
            {"revision": revision.id, "seq": revision.seq, "note": note, "blobs": len(new)},
        )
        return Published(revision, len(new), unchanged=False)

    def invite(self, endpoint: str, groups: list[str], seconds: int) -> tuple[str, float]:
        """A single-use invitation; the store keeps only its code's digest."""
        self.keys.require()
        if not 0 < seconds <= MAX_INVITE_SECONDS:
            raise UsageError("--expires must be more than 0 and at most 24h")
        latest = self.rows.revision()
        declared = set(latest.profile.get("groups", [])) if latest else set()
        unknown = sorted(set(groups) - declared)
        if latest is not None and unknown:
            raise UsageError(
                f"--group {unknown[0]}: the published profile declares no such group "
                f"(it declares: {', '.join(sorted(declared)) or 'none'})",
                hint="declare it in [profile] groups and publish, or pick a declared one",
            )
        self._authorize("source.invited")
        code = secrets.token_urlsafe(24)
        expires = time.time() + seconds
        self.rows.add_invitation(code, groups, expires, self.session.actor.key)
        invitation = {
            "endpoint": endpoint,
            "tls": self.keys.tls_fingerprint(),
            "signing": self.keys.signing_fingerprint(),
            "groups": groups,
            "code": code,
            "expires": int(expires),
        }
        raw = json.dumps(invitation, sort_keys=True, separators=(",", ":")).encode()
        self._audit("source.invited", {"groups": groups, "expires": int(expires)})
        return INVITE_PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("="), expires

    def revoke(self, name: str) -> Follower:
        follower = self.find(name)
        if follower.revoked_at is not None:
            raise UsageError(f"follower {follower.name!r} was revoked already")
        self._authorize("source.revoked")
        self.rows.revoke(follower, self.session.actor.key)
        self._audit("source.revoked", {"follower": follower.name, "id": follower.id})
        return follower

    def find(self, name: str) -> Follower:
        follower = self.rows.follower(name)
        if follower is None:
            raise UsageError(f"no follower named {name!r}", hint="trueup source followers")
        return follower

    def fleet(self, name: str | None = None) -> list[Report]:
        reports = self.rows.fleet()
        if name is not None:
            found = self.find(name)
            reports = [r for r in reports if r.follower.id == found.id]
        return reports


def new_follower_id() -> str:
    return base64.b32encode(os.urandom(10)).decode().lower()
