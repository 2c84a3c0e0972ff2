"""Profiles are validated without pydantic when plainly valid, in bulk with it
otherwise, and always with the same result and the same errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from trueup.declare import plain, profile
from trueup.declare.models import ProfileMeta
from trueup.errors import UsageError

MIXED: list[dict[str, Any]] = [
    {"id": "inline", "kind": "file", "target": "a/one.txt", "content": "1"},
    {
        "id": "src",
        "kind": "file",
        "target": "./a//two.txt",
        "source": "two.txt",
        "executable": True,
    },
    {"id": "ln", "kind": "file", "target": "a/link", "link": "one.txt", "depends_on": ["inline"]},
    {"id": "local", "kind": "file", "target": "rc", "content": "x", "policy": "append-local"},
    {"id": "tree", "kind": "directory", "target": "t", "source": "tree", "policy": "replace"},
    {"id": "sk", "kind": "skill", "target": "skills/s", "source": "skill"},
    {
        "id": "cfg",
        "kind": "config",
        "target": "c.json",
        "keys": {"a.b": 1, "c": [1, 2]},
        "overlay": ["d"],
        "verify": {"command": ["true"]},
        "groups": ["work"],
    },
]
DOCUMENT = {"profile": {"id": "p", "name": "P"}, "resource": MIXED}


def test_bulk_and_plain_validation_give_what_validating_each_resource_gives() -> None:
    each = [profile._entry(raw, i, "p.toml") for i, raw in enumerate(MIXED)]
    assert profile._all_at_once(MIXED) == each
    assert profile._plainly_valid(MIXED) == each
    assert profile._validate(DOCUMENT, "p.toml")["resources"] == each


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 700),
    st.text(max_size=4),
    st.sampled_from(["a.txt", "d/x", "../up", "-bad", "ok.id", "toml", "yaml", "replace", "merge"]),
    st.lists(st.sampled_from(["a", "b.c", "", "x..y", "a.b"]), max_size=3),
    st.dictionaries(st.sampled_from(["a", "b.c", "a.b", ""]), st.integers(0, 3), max_size=3),
    st.fixed_dictionaries(
        {"command": st.lists(st.sampled_from(["true", ""]), max_size=2)},
        optional={"timeout": st.one_of(st.integers(-1, 3), st.booleans()), "x": st.none()},
    ),
)
KIND_FIELDS = {
    "file": st.one_of(
        st.fixed_dictionaries(
            {"content": st.text(max_size=3)}, optional={"executable": st.booleans()}
        ),
        st.fixed_dictionaries({"source": st.just("s.txt")}),
        st.fixed_dictionaries({"link": st.sampled_from(["t", "", "a\0b"])}),
    ),
    "directory": st.fixed_dictionaries({"source": st.just("tree")}),
    "skill": st.fixed_dictionaries({"source": st.just("skill")}),
    "config": st.fixed_dictionaries(
        {"keys": st.dictionaries(st.sampled_from(["a", "b.c", "d"]), st.integers(), min_size=1)},
        optional={
            "overlay": st.lists(st.sampled_from(["x", "y.z"]), max_size=2),
            "format": st.sampled_from(["toml", "json", "yaml"]),
        },
    ),
}


@st.composite
def resources(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly valid resources of every kind, a third of them with one field spoiled."""
    kind = draw(st.sampled_from(sorted(KIND_FIELDS)))
    raw: dict[str, Any] = {
        "id": "r.1",
        "kind": kind,
        "target": draw(st.sampled_from(["a/b", "./c//d"])),
    }
    raw.update(draw(KIND_FIELDS[kind]))
    raw.update(
        draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "policy": st.sampled_from(
                        ["replace", "replace-if-unmodified", "merge", "mirror-owned"]
                    ),
                    "depends_on": st.lists(st.just("x"), max_size=2),
                    "groups": st.lists(st.just("g"), max_size=2),
                    "verify": st.fixed_dictionaries(
                        {"command": st.lists(st.just("true"), min_size=1, max_size=2)},
                        optional={"timeout": st.integers(1, 9)},
                    ),
                },
            )
        )
    )
    if draw(st.integers(0, 2)) == 0:
        name = draw(st.sampled_from([*raw, "colour", "content", "source", "executable", "keys"]))
        raw[name] = draw(VALUES)
    return raw


RESOURCE = resources()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RESOURCE)
def test_whatever_plain_validation_accepts_pydantic_accepts_the_same(raw: dict[str, Any]) -> None:
    plainly = profile._plainly_valid([raw])
    event("plainly valid" if plainly is not None else "left to pydantic")
    if plainly is not None:
        assert plainly == [profile._entry(raw, 0, "p.toml")]


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {"id": st.sampled_from(["p", "ok.id", "-x", 1]), "name": st.text(max_size=2)},
        optional={
            "description": VALUES,
            "groups": VALUES,
            "colour": VALUES,
            "allow_sources_outside": st.one_of(
                VALUES, st.lists(st.sampled_from(["", "../x", "/opt/y", "a\0b", 3]), max_size=2)
            ),
        },
    )
)
def test_profile_sections_plain_and_pydantic_agree(raw: dict[str, Any]) -> None:
    plainly = plain.checked(raw, plain.META)
    event("plainly valid" if plainly is not None else "left to pydantic")
    if plainly is not None:
        assert plainly == ProfileMeta.model_validate(raw).model_dump()


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"kind": "fiel"}, "field 'kind': unknown kind 'fiel'"),
        ({"policy": "merge"}, "field 'policy': 'merge' is not a file policy"),
        ({"target": "../up"}, "field 'target'"),
        ({"content": None, "colour": "red"}, "field 'colour'"),
    ],
)
def test_one_bad_resource_among_thousands_is_named(bad: dict[str, Any], named: str) -> None:
    raws: list[dict[str, Any]] = [
        {"id": f"f{i}", "kind": "file", "target": f"d/f{i}", "content": "x"} for i in range(2000)
    ]
    raws[1234] = {k: v for k, v in {**raws[1234], **bad}.items() if v is not None}
    assert profile._all_at_once(raws) is None
    with pytest.raises(UsageError) as refused:
        profile._validate({"profile": {"id": "p", "name": "P"}, "resource": raws}, "p.toml")
    assert f"p.toml: resource 'f1234': {named}" in refused.value.message
