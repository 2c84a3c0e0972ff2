"""Canonical JSON and digests, and the fast encoding of what trueup stores.

A plan's identity is the sha256 of its canonical bytes, so the encoding must be
byte-stable across runs, platforms and versions: sorted keys, no whitespace,
UTF-8, Python's float spelling, and no non-finite numbers (they have no JSON
spelling). Digests are kept (applied records, the audit chain) and compared
with digests computed by later versions, so this encoding never changes.

``storage_json`` is for rows and files trueup reads back itself (journal,
applied records, rollback manifests, caches), whose bytes are never compared:
orjson writes them much faster than ``json``, which matters when a first apply
of 10,000 resources stores some 40,000 small values.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from typing import Any

import orjson

from trueup.errors import UsageError


def as_json(value: Any) -> str:
    """The JSON spelling of what TOML and YAML read as dates and times: ISO 8601 text.

    Only values JSON has no type for come here, so no digest computed before
    changes: a config file holding a date could not be identified at all.
    """
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=as_json
)
_SORTED = orjson.OPT_SORT_KEYS


#: The types whose orjson spelling is ``_ENCODER``'s, byte for byte (tests/test_canonical.py).
_PLAIN = frozenset({str, int, bool, type(None)})


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only dicts, lists, tuples, text, integers, booleans and
    ``None`` (exactly those types): orjson then writes the canonical bytes.

    A float is not plain: orjson spells some (``1e-05``) differently, and writes
    NaN as ``null``. What orjson refuses of the rest (a key that is not text, an
    integer beyond 64 bits, a lone surrogate) goes to ``_ENCODER`` too.
    """
    kind = type(value)
    if kind is dict:
        items = value.values()
    elif kind is list or kind is tuple:
        items = value
    else:
        return kind in _PLAIN
    # Most items are text, looked at here: no call (nor, unlike all(), a generator step)
    # per item.
    for item in items:  # noqa: SIM110
        if type(item) not in _PLAIN and not _plain(item):
            return False
    return True


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes; NaN and infinities are refused.

    A lone surrogate (JSON's ``"\ud800"``, YAML's escaped surrogate pairs, both
    read as such) has no UTF-8 spelling: it is encoded as its three bytes all
    the same ("surrogatepass"), so a file holding one still has an identity.
    Text without one encodes exactly as before.

    Plain values (``_plain``), a plan's and a profile's among them, are written
    by orjson, several times faster than the ``json`` encoder, in the same bytes.
    """
    if _plain(value):
        try:
            return orjson.dumps(value, option=_SORTED)
        except TypeError:  # orjson.JSONEncodeError: see _plain
            pass
    try:
        return _ENCODER.encode(value).encode("utf-8", "surrogatepass")
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
        raise UsageError(
            "a number that is not finite (NaN or an infinity) has no JSON spelling, so "
            "trueup cannot identify or record it",
            hint="replace it in the declaration or the target file by a finite number",
        ) from None


def storage_json(value: Any) -> bytes:
    """Compact JSON for what trueup stores and reads back; never for an identity."""
    try:
        return orjson.dumps(value, option=_SORTED)
    except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits...
        return canonical_json(value)


def storage_text(value: Any) -> str:
    """``storage_json`` as text, for a database column."""
    return storage_json(value).decode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """The identity of a JSON-able value: sha256 of its canonical encoding."""
    return sha256_hex(canonical_json(value))
