"""``trueup sync``: the newest revision this follower may see, verified, then planned or applied.

Order matters: the signing key must be the pinned one, the signature must
hold, every entry must be one the signature covers, the sequence number may
not go back, and every blob must match its digest, all before anything is
planned. Only blobs missing from the cache are downloaded (a cut one resumes
with ``Range``). When the source cannot be reached or trusted, nothing on
this machine is touched (exit 6). An unchanged source whose last revision
converged here costs one request answered 304, and no plan.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueup.errors import UsageError
from trueup.settings import Settings
from trueup.source import SourceUnreachable
from trueup.source.client import SourceClient
from trueup.source.follower import FollowerHome, Membership

if TYPE_CHECKING:
    from trueup.execute.executor import RunResult
    from trueup.model import Plan
    from trueup.session import Session
    from trueup.source.wire import Revision
    from trueup.targets.follower import FollowerTarget


@dataclass
class Fetched:
    """A verified revision share, its blobs cached, laid out as a profile file."""

    revision: Revision
    etag: str
    profile: Path
    blobs: int
    #: Bytes received for this sync: the revision and the blobs it lacked.
    received: int


class FollowerSync:
    """One sync of this machine's share onto ``root``."""

    def __init__(self, settings: Settings, root: Path) -> None:
        self.home = FollowerHome(settings.data)
        self.membership: Membership = self.home.membership()
        self.root_key = os.path.abspath(os.path.expanduser(root))
        self._client: SourceClient | None = None
        #: What reporting to the source said when it could not (the sync itself stands).
        self.report_problem: str | None = None

    @property
    def client(self) -> SourceClient:
        if self._client is None:
            credential = self.home.credential(self.membership)
            self._client = SourceClient(self.membership.endpoint, self.membership.tls, credential)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def known(self) -> dict[str, Any]:
        """What the last sync onto this root saw and left: revision, ETag, outcome."""
        roots: dict[str, Any] = self.home.last()["roots"]
        return dict(roots.get(self.root_key, {}))

    def unchanged(self) -> dict[str, Any] | None:
        """What converged here (``known``), when the source still offers exactly that share.

        Looked up here first, so a root that did not converge costs no request;
        then one HEAD request: a timer's sync on an unchanged source gets its
        304, and a changed source sends no body the full sync would fetch again.
        """
        tag = self.home.held_tag()
        known = self._converged_on(tag)
        if tag is None or known is None:
            return None
        answer = self.client.request("HEAD", "/v1/revision", headers={"If-None-Match": tag})
        return known if answer.status == 304 else None

    def _converged_on(self, tag: str | None) -> dict[str, Any] | None:
        """``known``, when this root converged on the share the ETag ``tag`` names."""
        known = self.known()
        if tag and known.get("outcome") == "converged" and known.get("etag") == tag:
            return known
        return None

    def fetch(self, recheck: bool = False) -> Fetched | None:
        """The share to plan, or ``None``: unchanged since it converged here.

        The request names the share this machine holds (its ETag): the source
        answers 304 while it is current, or only what changed since.
        """
        tag = self.home.held_tag()
        headers = {"If-None-Match": tag} if tag else {}
        answer = self.client.request("GET", "/v1/revision", headers=headers)
        if answer.status == 304 and tag:
            if not recheck and self._converged_on(tag) is not None:
                return None
            held = self.home.held()
            if held is not None:
                return Fetched(held[0], tag, held[1], 0, self.client.received)
            answer = self.client.request("GET", "/v1/revision")  # the held share is gone
        if answer.status == 404:
            raise UsageError(
                "the source has published no revision yet; nothing was changed",
                hint="on the source: trueup source publish PROFILE",
            )
        if answer.status != 200:
            raise SourceUnreachable(f"the source answered {answer.status} for the revision")
        held = self.home.held() if tag else None
        revision = self.verify(answer.json(), held[0] if held else None)
        blobs = self.download(revision)
        profile = self.home.lay_out(revision)
        etag = answer.headers.get("etag", "")
        self.home.hold(revision, etag)
        return Fetched(revision, etag, profile, blobs, self.client.received)

    def verify(self, body: dict[str, Any], base: Revision | None = None) -> Revision:
        from trueup.source.keys import verify_signature
        from trueup.source.wire import WireError, check_share, parse

        try:
            key = base64.b64decode(body.get("key", ""))
            revision = parse(body, base)
        except (WireError, ValueError) as exc:
            raise _untrusted(f"the revision is malformed: {exc}") from None
        presented = "sha256:" + hashlib.sha256(key).hexdigest()
        if presented != self.membership.signing:
            raise _untrusted(
                f"the revision is signed by another key ({presented}) than the pinned one "
                f"({self.membership.signing})"
            )
        if not verify_signature(key, revision.signature, revision.signed_bytes()):
            raise _untrusted(f"revision {revision.seq}'s signature does not hold")
        try:
            check_share(revision)
        except WireError as exc:
            raise _untrusted(str(exc)) from None
        last = self.home.last()
        if revision.seq < last["seq"] or (
            revision.seq == last["seq"] and last.get("revision") not in (None, revision.id)
        ):
            raise _untrusted(
                f"the source offers revision {revision.seq} ({revision.id}) after this machine "
                f"saw revision {last['seq']}: a replayed or rolled-back revision"
            )
        self.home.remember({**last, "seq": revision.seq, "revision": revision.id})
        return revision

    def download(self, revision: Revision) -> int:
        """Fetch the blobs the cache lacks; each enters it only once whole and verified."""
        missing = self.home.missing(revision)
        for digest, size in sorted(missing.items()):
            self.client.download(f"/v1/blobs/{digest}", self.home.partial(digest), size)
            self.home.admit(digest)
        return len(missing)

    def target(self, session: Session, fetched: Fetched) -> FollowerTarget:
        from trueup.targets.follower import FollowerTarget

        return FollowerTarget(
            session, Path(self.root_key), lambda plan, result: self.report(fetched, plan, result)
        )

    def report(self, fetched: Fetched, plan: Plan, result: RunResult | None) -> None:
        """Tell the source how this sync ended; remember it for the next one.

        A report that cannot be sent leaves the sync's outcome as it is: the
        machine is what it is, and the next sync reports again.
        """
        from trueup.model import ActionType, plan_status
        from trueup.targets.base import drift_items

        outcome = result.outcome.value if result else plan_status(plan.actions)
        human = [
            {"rid": a.resource_id, "summary": a.summary}
            for a in plan.actions
            if a.type is ActionType.HUMAN_ACTION
        ]
        body = {
            "revision": fetched.revision.id,
            "seq": fetched.revision.seq,
            "outcome": outcome,
            "drift": drift_items(plan),
            "human": human,
            "message": result.message if result else "",
        }
        try:
            self.client.request("POST", "/v1/reports", body, limit=65536)
        except SourceUnreachable as exc:
            self.report_problem = exc.message
        last = self.home.last()
        roots = dict(last.get("roots", {}))
        roots[self.root_key] = {
            "etag": fetched.etag,
            "seq": fetched.revision.seq,
            "revision": fetched.revision.id,
            "outcome": outcome,
        }
        self.home.remember({**last, "roots": roots})


def _untrusted(why: str) -> SourceUnreachable:
    return SourceUnreachable(
        f"{why}; nothing was changed",
        hint="something between this machine and the source alters what it sends, or the "
        "source's store was tampered with; tell the source's operator",
    )
