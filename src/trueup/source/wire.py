"""The wire format source and followers share: a signed manifest, entries, blobs.

A revision is a manifest (profile, sequence number, the sha256 of every
resource entry) signed with the source's Ed25519 key, and the entries
themselves: a resource as its profile declares it, with the source files it
reads as content-addressed blobs. A follower receives the manifest and only
the entries its groups may see: each is checked against a digest the
signature covers, so the source never signs per follower and the signing key
never needs to be on a serving host. Pure: no I/O, no cryptography here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trueup.canonical import canonical_json, sha256_hex

SCHEMA = "trueup.revision/1"
#: A file in a revision: ``["file", digest, size, executable]`` or ``["link", target]``.
FileEntry = list[Any]
Entry = dict[str, Any]


class WireError(ValueError):
    """What arrived is not what the source signed (or not in the shape it signs)."""


def entry_digest(entry: Mapping[str, Any]) -> str:
    return sha256_hex(canonical_json(entry))


@dataclass(frozen=True)
class Revision:
    """A manifest, its signature, and entries (all of them, or one follower's share)."""

    manifest: dict[str, Any]
    signature: str
    entries: tuple[Entry, ...]

    @property
    def id(self) -> str:
        return str(self.manifest["id"])

    @property
    def seq(self) -> int:
        return int(self.manifest["seq"])

    @property
    def profile(self) -> dict[str, Any]:
        return dict(self.manifest["profile"])

    def signed_bytes(self) -> bytes:
        return canonical_json(self.manifest)

    def blobs(self) -> dict[str, int]:
        """Every blob the entries read: digest → size."""
        found: dict[str, int] = {}
        for entry in self.entries:
            for item in entry["files"].values():
                if item[0] == "file":
                    found[item[1]] = int(item[2])
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "manifest": self.manifest,
            "signature": self.signature,
            "entries": list(self.entries),
        }


def manifest_for(
    profile: Mapping[str, Any], entries: Sequence[Entry], seq: int, note: str | None, at: str
) -> dict[str, Any]:
    """What the source signs: the content digest names the revision, ``seq`` orders it."""
    digests = sorted(entry_digest(entry) for entry in entries)
    content = sha256_hex(canonical_json({"profile": profile, "entries": digests}))
    return {
        "schema": SCHEMA,
        "id": f"{profile['id']}:{content}",
        "digest": content,
        "seq": seq,
        "profile": dict(profile),
        "entries": digests,
        "note": note,
        "published_at": at,
    }


def share(entries: Iterable[Entry], groups: Iterable[str]) -> list[Entry]:
    """The entries a follower in ``groups`` sees: resources of no group or of one of its
    groups, and every resource those depend on (a dependency is needed to apply them)."""
    entries = list(entries)
    wanted = set(groups)
    by_id = {entry["resource"]["id"]: entry for entry in entries}
    seen: set[str] = set()
    stack = [
        rid
        for rid, entry in by_id.items()
        if not entry["resource"].get("groups") or wanted & set(entry["resource"]["groups"])
    ]
    while stack:
        rid = stack.pop()
        if rid in seen or rid not in by_id:
            continue
        seen.add(rid)
        stack.extend(by_id[rid]["resource"].get("depends_on", ()))
    return [entry for entry in entries if entry["resource"]["id"] in seen]


def share_tag(revision_id: str, entries: Iterable[Entry]) -> str:
    """The ETag of a follower's share: it changes exactly when what the follower sees does."""
    digests = sorted(entry_digest(entry) for entry in entries)
    return '"' + sha256_hex(canonical_json([revision_id, digests]))[:32] + '"'


def parse(body: Mapping[str, Any]) -> Revision:
    """A revision as received; its shape checked, not yet its signature."""
    try:
        if body.get("schema") != SCHEMA:
            raise WireError(f"unknown revision format {body.get('schema')!r}")
        manifest = body["manifest"]
        revision = Revision(dict(manifest), str(body["signature"]), tuple(body["entries"]))
        int(manifest["seq"])
        for entry in revision.entries:
            _check_entry(entry)
    except (KeyError, TypeError, AttributeError) as exc:
        raise WireError(f"a revision missing or misshaping {exc}") from None
    return revision


def check_share(revision: Revision) -> None:
    """Every entry received is one the signed manifest names (run after the signature check)."""
    signed = set(revision.manifest["entries"])
    for entry in revision.entries:
        if entry_digest(entry) not in signed:
            rid = entry["resource"].get("id")
            raise WireError(f"resource {rid!r} is not the one the source signed")


def safe_path(relpath: str) -> str:
    """A path inside the revision's folder, or a ``WireError``: no absolute path, no ``..``."""
    normal = posixpath.normpath(relpath)
    if (
        not relpath
        or normal != relpath
        or normal.startswith(("/", "../"))
        or normal in (".", "..")
        or "\0" in relpath
    ):
        raise WireError(f"a file path outside the revision: {relpath!r}")
    return normal


def _check_entry(entry: Mapping[str, Any]) -> None:
    if not isinstance(entry.get("resource"), Mapping) or not isinstance(entry.get("files"), dict):
        raise WireError("an entry without a resource or files")
    for relpath, item in entry["files"].items():
        safe_path(relpath)
        ok = (item[0] == "file" and len(item) == 4 and _is_digest(item[1])) or (
            item[0] == "link" and len(item) == 2 and isinstance(item[1], str)
        )
        if not ok:
            raise WireError(f"file {relpath!r}: not a file or link entry")


def _is_digest(value: Any) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )
