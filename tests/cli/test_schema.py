"""``trueup schema``: the JSON Schema of a declaration file, for editors."""

from __future__ import annotations

import json

import pytest
from world import World


@pytest.mark.parametrize(("kind", "section"), [("profile", "profile"), ("org", "org")])
def test_schema_prints_a_json_schema_with_the_files_top_section(
    world: World, kind: str, section: str
) -> None:
    result = world.run("schema", kind)
    assert result.code == 0, result.err
    schema = json.loads(result.out)
    assert section in schema["properties"]


def test_schema_of_an_unknown_kind_is_a_usage_error(world: World) -> None:
    assert world.run("schema", "nonsense").code == 2
