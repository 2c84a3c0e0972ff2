"""Profiles are validated by pydantic in bulk (one call per model), and one by one
only to word the first error: always with the same result and the same errors."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from trueup.declare import profile
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
DOCUMENT = {"profile": {"id": "p", "name": "P", "groups": ["work"]}, "resource": MIXED}


def test_bulk_validation_gives_what_validating_each_resource_gives() -> None:
    each = [profile._entry(raw, i, "p.toml") for i, raw in enumerate(MIXED)]
    assert profile._all_at_once(MIXED) == each
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
def test_whatever_bulk_validation_accepts_each_validation_accepts_the_same(
    raw: dict[str, Any],
) -> None:
    bulk = profile._all_at_once([raw])
    event("valid in bulk" if bulk is not None else "worded one by one")
    if bulk is not None:
        assert bulk == [profile._entry(raw, 0, "p.toml")]
    else:
        with pytest.raises(UsageError):
            profile._entry(raw, 0, "p.toml")


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


def test_a_profile_orjson_cannot_write_is_not_remembered_and_loads_the_same(
    tmp_path: Any,
) -> None:
    """The validated-profile cache is orjson's bytes read back by orjson, which would
    read an integer beyond 64 bits as a float: such a profile is validated each time."""
    import json
    from pathlib import Path

    from trueup.fs import ReadOnlyFS

    big = 2**70
    path = Path(tmp_path) / "p.json"
    path.write_text(
        json.dumps(
            {
                "profile": {"id": "p", "name": "P"},
                "resource": [
                    {"id": "cfg", "kind": "config", "target": "c.json", "keys": {"n": big}},
                    {"id": "f", "kind": "file", "target": "f.txt", "content": "x"},
                ],
            }
        )
    )
    os.utime(path, (1, 1))  # not racy: a cache would be trusted
    cache = Path(tmp_path) / "cache"
    first = profile.load_profile(path, ReadOnlyFS(), cache)
    assert not cache.exists() or not any(cache.iterdir())
    again = profile.load_profile(path, ReadOnlyFS(), cache)
    assert again.digest == first.digest
    assert again.resources == first.resources
    assert first.resources[0].spec["keys"]["n"] == big


def test_a_remembered_profile_loads_as_validated(tmp_path: Any) -> None:
    import json
    from pathlib import Path

    from trueup.fs import ReadOnlyFS

    path = Path(tmp_path) / "p.json"
    path.write_text(json.dumps({"profile": {"id": "p", "name": "P"}, "resource": MIXED[:1]}))
    os.utime(path, (1, 1))  # not racy: the cache is trusted
    cache = Path(tmp_path) / "cache"
    first = profile.load_profile(path, ReadOnlyFS(), cache)
    assert len(list(cache.iterdir())) == 1
    read = profile._read_cache(next(cache.iterdir()), os.stat(path))
    assert read is not None
    assert read["resources"] == profile._validate(json.loads(path.read_text()), "p")["resources"]
    again = profile.load_profile(path, ReadOnlyFS(), cache)
    assert (again.digest, again.resources) == (first.digest, first.resources)
