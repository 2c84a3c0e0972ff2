"""Canonical JSON and digests.

A plan's identity is the sha256 of its canonical bytes, so the encoding must be
byte-stable across runs, platforms and Python versions: sorted keys, no
whitespace, UTF-8, and no non-finite numbers (they have no JSON spelling).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes; NaN and infinities are refused."""
    return _ENCODER.encode(value).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """The identity of a JSON-able value: sha256 of its canonical encoding."""
    return sha256_hex(canonical_json(value))
