"""A profile file → a revision: its resources as declared, its sources as blobs.

A revision must apply on any follower as it was published, so everything it
needs travels with it: each ``source`` is rewritten as a path inside the
revision and its files become content-addressed blobs. A profile reading
sources from outside its own folder (``allow_sources_outside``) is refused:
those folders are one machine's, not the fleet's. So is one spelling out a
secret value: a revision is stored and sent to every follower.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trueup import kinds
from trueup.declare.files import read_document
from trueup.declare.profile import load_profile
from trueup.errors import UsageError, user_paths
from trueup.fs import ReadOnlyFS
from trueup.model import Resource
from trueup.source.wire import Entry, FileEntry


@dataclass(frozen=True)
class Draft:
    """A revision before it has a sequence number and a signature."""

    profile: dict[str, Any]
    entries: list[Entry]
    #: digest → the bytes of every blob the entries read.
    blobs: dict[str, bytes]


def draft(path: Path, max_file_bytes: int) -> Draft:
    """Validate ``path`` as ``plan`` would, then gather what a revision carries."""
    path = Path(os.path.abspath(path))
    where = str(path)
    fs = ReadOnlyFS(max_file_bytes=max_file_bytes)
    with user_paths(where):
        profile = load_profile(path, fs)
        document = read_document(path)
    meta = document["profile"]
    if meta.get("allow_sources_outside"):
        raise UsageError(
            f"{where}: [profile] field 'allow_sources_outside': a published profile reads "
            "its sources from its own folder only; those folders are this machine's",
            hint="copy what it needs into the profile's folder, then publish",
        )
    entries: list[Entry] = []
    blobs: dict[str, bytes] = {}
    for raw, resource in zip(document.get("resource", []), profile.resources, strict=True):
        if kinds.get(resource.kind).secret_literal(raw):
            raise UsageError(
                f"{where}: resource {resource.id!r}: spells out a secret value, which a "
                "revision would store and send to every follower",
                hint="reference it instead (see the README: secrets), then publish",
            )
        entries.append(_entry(dict(raw), resource, blobs, where))
    public = {k: meta[k] for k in ("id", "name", "description", "groups") if k in meta}
    public.setdefault("groups", [])
    return Draft(public, entries, blobs)


def _entry(raw: dict[str, Any], resource: Resource, blobs: dict[str, bytes], where: str) -> Entry:
    """One resource as declared, its ``source`` a path inside the revision."""
    declared = raw.get("source")
    files: dict[str, FileEntry] = {}
    if isinstance(declared, str):
        relpath = posixpath.normpath(declared.replace(os.sep, "/"))
        if relpath.startswith(("/", "../")) or relpath in (".", ".."):
            raise UsageError(
                f"{where}: resource {resource.id!r}: field 'source': {declared!r} is outside "
                "the profile's folder"
            )
        raw["source"] = relpath
        spec = resource.spec
        if "files" in spec:  # a folder: its files and links
            for rel, item in spec["files"].items():
                place = f"{relpath}/{rel}"
                if item[0] == "link":
                    files[place] = ["link", item[1]]
                else:
                    files[place] = _blob(os.path.join(spec["source"], rel), item[1], blobs, where)
                    files[place][3] = bool(item[2])
        else:
            files[relpath] = _blob(spec["source"], spec["digest"], blobs, where)
    return {"resource": raw, "files": files}


def _blob(path: str, expected: str, blobs: dict[str, bytes], where: str) -> FileEntry:
    data = Path(path).read_bytes()
    found = hashlib.sha256(data).hexdigest()
    if found != expected:
        raise UsageError(
            f"{where}: source {path} changed while it was being published",
            hint="publish again once it is saved",
        )
    blobs[found] = data
    return ["file", found, len(data), os.access(path, os.X_OK)]
