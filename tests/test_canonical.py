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


def _stdlib(value: object) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8", "surrogatepass")


_float_free = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(_float_free)
def test_values_without_floats_are_spelt_as_the_standard_library_does(value: object) -> None:
    """They are written by orjson (canonical._plain): byte for byte the same."""
    assert canonical_json(value) == _stdlib(value)


def test_every_character_is_escaped_as_the_standard_library_does() -> None:
    every = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    assert canonical_json(every) == _stdlib(every)
    keys = {c: 1 for c in [*every[::97], "\uffff", "\U00010000", "a\U00010000", "a\uffff"]}
    assert canonical_json(keys) == _stdlib(keys)


def test_what_orjson_refuses_or_spells_otherwise_is_the_standard_library_s() -> None:
    class Text(str):
        pass

    for value in [
        {"n": 2**64, "m": -(2**63) - 1},
        {"lone": "\ud800"},
        {Text("key"): 1},
        {1: "a", 2: "b"},
        [1e-05, 1.0, -0.0],
        _nested(300),  # deeper than orjson goes
    ]:
        assert canonical_json(value) == _stdlib(value)


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value
