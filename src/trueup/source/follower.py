"""What a follower keeps: its membership (pins, groups), its credential, blobs, revisions.

All under ``<data>/follow``. The credential goes to the OS keyring when a
usable backend exists; otherwise (a headless server, a timer without a
session) into a 0600 file beside the membership, where a scheduled
``trueup sync`` can read it. Blobs enter the cache only once whole and
verified, so a cut download never passes for content.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueup.errors import UsageError
from trueup.private import make_folders, write_file
from trueup.source import SourceUnreachable

if TYPE_CHECKING:  # revisions and blobs load when there is one to lay out
    from trueup.source.wire import Revision

KEYRING_SERVICE = "trueup-follower"
MEMBERSHIP = "follower.json"
CREDENTIAL = "credential"
LAST = "last.json"
#: Beside a laid-out revision: the share as received, signed manifest and all.
SHARE = "share.json"


@dataclass(frozen=True)
class Membership:
    """Who this machine is to its source, and what it pinned at enrollment."""

    name: str
    follower: str
    endpoint: str
    tls: str
    signing: str
    groups: list[str]
    #: ``keyring`` or ``file``: where the credential is.
    credential_in: str
    enrolled_at: str


class FollowerHome:
    """``<data>/follow``: one source per data folder."""

    def __init__(self, data: Path) -> None:
        self.folder = data / "follow"

    # -- membership and credential ------------------------------------------
    def membership(self) -> Membership:
        try:
            raw = json.loads((self.folder / MEMBERSHIP).read_bytes())
        except FileNotFoundError:
            raise UsageError(
                "this machine follows no source",
                hint="ask the source's operator for an invitation (trueup source invite), "
                "then: trueup follow INVITE --name NAME",
            ) from None
        return Membership(**raw)

    def enrolled(self) -> bool:
        return (self.folder / MEMBERSHIP).exists()

    def keep(self, membership: Membership, credential: str) -> Membership:
        make_folders(self.folder)
        where = "keyring" if _keyring_usable() else "file"
        if where == "keyring":
            import keyring

            keyring.set_password(KEYRING_SERVICE, membership.follower, credential)
        else:
            write_file(self.folder / CREDENTIAL, credential.encode())
        kept = Membership(**{**asdict(membership), "credential_in": where})
        write_file(self.folder / MEMBERSHIP, json.dumps(asdict(kept), indent=2).encode())
        (self.folder / LAST).unlink(missing_ok=True)  # a new source: nothing seen from it yet
        return kept

    def credential(self, membership: Membership) -> str:
        if membership.credential_in == "keyring":
            import keyring

            found = keyring.get_password(KEYRING_SERVICE, membership.follower)
        else:
            try:
                found = (self.folder / CREDENTIAL).read_text().strip()
            except FileNotFoundError:
                found = None
        if not found:
            raise UsageError(
                f"the credential of follower {membership.name!r} is gone "
                f"(from the {membership.credential_in})",
                hint="enroll again with a new invitation: trueup follow INVITE --name NAME",
            )
        return found

    # -- what was seen and applied ------------------------------------------
    def last(self) -> dict[str, Any]:
        try:
            value: dict[str, Any] = json.loads((self.folder / LAST).read_bytes())
        except (FileNotFoundError, ValueError):
            return {"seq": 0, "roots": {}}
        return value

    def remember(self, last: dict[str, Any]) -> None:
        make_folders(self.folder)
        tmp = self.folder / f".{LAST}.{os.getpid()}"
        write_file(tmp, json.dumps(last, sort_keys=True).encode())
        os.replace(tmp, self.folder / LAST)

    # -- blobs ----------------------------------------------------------------
    @property
    def blobs(self) -> Path:
        return self.folder / "blobs"

    def missing(self, revision: Revision) -> dict[str, int]:
        return {d: n for d, n in revision.blobs().items() if not (self.blobs / d).exists()}

    def partial(self, digest: str) -> Path:
        make_folders(self.blobs / "partial")
        return self.blobs / "partial" / digest

    def admit(self, digest: str) -> None:
        """Move a downloaded blob into the cache once its bytes are what the digest says."""
        partial = self.blobs / "partial" / digest
        if _sha256(partial) != digest:
            partial.unlink()
            raise SourceUnreachable(
                f"blob {digest} arrived with other content than the signed revision names; "
                "it was discarded and nothing was changed",
                hint="sync again; if it happens again, something alters what the source sends",
            )
        os.replace(partial, self.blobs / digest)

    # -- revisions, laid out as a profile folder --------------------------------
    def lay_out(self, revision: Revision) -> Path:
        """The follower's share of ``revision`` as a profile file and its sources.

        Every blob is checked against its digest again as it is copied: the cache
        is this machine's disk, and planning must only ever see signed content.
        """
        import shutil

        folder = self._revision_folder(revision.seq, revision.manifest["digest"])
        profile = folder / "profile.json"
        if profile.exists():
            return profile
        building = folder.with_name(folder.name + f".{os.getpid()}.tmp")
        shutil.rmtree(building, ignore_errors=True)
        make_folders(building)
        try:
            self._fill(building, revision)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        shutil.rmtree(folder, ignore_errors=True)  # a lay-out cut short (none is used)
        os.replace(building, folder)
        return profile

    def _fill(self, building: Path, revision: Revision) -> None:
        from trueup.source.wire import safe_path

        for entry in revision.entries:
            for relpath, item in entry["files"].items():
                place = building / safe_path(relpath)
                make_folders(place.parent)
                if item[0] == "link":
                    os.symlink(item[1], place)
                    continue
                data = (self.blobs / item[1]).read_bytes()
                if hashlib.sha256(data).hexdigest() != item[1]:
                    (self.blobs / item[1]).unlink()
                    raise SourceUnreachable(
                        f"cached blob {item[1]} was altered on this disk; it was discarded",
                        hint="sync again to download it afresh",
                    )
                write_file(place, data, 0o700 if item[3] else 0o600)
        document = {
            "profile": revision.profile,
            "resource": [entry["resource"] for entry in revision.entries],
        }
        write_file(building / "profile.json", json.dumps(document, indent=1).encode())
        kept = {**revision.to_json(), "digests": revision.digests}  # checked on arrival
        write_file(building / SHARE, json.dumps(kept).encode())

    def _revision_folder(self, seq: int, digest: str) -> Path:
        return self.folder / "revisions" / f"{seq}-{digest[:16]}"

    def held_tag(self) -> str | None:
        """The ETag of the share last laid out here, which the next sync starts from."""
        last = self.last()
        folder = self._revision_folder(last.get("held_seq", 0), last.get("held_digest", ""))
        return str(last["etag"]) if last.get("etag") and (folder / SHARE).exists() else None

    def held(self) -> tuple[Revision, Path] | None:
        """That share and its profile file, or ``None`` when it is gone."""
        from trueup.source.wire import Revision

        last = self.last()
        folder = self._revision_folder(last.get("held_seq", 0), last.get("held_digest", ""))
        try:
            raw = json.loads((folder / SHARE).read_bytes())
        except (OSError, ValueError):
            return None
        revision = Revision(
            raw["manifest"],
            raw["signature"],
            tuple(raw["entries"]),
            tuple(raw["hidden"]),
            raw.get("digests"),
        )
        return revision, folder / "profile.json"

    def hold(self, revision: Revision, etag: str) -> None:
        """Remember ``revision`` (laid out) as the share the next sync starts from.

        The share held before it stays too (a run of it may wait for ``recover``,
        which reads its sources); older ones go.
        """
        import shutil

        last = self.last()
        kept = {self._revision_folder(revision.seq, revision.manifest["digest"]).name}
        if last.get("etag"):
            kept.add(self._revision_folder(last["held_seq"], last["held_digest"]).name)
        held = {"etag": etag, "held_seq": revision.seq, "held_digest": revision.manifest["digest"]}
        self.remember({**last, **held})
        for old in (self.folder / "revisions").iterdir():
            if old.name not in kept and not old.name.endswith(".tmp"):
                shutil.rmtree(old, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _keyring_usable() -> bool:
    """Whether the OS keyring has a real backend (not keyring's fail or null one)."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return False
    backend = keyring.get_keyring()
    return not isinstance(backend, fail.Keyring) and getattr(backend, "priority", 0) > 0
