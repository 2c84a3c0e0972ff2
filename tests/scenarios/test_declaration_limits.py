"""Declarations too deep to handle, or not parseable, are refused by name (exit 2).

A target thousands of folders deep or values nested thousands of levels once
ended in a RecursionError ("internal error ... this is a bug"); a syntax error
in a JSON file was called a YAML error. Each is now a usage error naming the
file, its format and, for syntax, the line and column.
"""

from __future__ import annotations

import json

import pytest
from world import Result, World


def refused(result: Result, *named: str) -> None:
    assert result.code == 2, (result.code, result.err)
    assert "internal error" not in result.err and "Recursion" not in result.err
    assert "Traceback" not in result.err
    for text in named:
        assert text in result.err, result.err


def profile_with(resource: dict[str, object]) -> dict[str, object]:
    return {"profile": {"id": "p", "name": "P"}, "resource": [resource]}


def test_a_target_thousands_of_folders_deep_is_refused_at_load(world: World) -> None:
    target = "/".join(["d"] * 2000) + "/f"
    path = world.write(
        "p.json",
        json.dumps(profile_with({"id": "a", "kind": "file", "target": target, "content": "x"})),
    )
    result = world.run("plan", str(path), "--root", str(world.root))
    refused(result, f"{path}: resource 'a': field 'target'", "2001 names deep", "at most 128")
    assert len(result.err) < 600
    assert not list(world.root.iterdir())


def _nested(levels: int) -> dict[str, object]:
    value: object = 1
    for _ in range(levels):
        value = {"k": value}
    return {"id": "c", "kind": "config", "target": "c.json", "keys": {"a": value}}


@pytest.mark.parametrize("levels", [700, 200])
def test_values_nested_hundreds_deep_are_refused(world: World, levels: int) -> None:
    text = json.dumps(profile_with(_nested(1)))
    text = text.replace('{"k": 1}', '{"k": ' * levels + "1" + "}" * levels)
    path = world.write("p.json", text)
    refused(world.run("plan", str(path), "--root", str(world.root)), "JSON", "nested more than")


BRACKETS = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("name", "text", "format_name"),
    [
        ("p.json", '{"profile": {"id": "p", "name": "P"}, "x": ' + BRACKETS + "}", "JSON"),
        ("p.toml", '[profile]\nid = "p"\nname = "P"\nx = ' + BRACKETS + "\n", "TOML"),
        ("p.yaml", "profile: {id: p, name: P}\nx: " + BRACKETS + "\n", "YAML"),
    ],
)
def test_brackets_nested_past_any_parser_name_the_format(
    world: World, name: str, text: str, format_name: str
) -> None:
    path = world.write(name, text)
    result = world.run("plan", str(path), "--root", str(world.root))
    refused(result, f"{path}: not valid {format_name}")


def test_an_org_file_nested_too_deep_is_refused_too(world: World) -> None:
    path = world.write("org.json", '{"org": {"id": "o", "name": "O"}, "x": ' + BRACKETS + "}")
    refused(world.run("org", "plan", str(path)), f"{path}: not valid JSON")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("p.json", '{"profile": {"id": "p",, }', ["not valid JSON", "line 1 column 24"]),
        ("p.yaml", "profile:\n  id: p\n  name: [unclosed\n", ["not valid YAML", "line 4"]),
        ("p.yml", "profile: {id: p\n", ["not valid YAML", "line 2"]),
        ("p.toml", '[profile]\nid = "p\n', ["not valid TOML", "line 2, column 8"]),
    ],
)
def test_a_syntax_error_names_the_format_and_where(
    world: World, name: str, text: str, expected: list[str]
) -> None:
    path = world.write(name, text)
    refused(world.run("plan", str(path), "--root", str(world.root)), str(path), *expected)
