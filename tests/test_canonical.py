"""Canonical JSON: one spelling per value, so a digest names exactly one value."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from trueup.canonical import canonical_json, digest

_plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def test_keys_are_sorted_and_nothing_is_spaced() -> None:
    assert canonical_json({"b": [1, 2], "a": "é"}) == '{"a":"é","b":[1,2]}'.encode()


@given(_plain)
def test_every_plain_value_reads_back_as_itself(value: object) -> None:
    assert json.loads(canonical_json(value)) == value


@given(_plain)
def test_key_order_never_changes_the_digest(value: object) -> None:
    assert digest({"x": value, "y": 1}) == digest({"y": 1, "x": value})


def test_integers_beyond_64_bits_are_encoded_too() -> None:
    assert canonical_json({"n": 2**70}) == b'{"n":1180591620717411303424}'
