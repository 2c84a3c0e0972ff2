"""Property-test scaffolding shared by the JSON, TOML and YAML editing tests.

Each format's test module supplies its format name and a ``dump`` that writes
a plain dict in that format; ``property_tests`` builds the three property tests
that every format must pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trueup.kinds.formats import MISSING, KeyPath, KeyPathError, flatten, load, same_value

keys = st.text(
    st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"]), min_size=1, max_size=6
)
scalars = (
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=10)
    | st.integers(-(2**63), 2**63 - 1)
    | st.booleans()
)
leaves = scalars | st.lists(scalars, max_size=3)
docs = st.recursive(
    st.dictionaries(keys, leaves, max_size=4),
    lambda inner: st.dictionaries(keys, inner | leaves, max_size=3),
    max_leaves=12,
)
property_settings = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def leaf_paths(data: Any, prefix: KeyPath = ()) -> dict[KeyPath, object]:
    out: dict[KeyPath, object] = {}
    for key, value in data.items():
        path = (*prefix, key)
        if isinstance(value, dict) and value:
            out.update(leaf_paths(value, path))
        else:
            out[path] = value
    return out


def all_paths(data: dict[str, Any], prefix: KeyPath = ()) -> list[KeyPath]:
    out: list[KeyPath] = []
    for key, value in data.items():
        out.append((*prefix, key))
        if isinstance(value, dict):
            out.extend(all_paths(value, (*prefix, key)))
    return out


def blocked(data: dict[str, Any], path: KeyPath) -> bool:
    node: object = data
    for segment in path[:-1]:
        if not isinstance(node, dict) or segment not in node:
            return False
        node = node[segment]
        if not isinstance(node, dict):
            return True
    return False


PropertyTest = Callable[..., None]


def property_tests(
    fmt: str, dump: Callable[[dict[str, Any]], str]
) -> tuple[PropertyTest, PropertyTest, PropertyTest]:
    """The round-trip, set and delete property tests for one format."""

    @property_settings
    @given(data=docs)
    def test_property_load_dump_round_trip(data: dict[str, Any]) -> None:
        text = dump(data)
        document = load(fmt, text, origin="prop")
        assert document.to_text() == text
        assert same_value(document.keys_flat(), flatten(data))
        for path, value in leaf_paths(data).items():
            document.set(path, value)
        assert document.to_text() == text

    @property_settings
    @given(data=docs, draw=st.data())
    def test_property_set_then_get_and_nothing_else_changes(
        data: dict[str, Any], draw: st.DataObject
    ) -> None:
        text = dump(data)
        document = load(fmt, text, origin="prop")
        fresh = st.lists(keys, min_size=1, max_size=3).map(tuple)
        existing = all_paths(data)
        paths = [fresh]
        if existing:
            paths += [
                st.sampled_from(existing),
                st.tuples(st.sampled_from(existing), fresh).map(lambda pair: pair[0] + pair[1]),
            ]
        path: KeyPath = draw.draw(st.one_of(*paths))
        value = draw.draw(leaves | st.dictionaries(keys, leaves, max_size=2))
        if blocked(data, path):
            with pytest.raises(KeyPathError):
                document.set(path, value)
            assert document.to_text() == text
            return
        document.set(path, value)
        assert same_value(document.get(path), value)
        for other, before in leaf_paths(data).items():
            if other[: len(path)] != path and path[: len(other)] != other:
                assert same_value(document.get(other), before), other
        reloaded = load(fmt, document.to_text(), origin="prop")
        assert same_value(reloaded.keys_flat(), document.keys_flat())

    @property_settings
    @given(data=docs, draw=st.data())
    def test_property_delete_removes_only_that_key(
        data: dict[str, Any], draw: st.DataObject
    ) -> None:
        existing = all_paths(data)
        if not existing:
            return
        document = load(fmt, dump(data), origin="prop")
        path = draw.draw(st.sampled_from(existing))
        document.delete(path)
        assert document.get(path) is MISSING
        for other, before in leaf_paths(data).items():
            if other[: len(path)] != path:
                assert same_value(document.get(other), before), other
        reloaded = load(fmt, document.to_text(), origin="prop")
        assert same_value(reloaded.keys_flat(), document.keys_flat())

    return (
        test_property_load_dump_round_trip,
        test_property_set_then_get_and_nothing_else_changes,
        test_property_delete_removes_only_that_key,
    )
