"""Editing a config file: the text an action leaves in it, written, verified,
recorded and previewed.

Every key and comment the action does not name stays byte for byte; once
trueup's last key goes, the file is given back as it was before trueup first
wrote in it, spacing included (``_as_it_was``).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from trueup.errors import UsageError
from trueup.fs import ReadOnlyFS, sha256_bytes
from trueup.kinds.base import ApplyContext, ObserveContext, evidence_of
from trueup.kinds.config_keys import load_config, spelt, value_digest
from trueup.kinds.content import text_diff
from trueup.kinds.formats import (
    MISSING,
    ConfigDocument,
    KeyPathError,
    UnsupportedValueError,
    parse_key_path,
    same_value,
)
from trueup.model import Action, ActionType, Evidence, Observed, Resource
from trueup.sealing import holds_sealed, mask, opened, unsealed_leaves


def _new_text(action: Action, resource: Resource, fs: ReadOnlyFS, path: str) -> str:
    try:
        return _edit(action, resource, fs, path)
    except (KeyPathError, UnsupportedValueError) as exc:
        raise UsageError(
            f"resource {resource.id!r}: cannot edit {resource.target}: {exc}"
        ) from None


def _edit(action: Action, resource: Resource, fs: ReadOnlyFS, path: str) -> str:
    entry = fs.entry(path)
    there = entry is not None and entry.state == "file"  # "blocked": a file trueup removes first
    current = fs.read_bytes(path).decode("utf-8") if there else ""
    doc = load_config(resource, current)
    payload = action.payload
    if payload.get("replace"):
        fresh = load_config(resource, "")
        for key in resource.spec["overlay"]:
            value = doc.get(parse_key_path(key))
            if value is not MISSING:
                fresh.set(parse_key_path(key), value)
        for key, value in resource.spec["keys"].items():
            fresh.set(parse_key_path(key), unsealed_leaves(value))
        return str(fresh.to_text())
    for key in payload.get("unset", []):
        doc.delete(parse_key_path(key))
    for table in payload.get("prune", []):
        # Table by table, deepest first: a person who wrote in one table trueup
        # made owns that one (and so its parents), not every table pruned with it.
        kept = str(doc.to_text())
        doc.delete(parse_key_path(table))
        if _loses_a_comment(kept, str(doc.to_text())):
            doc = load_config(resource, kept)
    for key, value in payload.get("set", {}).items():
        # The one place a sealed secret is opened: written into the file.
        doc.set(parse_key_path(key), unsealed_leaves(value))
    text = str(doc.to_text())
    original = payload.get("original")
    if original is True and action.type is ActionType.REMOVE_RESOURCE:
        # Recorded by an older trueup: the file had no final newline before trueup's
        # first key, so none again.
        text = text.removesuffix("\r\n" if text.endswith("\r\n") else "\n")
    gap = "\r\n\r\n" if "\r\n" in current else "\n\n"
    if text.endswith(gap) and not current.endswith(gap):
        # A deleted or replaced last table leaves the blank line that set it apart;
        # but the blank lines a kept block scalar (YAML ``|+``) ends with are its value.
        trimmed = text.rstrip("\r\n") + ("\r\n" if "\r\n" in current else "\n")
        if same_value(load_config(resource, trimmed).keys_flat(), doc.keys_flat()):
            text = trimmed
    if isinstance(original, str):
        return _as_it_was(resource, text, original, doc) or text
    return text


def _as_it_was(resource: Resource, text: str, original: str, doc: ConfigDocument) -> str | None:
    """``text`` give or take one blank line or its final newline, when that is the file
    exactly as it was before trueup first wrote in it (``original``, its digest).

    Once trueup's keys are gone, the spacing it put around them (a blank line
    before a table, a final newline) goes too, and the file is given back
    byte for byte; a file changed in any other way since is left as edited.
    """
    if len(text) > _AS_IT_WAS_MAX or sha256_bytes(text.encode("utf-8")) == original:
        return None
    newline = "\r\n" if "\r\n" in text else "\n"
    for candidate in itertools.chain(_one_line_apart(text, newline), _respelt_empty(text)):
        if sha256_bytes(candidate.encode("utf-8")) == original and same_value(
            load_config(resource, candidate).keys_flat(), doc.keys_flat()
        ):
            return candidate
    return None


def _outcome(action: Action, resource: Resource, fs: ReadOnlyFS, path: str) -> str | None:
    """The file's new text, or ``None`` when it goes: trueup made it and nothing is left."""
    text = _new_text(action, resource, fs, path)
    dropped = action.type is ActionType.REMOVE_RESOURCE and action.payload.get("file_made")
    return None if dropped and text.strip() in ("", "{}") else text


def apply(action: Action, resource: Resource, ctx: ApplyContext, path: str) -> None:
    """Stage the edit of ``path``: the target, or the file a link there leads to."""
    entry = ctx.fs.entry(path)
    text = _outcome(action, resource, ctx.fs, path)
    if text is None and action.payload.get("linked"):
        text = ""  # a link's file stays, emptied: the link is the person's, and leads there
    if text is None:
        ctx.writer.remove(path)
    elif entry is None and holds_sealed(resource.spec["keys"]):
        # A file trueup makes to hold a secret is readable by its owner only.
        ctx.writer.write(path, text.encode("utf-8"), mode=0o600)
    else:
        ctx.writer.write(path, text.encode("utf-8"), bool(entry and entry.executable))


def verify(action: Action, resource: Resource, observed: Observed) -> Evidence:
    """Whether the file, as ``observed`` once the action ran, holds what it should."""
    flat = observed.detail.get("flat", {})
    was = action.payload.get("unset_was", {})
    lingering = [
        k
        for k in action.payload.get("unset", [])
        if spelt(k) in flat and (k not in was or value_digest(flat[spelt(k)]) == was[k])
    ]
    if lingering:
        return Evidence("failed", "keys", observed.digest, message=f"{lingering[0]} still set")
    if action.type is ActionType.REMOVE_RESOURCE:
        return Evidence("passed", "keys", observed.digest)
    return evidence_of(observed, resource.spec["digest"], "keys")


def record(action: Action, resource: Resource) -> Mapping[str, Any] | None:
    if action.type is ActionType.REMOVE_RESOURCE:
        return None
    detail: dict[str, Any] = {
        "keys": {k: value_digest(v) for k, v in resource.spec["keys"].items()}
    }
    for key in ("tables", "foreign", "before", "original"):
        if action.payload.get(key):
            detail[key] = action.payload[key]
    if action.payload.get("file_made"):
        detail["file_made"] = True
    return detail


def preview(
    action: Action, resource: Resource, ctx: ObserveContext, live: Mapping[str, Any], path: str
) -> str:
    """The diff of the file at ``path`` (the target, or the file its link leads to);
    ``live``: its values as observed, whose secrets are masked."""
    entry = ctx.fs.entry(path)
    old = ctx.fs.read_bytes(path) if entry is not None and entry.state == "file" else None
    text = _outcome(action, resource, ctx.fs, path)
    diff = text_diff(old, None if text is None else text.encode("utf-8"), resource.target)
    # Secret values, declared or live (a person's own token beside trueup's keys).
    return mask(diff, opened([resource.spec["keys"], live]))


def _loses_a_comment(before: str, after: str) -> bool:
    """Whether ``after`` lacks a comment line ``before`` has (TOML and YAML: ``#``).

    Counted, not just looked up: the same note written in two tables is two
    comments, and dropping the table holding one of them still loses a comment.
    """
    remaining = Counter(after.splitlines())
    comments = Counter(line for line in before.splitlines() if line.lstrip().startswith("#"))
    return any(remaining[line] < count for line, count in comments.items())


#: Larger files are not searched for their former spacing (see _as_it_was).
_AS_IT_WAS_MAX = 256 * 1024


def _one_line_apart(text: str, newline: str) -> Iterator[str]:
    """``text`` with one blank line more or less somewhere, or its final newline toggled."""
    yield text.removesuffix(newline) if text.endswith(newline) else text + newline
    at = text.find(newline)
    while at != -1:
        after = at + len(newline)
        yield text[:after] + newline + text[after:]
        if text.startswith(newline, after):
            yield text[:after] + text[after + len(newline) :]
        at = text.find(newline, after)


#: Empty tables and lists a file may spell with a space inside (``{ }``); at most this
#: many are tried both ways (_as_it_was).
_EMPTY_SPELLINGS = {"{}": "{ }", "[]": "[ ]"}
_RESPELT_MAX = 3


def _respelt_empty(text: str) -> Iterator[str]:
    """``text`` with some of its empty tables and lists spelt with a space inside:
    a table that held only trueup's keys is written back empty as ``{}``, where the
    person may have spelt it ``{ }``."""
    spots = sorted((at, empty) for empty in _EMPTY_SPELLINGS for at in _occurrences(text, empty))
    if not spots or len(spots) > _RESPELT_MAX:
        return
    for chosen in range(1, 1 << len(spots)):
        pieces, last = [], 0
        for bit, (at, empty) in enumerate(spots):
            if chosen >> bit & 1:
                pieces += [text[last:at], _EMPTY_SPELLINGS[empty]]
                last = at + len(empty)
        yield "".join(pieces) + text[last:]


def _occurrences(text: str, part: str) -> Iterator[int]:
    at = text.find(part)
    while at != -1:
        yield at
        at = text.find(part, at + len(part))
