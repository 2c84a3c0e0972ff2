"""The wire format source and followers share: a signed manifest, entries, blobs.

A revision is a manifest (profile, sequence number, and the root: the sha256
of the sorted digests of every resource entry) signed with the source's
Ed25519 key, and the entries themselves: a resource as its profile declares
it, with the source files it reads as content-addressed blobs. A follower
receives the manifest, only the entries its groups may see, and the digests
of the others: together they must give the signed root, so the source never
signs per follower and the signing key never needs to be on a serving host.

A follower that holds an earlier share (named by its ETag) receives only
what changed since: entries changed or added, ids removed, hidden digests
added or removed. One edited file in a 1,000-file profile is then one entry
and one blob on the wire. Pure: no I/O, no cryptography here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
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


def root(digests: Iterable[str]) -> str:
    """What the manifest signs for a set of entries: order-free, one digest."""
    return sha256_hex(canonical_json(sorted(digests)))


@dataclass(frozen=True)
class Revision:
    """A manifest, its signature, and entries: all of them, or one follower's share and
    the digests of the entries hidden from it (``hidden``)."""

    manifest: dict[str, Any]
    signature: str
    entries: tuple[Entry, ...]
    hidden: tuple[str, ...] = ()
    #: Each entry's digest by resource id, when already known (computed otherwise).
    known: Mapping[str, str] | None = field(default=None, compare=False, repr=False)

    @cached_property
    def digests(self) -> dict[str, str]:
        """Each entry's digest by resource id: hashing 1,000 entries is worth doing once."""
        if self.known is not None:
            return dict(self.known)
        return {entry["resource"]["id"]: entry_digest(entry) for entry in self.entries}

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
            "hidden": list(self.hidden),
        }


def manifest_for(
    profile: Mapping[str, Any], entries: Sequence[Entry], seq: int, note: str | None, at: str
) -> dict[str, Any]:
    """What the source signs: the content digest names the revision, ``seq`` orders it."""
    signed = root(entry_digest(entry) for entry in entries)
    content = sha256_hex(canonical_json({"profile": profile, "entries": signed}))
    return {
        "schema": SCHEMA,
        "id": f"{profile['id']}:{content}",
        "digest": content,
        "seq": seq,
        "profile": dict(profile),
        "entries": signed,
        "count": len(entries),
        "note": note,
        "published_at": at,
    }


def share(entries: Iterable[Entry], groups: Iterable[str]) -> list[Entry]:
    """The entries a follower in ``groups`` sees, by resource id: resources of no group or
    of one of its groups, and every resource those depend on (needed to apply them)."""
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
    return sorted(
        (entry for entry in entries if entry["resource"]["id"] in seen),
        key=lambda entry: str(entry["resource"]["id"]),
    )


def cut(revision: Revision, groups: Iterable[str]) -> Revision:
    """``revision`` (every entry) as a follower in ``groups`` receives it."""
    shown = share(revision.entries, groups)
    every = revision.digests
    kept = {rid: every[rid] for rid in (entry["resource"]["id"] for entry in shown)}
    hidden = sorted(set(every.values()) - set(kept.values()))
    return Revision(revision.manifest, revision.signature, tuple(shown), tuple(hidden), kept)


def share_tag(revision: Revision) -> str:
    """The ETag of a follower's share: its sequence number, then a digest that changes
    exactly when what the follower sees does."""
    digests = sorted(revision.digests.values())
    mark = sha256_hex(canonical_json([revision.id, digests, list(revision.hidden)]))[:32]
    return f'"{revision.seq}-{mark}"'


def tag_seq(tag: str) -> int | None:
    """The sequence number an ETag of ``share_tag`` names, or ``None``."""
    seq, dash, _ = tag.strip('"').partition("-")
    return int(seq) if dash and seq.isdigit() else None


def delta(base: Revision, new: Revision) -> dict[str, Any]:
    """What a follower holding share ``base`` needs to rebuild share ``new``."""
    before = set(base.digests.values())
    after = new.digests
    ids = {entry["resource"]["id"] for entry in new.entries}
    return {
        "schema": SCHEMA,
        "manifest": new.manifest,
        "signature": new.signature,
        "base": base.id,
        "changed": [e for e in new.entries if after[e["resource"]["id"]] not in before],
        "removed": sorted(
            {e["resource"]["id"] for e in base.entries} - ids,
        ),
        "hidden_added": sorted(set(new.hidden) - set(base.hidden)),
        "hidden_removed": sorted(set(base.hidden) - set(new.hidden)),
    }


def parse(body: Mapping[str, Any], base: Revision | None = None) -> Revision:
    """A revision as received, whole or as a delta from ``base``; its shape checked, not
    yet its signature."""
    try:
        if body.get("schema") != SCHEMA:
            raise WireError(f"unknown revision format {body.get('schema')!r}")
        manifest = dict(body["manifest"])
        int(manifest["seq"])
        known: dict[str, str] | None = None
        if "base" in body:
            entries, hidden, known = _rebuilt(body, base)
        else:
            entries, hidden = list(body["entries"]), [str(d) for d in body.get("hidden", [])]
            for entry in entries:
                _check_entry(entry)
        entries.sort(key=lambda entry: str(entry["resource"]["id"]))
        revision = Revision(manifest, str(body["signature"]), tuple(entries), tuple(hidden), known)
    except (KeyError, TypeError, AttributeError) as exc:
        raise WireError(f"a revision missing or misshaping {exc}") from None
    return revision


def _rebuilt(
    body: Mapping[str, Any], base: Revision | None
) -> tuple[list[Entry], list[str], dict[str, str]]:
    """The share ``body`` changes ``base`` into; the digests of entries kept from ``base``
    are the ones checked when it arrived, so only the changed ones are hashed."""
    if base is None or base.id != body["base"]:
        raise WireError(f"a change from revision {body['base']!r}, which this machine lacks")
    entries = {entry["resource"]["id"]: entry for entry in base.entries}
    digests = dict(base.digests)
    for rid in body["removed"]:
        entries.pop(rid, None)
        digests.pop(rid, None)
    for entry in body["changed"]:
        _check_entry(entry)
        entries[entry["resource"]["id"]] = entry
        digests[entry["resource"]["id"]] = entry_digest(entry)
    hidden = (set(base.hidden) - set(body["hidden_removed"])) | set(body["hidden_added"])
    return list(entries.values()), sorted(str(d) for d in hidden), digests


def check_share(revision: Revision) -> None:
    """The entries received and the hidden digests give the signed root (run after the
    signature check): no entry was added, altered or left out."""
    digests = list(revision.digests.values())
    if (
        len(digests) != len(revision.entries)
        or len(set(digests)) != len(digests)
        or set(digests) & set(revision.hidden)
    ):
        raise WireError("an entry received twice")
    if root([*digests, *revision.hidden]) != revision.manifest["entries"]:
        raise WireError("the resources received are not the ones the source signed")


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
