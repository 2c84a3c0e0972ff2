"""Large profiles are validated in bulk, with the same result and the same errors."""

from __future__ import annotations

from typing import Any

import pytest

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
DOCUMENT = {"profile": {"id": "p", "name": "P"}, "resource": MIXED}


def test_bulk_validation_gives_what_validating_each_resource_gives() -> None:
    each = [profile._entry(raw, i, "p.toml") for i, raw in enumerate(MIXED)]
    assert profile._all_at_once(MIXED) == each
    assert profile._validate(DOCUMENT, "p.toml")["resources"] == each


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
