"""Key paths, value helpers and the factory shared by every config format."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trueup.kinds.formats import (
    FORMATS,
    MAX_KEY_DEPTH,
    MISSING,
    ConfigError,
    KeyPathError,
    UnsupportedValueError,
    canonical_value,
    check_key_paths,
    flatten,
    format_for_path,
    format_key_path,
    load,
    normalize_value,
    parse_key_path,
    same_value,
)

# --- parse_key_path --------------------------------------------------------------


@pytest.mark.parametrize(
    ("dotted", "expected"),
    [
        ("model", ("model",)),
        ("sandbox.mode", ("sandbox", "mode")),
        ('a."b.c".d', ("a", "b.c", "d")),
        ('"editor.fontSize"', ("editor.fontSize",)),
        ('mcp_servers."my server".env', ("mcp_servers", "my server", "env")),
        ('"say \\"hi\\"".x', ('say "hi"', "x")),
        ('"back\\\\slash"', ("back\\slash",)),
        ('"  padded  "', ("  padded  ",)),
        ("with space.ok", ("with space", "ok")),
        ("émoji.☕", ("émoji", "☕")),
        ("a.1.b", ("a", "1", "b")),
    ],
)
def test_parse_key_path(dotted: str, expected: tuple[str, ...]) -> None:
    assert parse_key_path(dotted) == expected


@pytest.mark.parametrize(
    ("dotted", "message"),
    [
        ("", "empty"),
        (".a", "empty segment"),
        ("a.", "empty segment"),
        ("a..b", "empty segment"),
        ('a."".b', "empty segment"),
        ('a."b', "unterminated quote"),
        ('a."b"c', "expected '.'"),
        ('a.b"c"', "quote may only open a segment"),
        ('"a\\nb"', "may be escaped"),
        ("a. b", "whitespace"),
        ("a .b", "whitespace"),
        ("a.\x00", "NUL"),
        ('"a\x00b"', "NUL"),
        ("__proto__", "reserved"),
        ("a.constructor", "reserved"),
        ('a."prototype".b', "reserved"),
    ],
)
def test_parse_key_path_errors(dotted: str, message: str) -> None:
    with pytest.raises(KeyPathError, match=message):
        parse_key_path(dotted)


def test_key_path_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="empty segment"):
        parse_key_path("a..b")


def test_parse_key_path_rejects_non_strings() -> None:
    with pytest.raises(KeyPathError, match="must be a string"):
        parse_key_path(("a", "b"))  # type: ignore[arg-type]


def test_format_key_path_quotes_only_when_needed() -> None:
    assert format_key_path(("sandbox", "mode")) == "sandbox.mode"
    assert format_key_path(("editor.fontSize",)) == '"editor.fontSize"'
    assert format_key_path(('say "hi"', "x")) == '"say \\"hi\\"".x'
    assert format_key_path((" lead",)) == '" lead"'
    assert format_key_path(("",)) == '""'


_segments = st.text(min_size=1, max_size=6).filter(
    lambda s: "\x00" not in s and s not in {"__proto__", "constructor", "prototype"}
)


@given(st.lists(_segments, min_size=1, max_size=4).map(tuple))
def test_format_then_parse_round_trips(path: tuple[str, ...]) -> None:
    assert parse_key_path(format_key_path(path)) == path


# --- check_key_paths -------------------------------------------------------------


def test_check_key_paths_accepts_disjoint_paths() -> None:
    check_key_paths(["model", "sandbox.mode", "sandbox.network", '"a.b"', "a!", "ab"])
    check_key_paths([])


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        (["a", "a"], "duplicate"),
        (["a.b", 'a."b"'], "duplicate"),
        (["a", "a.b"], "overlap"),
        (["a.b.c", "a"], "overlap"),
        (["a", "a!", "a.b"], "overlap"),
        (["x", "a..b"], "empty segment"),
        (["x", "a.\x00"], "NUL"),
        (["a.__proto__"], "reserved"),
        (["constructor"], "reserved"),
    ],
)
def test_check_key_paths_errors(paths: list[str], message: str) -> None:
    with pytest.raises(KeyPathError, match=message):
        check_key_paths(paths)


def test_a_key_path_is_at_most_max_key_depth_segments_deep() -> None:
    check_key_paths([".".join(["k"] * MAX_KEY_DEPTH), '"a.b.c"'])
    with pytest.raises(KeyPathError, match=f"65 segments; at most {MAX_KEY_DEPTH}"):
        check_key_paths([".".join(["k"] * (MAX_KEY_DEPTH + 1))])


def test_overlap_message_names_both_paths() -> None:
    with pytest.raises(KeyPathError) as info:
        check_key_paths(["sandbox.mode", "sandbox"])
    assert "'sandbox'" in str(info.value) and "'sandbox.mode'" in str(info.value)


def test_overlap_is_by_segment_not_by_prefix_string() -> None:
    check_key_paths(["ab", "a.b", "a.bc"])
    check_key_paths(['"a.b"', "a.c"])  # the key "a.b" is not inside "a"


# --- values ----------------------------------------------------------------------


def test_canonical_value_normalises() -> None:
    value = {
        "b": (1, 2, {"z": True, "y": None}),
        "a": 1.5,
        "when": dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC),
        "day": dt.date(2024, 5, 1),
    }
    result = canonical_value(value)
    assert result == {
        "a": 1.5,
        "b": [1, 2, {"y": None, "z": True}],
        "day": "2024-05-01",
        "when": "2024-05-01T12:00:00+00:00",
    }
    assert isinstance(result, dict)
    assert list(result) == ["a", "b", "day", "when"]
    assert list(result["b"][2]) == ["y", "z"]


def test_canonical_value_refuses_unknown_types() -> None:
    with pytest.raises(TypeError):
        canonical_value({"a": object()})


def test_normalize_value() -> None:
    class Name(str):
        pass

    assert normalize_value({"a": (1, Name("x"))}) == {"a": [1, "x"]}
    assert type(normalize_value(Name("x"))) is str
    with pytest.raises(UnsupportedValueError, match="strings"):
        normalize_value({1: "a"})
    with pytest.raises(UnsupportedValueError, match="set"):
        normalize_value({"a": {1, 2}})


def test_same_value_compares_types() -> None:
    assert same_value({"a": [1, "x"]}, {"a": [1, "x"]})
    assert same_value({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not same_value(1, True)
    assert not same_value(1, 1.0)
    assert not same_value(0, False)
    assert not same_value("1", 1)
    assert not same_value([1], [1, 2])
    assert not same_value({"a": 1}, {"a": 1, "b": 2})
    assert same_value(float("nan"), float("nan"))
    assert not same_value(MISSING, None)
    assert same_value(MISSING, MISSING)


def test_flatten() -> None:
    assert flatten({"a": {"b": 1, "c": {"d": [1, {"e": 2}]}}, "f": {}, "g.h": "x"}) == {
        "a.b": 1,
        "a.c.d": [1, {"e": 2}],
        "f": {},
        '"g.h"': "x",
    }


# --- factory ---------------------------------------------------------------------


def test_formats_and_format_for_path() -> None:
    assert FORMATS == ("toml", "json", "yaml")
    assert format_for_path("/home/u/.codex/config.toml") == "toml"
    assert format_for_path("~/.claude/settings.json") == "json"
    assert format_for_path("C:\\Users\\u\\settings.JSON") == "json"
    assert format_for_path("compose.yaml") == "yaml"
    assert format_for_path("ci/.aider.conf.yml") == "yaml"
    assert format_for_path("README.md") is None
    assert format_for_path(".toml") is None
    assert format_for_path("Makefile") is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_empty_text_is_an_empty_document(fmt: str) -> None:
    document = load(fmt, "", origin="new-file")
    assert document.to_text() == ""
    assert document.keys_flat() == {}
    assert document.get(()) == {}
    assert document.get(("a",)) is MISSING
    document.delete(("a", "b"))
    assert document.to_text() == ""


def test_load_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown config format 'ini'"):
        load("ini", "", origin="x.ini")


def test_config_error_message() -> None:
    error = ConfigError("bad thing", origin="/etc/x.toml", line=3, column=7)
    assert str(error) == "/etc/x.toml:3:7: bad thing"
    assert (error.origin, error.line, error.column, error.reason) == (
        "/etc/x.toml",
        3,
        7,
        "bad thing",
    )
    assert str(ConfigError("bad", origin="x")) == "x: bad"
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_path_cannot_be_set_or_deleted(fmt: str) -> None:
    document = load(fmt, "", origin="x")
    with pytest.raises(KeyPathError, match="empty key path"):
        document.set((), {"a": 1})
    with pytest.raises(KeyPathError, match="empty key path"):
        document.delete(())


@pytest.mark.parametrize("fmt", FORMATS)
def test_setting_through_a_scalar_is_refused(fmt: str) -> None:
    document = load(fmt, "", origin="x")
    document.set(("a",), 1)
    before = document.to_text()
    with pytest.raises(KeyPathError, match="a holds an integer, not a table"):
        document.set(("a", "b"), 2)
    assert document.to_text() == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_unsupported_values_are_refused_before_editing(fmt: str) -> None:
    document = load(fmt, "", origin="x")
    with pytest.raises(UnsupportedValueError):
        document.set(("a",), {"b": object()})
    assert document.to_text() == ""
