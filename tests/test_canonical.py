"""Canonical JSON: one spelling per value, the same in every version, so digests kept
in applied records and the audit chain still name their values after an upgrade."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trueup.canonical import canonical_json, digest, storage_json
from trueup.errors import UsageError

_plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def test_keys_are_sorted_and_nothing_is_spaced() -> None:
    assert canonical_json({"b": [1, 2], "a": "é"}) == '{"a":"é","b":[1,2]}'.encode()


@given(_plain)
def test_the_spelling_is_the_standard_library_s_forever(value: object) -> None:
    expected = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    assert canonical_json(value) == expected.encode()


def test_small_and_large_floats_keep_python_s_spelling() -> None:
    assert canonical_json([1.5e-05, 1e-07, 1e16]) == b"[1.5e-05,1e-07,1e+16]"


@given(_plain)
def test_key_order_never_changes_the_digest(value: object) -> None:
    assert digest({"x": value, "y": 1}) == digest({"y": 1, "x": value})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_as_a_user_error(bad: float) -> None:
    with pytest.raises(UsageError, match="not finite"):
        canonical_json({"a": [1, {"b": bad}]})


@given(_plain)
def test_what_is_stored_reads_back_as_itself(value: object) -> None:
    assert json.loads(storage_json(value)) == value
