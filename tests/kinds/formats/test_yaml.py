"""YAML editing keeps comments, quoting, indentation and blank lines of untouched keys."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from format_cases import leaf_paths, property_tests
from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from trueup.kinds.formats import (
    MISSING,
    ConfigDocument,
    ConfigError,
    KeyPath,
    KeyPathError,
    load,
)
from trueup.kinds.formats import yaml as yaml_format


@pytest.fixture(autouse=True, params=["whole", "sections"])
def yaml_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: the whole round trip, and a top-level section at a time (as
    large files are read and edited: see ``_SectionedYamlDocument``)."""
    monkeypatch.setattr(yaml_format, "SECTIONS_FROM", 0 if request.param == "sections" else 2**62)
    yaml_format.clear_cache()
    return str(request.param)


AIDER_CONFIG = """\
# .aider.conf.yml: personal defaults
# See https://aider.chat/docs/config/aider_conf.html

model: sonnet            # main chat model
weak-model: "gpt-4o-mini"
editor-model: 'gpt-4o'

## Git
auto-commits: false
attribute-author: no     # YAML 1.1 boolean, left as written

lint-cmd:
  - "python: ruff check --fix"
  - "javascript: eslint"

read:
  - CONVENTIONS.md   # always in context
  - docs/style.md

settings:
  timeouts:
    connect: 10
    read: 60   # seconds
  # proxy settings follow
  proxy: null

notes: |
  first line
  second line
"""

COMPOSE = """\
# docker compose for local development
name: shop

services:
    web:
        image: "nginx:1.27"   # pinned on purpose
        ports:
            - "8080:80"
        environment:
            LOG_LEVEL: info

    db:
        image: postgres:16
        volumes:
            - db-data:/var/lib/postgresql/data

volumes:
    db-data: {}
"""


def doc(text: str = AIDER_CONFIG) -> ConfigDocument:
    return load("yaml", text, origin="conf.yml")


def edited(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# --- round trips and reading -----------------------------------------------------


@pytest.mark.parametrize("text", [AIDER_CONFIG, COMPOSE])
def test_round_trip_without_edits_is_identical(text: str) -> None:
    assert doc(text).to_text() == text


def test_get_returns_plain_values() -> None:
    document = doc()
    assert document.get(("weak-model",)) == "gpt-4o-mini"
    assert type(document.get(("weak-model",))) is str
    assert document.get(("auto-commits",)) is False
    assert document.get(("attribute-author",)) == "no"  # YAML 1.2: a string
    timeouts = document.get(("settings", "timeouts"))
    assert timeouts == {"connect": 10, "read": 60} and type(timeouts) is dict
    assert type(document.get(("settings", "timeouts", "read"))) is int
    assert document.get(("settings", "proxy")) is None
    assert document.get(("read",)) == ["CONVENTIONS.md", "docs/style.md"]
    assert document.get(("notes",)) == "first line\nsecond line\n"
    assert document.get(("settings", "nope")) is MISSING


def test_keys_flat() -> None:
    assert doc(COMPOSE).keys_flat() == {
        "name": "shop",
        "services.web.image": "nginx:1.27",
        "services.web.ports": ["8080:80"],
        "services.web.environment.LOG_LEVEL": "info",
        "services.db.image": "postgres:16",
        "services.db.volumes": ["db-data:/var/lib/postgresql/data"],
        "volumes.db-data": {},
    }


def test_non_string_keys_are_addressed_by_their_text() -> None:
    document = doc("1: one\nnull: nothing\n")
    assert document.get(()) == {"1": "one", "null": "nothing"}
    document.set(("1",), "uno")
    assert document.to_text() == "1: uno\nnull: nothing\n"


# --- realistic edits, byte for byte ----------------------------------------------


def test_edits_keep_trailing_comments_and_quoting_style() -> None:
    document = doc()
    document.set(("model",), "opus")
    document.set(("weak-model",), "haiku")
    document.set(("editor-model",), "o3")
    document.set(("settings", "timeouts", "read"), 90)
    expected = edited(
        AIDER_CONFIG,
        "model: sonnet            # main chat model",
        "model: opus              # main chat model",
    )
    expected = edited(expected, 'weak-model: "gpt-4o-mini"', 'weak-model: "haiku"')
    expected = edited(expected, "editor-model: 'gpt-4o'", "editor-model: 'o3'")
    expected = edited(expected, "read: 60   # seconds", "read: 90   # seconds")
    assert document.to_text() == expected


def test_new_keys_go_after_the_last_key_not_after_the_next_keys_comment() -> None:
    document = doc()
    document.set(("settings", "timeouts", "write"), 30)
    document.set(("dark-mode",), True)
    document.set(("cache", "prompts"), "yes")
    document.delete(("auto-commits",))
    expected = edited(AIDER_CONFIG, "auto-commits: false\n", "")
    expected = edited(
        expected, "    read: 60   # seconds\n", "    read: 60   # seconds\n    write: 30\n"
    )
    expected += "dark-mode: true\ncache:\n  prompts: 'yes'\n"
    assert document.to_text() == expected


def test_deleting_blocks_keeps_neighbouring_comments_and_spacing() -> None:
    document = doc()
    document.delete(("lint-cmd",))
    document.delete(("settings", "timeouts"))
    document.set(("read",), ["CONVENTIONS.md"])
    expected = edited(
        AIDER_CONFIG, 'lint-cmd:\n  - "python: ruff check --fix"\n  - "javascript: eslint"\n\n', ""
    )
    expected = edited(expected, "  timeouts:\n    connect: 10\n    read: 60   # seconds\n", "")
    expected = edited(
        expected,
        "read:\n  - CONVENTIONS.md   # always in context\n  - docs/style.md\n",
        "read:\n  - CONVENTIONS.md\n",
    )
    assert document.to_text() == expected


def test_untouched_lines_ruamel_would_respell_are_restored() -> None:
    # ruamel writes `proxy: null` as `proxy:`; an unrelated edit must not do that.
    document = doc()
    document.set(("notes",), "one\ntwo\n")
    assert document.to_text() == edited(
        AIDER_CONFIG, "notes: |\n  first line\n  second line\n", "notes: |\n  one\n  two\n"
    )
    assert "  proxy: null\n" in document.to_text()


def test_four_space_indentation_and_indented_dashes_are_detected() -> None:
    document = doc(COMPOSE)
    document.set(("services", "web", "environment", "DEBUG"), "1")
    document.set(("services", "db", "ports"), ["5432:5432"])
    document.set(("services", "web", "image"), "nginx:1.28")
    document.set(("volumes", "cache"), {"driver": "local"})
    expected = edited(
        COMPOSE,
        'image: "nginx:1.27"   # pinned on purpose',
        'image: "nginx:1.28"   # pinned on purpose',
    )
    expected = edited(expected, "LOG_LEVEL: info\n", "LOG_LEVEL: info\n            DEBUG: '1'\n")
    expected = edited(
        expected,
        "            - db-data:/var/lib/postgresql/data\n",
        "            - db-data:/var/lib/postgresql/data\n        ports:\n            - 5432:5432\n",
    )
    expected += "    cache:\n        driver: local\n"
    assert document.to_text() == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "jobs:\n  b:\n    steps:\n    - run: x\n",
            "jobs:\n  b:\n    steps:\n    - run: x\n  t:\n    steps:\n    - run: z\n",
        ),
        (
            "jobs:\n  b:\n    steps:\n      - run: x\n",
            "jobs:\n  b:\n    steps:\n      - run: x\n  t:\n    steps:\n      - run: z\n",
        ),
    ],
)
def test_sequence_dash_style_is_detected(text: str, expected: str) -> None:
    document = doc(text)
    document.set(("jobs", "t"), {"steps": [{"run": "z"}]})
    assert document.to_text() == expected


# --- comments around deletes and inserts -----------------------------------------


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        ("a: 1\n# about b\n\nb: 2\n", ("a",), "# about b\n\nb: 2\n"),
        ("a: 1\n\nb: 2\n\nc: 3\n", ("b",), "a: 1\n\nc: 3\n"),
        ("a: 1\nb: 2  # eol\n# about c\nc: 3\n", ("b",), "a: 1\n# about c\nc: 3\n"),
        ("s:\n  a: 1\n  # about b\n  b: 2\nt: 1\n", ("s", "a"), "s:\n  # about b\n  b: 2\nt: 1\n"),
        ("s:\n  a: 1  # eol\n  # about t\nt: 1\n", ("s", "a"), "s: {}\n  # about t\nt: 1\n"),
        ("x: 1\nd: |\n  l1\n  l2\n# about y\ny: 2\n", ("d",), "x: 1\n# about y\ny: 2\n"),
        ("x: 1\nd: >\n  long\n  text\n\n# about y\ny: 2\n", ("d",), "x: 1\n\n# about y\ny: 2\n"),
    ],
)
def test_delete_keeps_comments_that_introduce_the_next_key(
    text: str, path: KeyPath, expected: str
) -> None:
    document = doc(text)
    document.delete(path)
    assert document.to_text() == expected


def test_replacing_a_scalar_by_a_mapping_keeps_the_following_comment_in_place() -> None:
    document = doc("a:\n  x: 1\n  # about b\nb: 2\n")
    document.set(("a", "x"), {"deep": True})
    assert document.to_text() == "a:\n  x:\n    deep: true\n  # about b\nb: 2\n"
    document.set(("a", "x"), "flat")
    assert document.to_text() == "a:\n  x: flat\n  # about b\nb: 2\n"


def test_empty_flow_mapping_grows_into_a_block() -> None:
    document = doc("a: 1\nhooks: {}  # none yet\nb: 2\n")
    document.set(("hooks", "Stop"), "x")
    assert document.to_text() == "a: 1\nhooks:     # none yet\n  Stop: x\nb: 2\n"


def test_flow_sequences_stay_flow() -> None:
    document = doc("tags: [a, b]  # t\nother: 1\n")
    document.set(("tags",), ["c"])
    # ruamel keeps a trailing comment in its column when the value gets shorter.
    assert document.to_text() == "tags: [c]     # t\nother: 1\n"


# --- scalars that need quoting -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "spelled"),
    [
        ("yes", "'yes'"),
        ("Off", "'Off'"),
        ("22:22", "'22:22'"),
        ("1", "'1'"),
        ("true", "'true'"),
        ("", "''"),
        ("plain text", "plain text"),
        ("a: b", "'a: b'"),
        ("line1\nline2", '"line1\\nline2"'),
        ("nel\x85here", '"nel\\Nhere"'),
    ],
)
def test_strings_are_quoted_when_readers_would_misread_them(value: str, spelled: str) -> None:
    document = doc("k: 0\n")
    document.set(("k",), value)
    assert document.to_text() == f"k: {spelled}\n"
    assert load("yaml", document.to_text(), origin="x").get(("k",)) == value


@pytest.mark.parametrize("value", ["abc", "a\nb\n", "\x1f", "a\r\nb", "  lead\nx", ""])
@pytest.mark.parametrize("style", ["|", ">"])
def test_block_scalars_keep_their_style_when_they_can(style: str, value: str) -> None:
    document = doc(f"notes: {style}\n  first\n  more\nx: 1\n")
    document.set(("notes",), value)
    text = document.to_text()
    assert text.startswith("notes: " + (style if _SAFE_IN_BLOCK.fullmatch(value) else '"'))
    assert text.endswith("x: 1\n")
    assert load("yaml", text, origin="x").get(("notes",)) == value


_SAFE_IN_BLOCK = re.compile("[ -~\n]*")


def test_single_quoted_value_switches_to_double_quotes_for_newlines() -> None:
    document = doc("k: 'x'\n")
    document.set(("k",), "a\nb")
    assert document.to_text() == 'k: "a\\nb"\n'


# --- no-ops, documents, line endings ---------------------------------------------


@pytest.mark.parametrize("text", [AIDER_CONFIG, COMPOSE])
def test_setting_present_values_changes_nothing(text: str) -> None:
    document = doc(text)
    for path, value in leaf_paths(document.get(())).items():
        document.set(path, value)
    whole = load("yaml", text, origin="copy").get(())
    assert isinstance(whole, dict)
    for key, value in whole.items():
        document.set((key,), value)
    assert document.to_text() == text


def test_same_value_means_same_type() -> None:
    document = doc("a: 1\nb: '1'\n")
    document.set(("a",), 1)
    document.set(("b",), "1")
    assert document.to_text() == "a: 1\nb: '1'\n"
    document.set(("a",), True)
    assert document.to_text() == "a: true\nb: '1'\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "a:\n  b: 1\n"),
        ("{}\n", "a:\n  b: 1\n"),
        ("# only a comment\n", "# only a comment\na:\n  b: 1\n"),
        ("---\n# header\n", "---\n# header\na:\n  b: 1\n"),
        ("x: 1", "x: 1\na:\n  b: 1\n"),
    ],
)
def test_empty_and_unusual_documents(text: str, expected: str) -> None:
    document = doc(text)
    assert document.to_text() == text
    document.set(("a", "b"), 1)
    assert document.to_text() == expected


def test_document_markers_and_spacing_survive_edits() -> None:
    document = doc("---\nkey:   value\nother: 1\n...\n")
    document.set(("other",), 2)
    assert document.to_text() == "---\nkey:   value\nother: 2\n...\n"


def test_crlf_comments_keep_one_line_ending() -> None:
    document = doc("a: 1 # mine\r\nb: 2\r\n")
    document.set(("a",), 2)
    assert document.to_text() == "a: 2 # mine\r\nb: 2\r\n"


def test_crlf_line_endings_are_kept() -> None:
    document = doc("a: 1\r\nb:\r\n  c: 2\r\n")
    document.set(("b", "d"), 3)
    assert document.to_text() == "a: 1\r\nb:\r\n  c: 2\r\n  d: 3\r\n"


def test_tags_are_read_as_their_text_and_kept() -> None:
    document = doc("a: !!str 1\nb: !custom x\n")
    assert document.get(()) == {"a": "1", "b": "x"}
    document.set(("c",), 2)
    assert document.to_text() == "a: !!str 1\nb: !custom x\nc: 2\n"


def test_merge_keys_are_read_and_can_be_overridden_but_not_deleted() -> None:
    document = doc("base: &b\n  x: 1\nderived:\n  <<: *b\n  y: 2\n")
    assert document.get(("derived",)) == {"y": 2, "x": 1}
    document.set(("derived", "x"), 5)
    assert document.to_text() == "base: &b\n  x: 1\nderived:\n  <<: *b\n  y: 2\n  x: 5\n"
    document = doc("base: &b\n  x: 1\nderived:\n  <<: *b\n  y: 2\n")
    with pytest.raises(KeyPathError, match="merge key"):
        document.delete(("derived", "x"))


# --- errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: 1\n b: 2\n", "conf.yml:2:3: invalid YAML: mapping values are not allowed here"),
        (
            "a: 1\na: 2\n",
            'conf.yml:2:1: invalid YAML: while constructing a mapping found duplicate key "a"',
        ),
        ("a: [1\n", "conf.yml:2:1: invalid YAML"),
        ("a: 1\n---\nb: 2\n", "conf.yml:2:1: invalid YAML: expected a single document"),
        ("- 1\n- 2\n", "conf.yml: the top level of a YAML config file must be a mapping"),
        ("just text\n", "conf.yml: the top level"),
    ],
)
def test_parse_errors_name_origin_line_and_column(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as info:
        doc(text)
    assert str(info.value).startswith(where)


def test_setting_below_a_scalar_is_refused() -> None:
    with pytest.raises(KeyPathError, match="model holds a string"):
        doc().set(("model", "name"), "x")


# --- properties ------------------------------------------------------------------

FORMAT = "yaml"
_RUAMEL_RAW_BREAKS = re.compile("[\x85\u2028\u2029]")


def _quoted(value: Any) -> Any:
    """ruamel writes NEL/LS/PS raw unless double-quoted (and then misreads them)."""
    if isinstance(value, dict):
        return {key: _quoted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_quoted(item) for item in value]
    if isinstance(value, str) and _RUAMEL_RAW_BREAKS.search(value):
        return DoubleQuotedScalarString(value)
    return value


def dump(data: dict[str, Any]) -> str:
    stream = io.StringIO()
    YAML().dump(_quoted(data), stream)
    return stream.getvalue() if data else ""


(
    test_property_load_dump_round_trip,
    test_property_set_then_get_and_nothing_else_changes,
    test_property_delete_removes_only_that_key,
) = property_tests(FORMAT, dump)


def test_new_keys_that_yaml_1_1_reads_as_booleans_are_quoted() -> None:
    document = doc("a: 1\n")
    document.set(("yes",), 1)
    document.set(("on", "off"), 2)
    text = document.to_text()
    assert text == "a: 1\n'yes': 1\n'on':\n  'off': 2\n"
    assert YAML(typ="safe", pure=True).load(io.StringIO(text)) == {
        "a": 1,
        "yes": 1,
        "on": {"off": 2},
    }


@pytest.mark.parametrize(
    ("value", "spelt"), [(1e16, "1.0e+16"), (1e-07, "1.0e-07"), (2.5e-05, "2.5e-05")]
)
def test_exponent_floats_get_a_point_so_yaml_1_1_reads_numbers(value: float, spelt: str) -> None:
    document = doc("a: 1\n")
    document.set(("x",), value)
    text = document.to_text()
    assert text == f"a: 1\nx: {spelt}\n"
    assert load("yaml", text, origin="x").get(("x",)) == value
    yaml11 = YAML(typ="safe", pure=True)
    yaml11.version = (1, 1)
    assert yaml11.load(io.StringIO(text))["x"] == value


# --- files indented unevenly -----------------------------------------------------

MIXED = "---\nx:\n    y: 1\nblk:\n  z: 1   # c\n  w: 2\n"


def test_a_key_added_to_a_block_is_indented_like_its_siblings_not_like_the_first_block() -> None:
    document = doc(MIXED)
    document.set(("blk", "new"), 1)
    assert document.to_text() == MIXED + "  new: 1\n"


def test_a_value_changed_in_an_unevenly_indented_file_touches_only_its_line() -> None:
    document = doc(MIXED)
    document.set(("blk", "z"), 5)
    lines = document.to_text().splitlines()
    assert lines[:4] == MIXED.splitlines()[:4], "the --- marker and the other block stay"
    assert lines[4].startswith("  z: 5") and lines[5] == "  w: 2"


def test_a_new_nested_table_keeps_to_its_parents_indentation() -> None:
    document = doc(MIXED)
    document.set(("blk", "deep", "er"), 1)
    text = document.to_text()
    assert text.startswith(MIXED) and text[len(MIXED) :].startswith("  deep:\n")
    assert load("yaml", text, origin="conf.yml").get(("blk", "deep", "er")) == 1


def test_a_byte_order_mark_survives_an_edit_of_the_first_line() -> None:
    document = doc("\ufeffa: 0     # note\nb: 1\n")
    document.set(("a",), 1)
    assert document.to_text().startswith("\ufeffa: 1")
    assert document.to_text().endswith("\nb: 1\n")


@pytest.mark.parametrize("before", ["", "# only a comment\n"])
def test_removing_the_last_key_gives_back_the_file_as_it_was(before: str) -> None:
    added = doc(before)
    added.set(("k",), 1)
    removed = doc(added.to_text())
    removed.delete(("k",))
    assert removed.to_text() == before


# --- values ruamel spells on another number of lines ----------------------------
#
# ruamel joins a flow list written over several lines, joins a plain scalar folded
# over lines and turns `!!binary x` into a block scalar. An edit elsewhere must
# leave them exactly as the file has them.

RESPELLED = {
    "multi-line flow list": 'args: [\n  "--a",\n  "--b",\n]\n',
    "multi-line plain scalar": "desc: a plain\n  multi-line scalar\n",
    "binary scalar": "bin: !!binary aGVsbG8=\n",
}


def _nested(text: str, prefix: KeyPath) -> str:
    """``text`` as the value of ``outer`` (indented two spaces) when ``prefix`` says so."""
    if not prefix:
        return text
    indented = "".join("  " + line for line in text.splitlines(keepends=True))
    return f"outer:\n{indented}tail: 0\n"


@pytest.mark.parametrize("prefix", [(), ("outer",)], ids=["top-level", "nested"])
@pytest.mark.parametrize("shape", list(RESPELLED.values()), ids=list(RESPELLED))
def test_respelled_values_next_to_edited_keys_are_kept_byte_for_byte(
    shape: str, prefix: KeyPath
) -> None:
    document = doc(_nested(f"before: 1\ngone: x\n{shape}after: 2\n", prefix))
    document.delete((*prefix, "gone"))
    document.set((*prefix, "after"), 3)
    document.set((*prefix, "zz"), 1)
    assert document.to_text() == _nested(f"before: 1\n{shape}after: 3\nzz: 1\n", prefix)


@pytest.mark.parametrize("prefix", [(), ("outer",)], ids=["top-level", "nested"])
@pytest.mark.parametrize("shape", list(RESPELLED.values()), ids=list(RESPELLED))
def test_a_key_added_after_a_respelled_value_leaves_it_as_it_was(
    shape: str, prefix: KeyPath
) -> None:
    document = doc(_nested(f"before: 1\n{shape}", prefix))
    document.set((*prefix, "zz"), 1)
    assert document.to_text() == _nested(f"before: 1\n{shape}zz: 1\n", prefix)


@pytest.mark.parametrize("edited_key", ["args", "desc", "bin"])
def test_editing_one_respelled_value_leaves_its_respelled_neighbours_alone(
    edited_key: str,
) -> None:
    shapes = "".join(RESPELLED.values())
    document = doc(shapes + "b: 2\n")
    document.set((edited_key,), "new")
    (old,) = [shape for shape in RESPELLED.values() if shape.startswith(edited_key + ":")]
    assert document.to_text() == edited(shapes, old, f"{edited_key}: new\n") + "b: 2\n"


def test_respelled_sequence_items_and_document_markers_are_kept() -> None:
    text = "---\nl:\n- a plain\n  multi\n- [1,\n   2]\n- x\nm: 1\n...\n"
    document = doc(text)
    document.set(("m",), 2)
    assert document.to_text() == edited(text, "m: 1\n", "m: 2\n")


def test_a_document_whose_aliases_expand_without_bound_is_refused_not_expanded() -> None:
    """Nine levels of ten aliases spell a billion values in a few hundred bytes."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    with pytest.raises(ConfigError, match="aliases expand to more than"):
        load("yaml", "\n".join(lines) + "\n", origin="bomb.yaml")


def test_aliases_that_expand_modestly_are_read_as_written() -> None:
    text = "base: &b {x: 1, y: [1, 2]}\none: *b\ntwo: *b\n"
    assert load("yaml", text, origin="ok.yaml").get(("two", "y")) == [1, 2]
