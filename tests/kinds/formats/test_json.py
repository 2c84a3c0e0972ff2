"""JSON editing is surgical: only the spans of edited members change, byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest
from format_cases import all_paths, docs, keys, leaves, property_settings, property_tests
from hypothesis import given
from hypothesis import strategies as st

from trueup.kinds.formats import (
    MISSING,
    ConfigDocument,
    ConfigError,
    KeyPathError,
    UnsupportedValueError,
    load,
    same_value,
)

CLAUDE_SETTINGS = """\
{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "model": "claude-sonnet-4-5",
  "permissions": {
    "allow": [
      "Bash(npm run lint)",
      "Bash(npm run test:*)",
      "Read(~/.zshrc)"
    ],
    "deny": [
      "Read(./.env)",
      "Read(./secrets/**)"
    ],
    "defaultMode": "acceptEdits"
  },
  "env": {
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
    "GREETING": "h\\u00e9llo \\"world\\"\\t✓"
  },
  "hooks": {},
  "includeCoAuthoredBy": false,
  "cleanupPeriodDays": 30
}
"""

# VS Code writes no trailing newline by default; that must survive too.
VSCODE_SPACES = """\
{
    "editor.fontSize": 14,
    "editor.rulers": [80, 100],
    "files.exclude": {
        "**/.git": true,
        "**/__pycache__": true
    },
    "[python]": {
        "editor.defaultFormatter": "charliermarsh.ruff",
        "editor.formatOnSave": true
    },
    "terminal.integrated.env.linux": {},
    "workbench.colorTheme": "Default Dark Modern"
}"""

VSCODE_TABS = """\
{
\t"editor.tabSize": 4,
\t"python.analysis.typeCheckingMode": "basic",
\t"search.exclude": {
\t\t"**/node_modules": true
\t}
}
"""


def doc(text: str) -> ConfigDocument:
    return load("json", text, origin="settings.json")


# --- round trips -----------------------------------------------------------------


@pytest.mark.parametrize("text", [CLAUDE_SETTINGS, VSCODE_SPACES, VSCODE_TABS])
def test_round_trip_without_edits_is_identical(text: str) -> None:
    document = doc(text)
    assert document.to_text() == text
    assert document.get(()) == json.loads(text)


def test_get_returns_plain_values_and_missing() -> None:
    document = doc(CLAUDE_SETTINGS)
    assert document.get(("env", "GREETING")) == 'héllo "world"\t✓'
    assert document.get(("permissions", "deny")) == ["Read(./.env)", "Read(./secrets/**)"]
    assert document.get(("hooks",)) == {}
    assert document.get(("cleanupPeriodDays",)) == 30
    assert document.get(("includeCoAuthoredBy",)) is False
    assert document.get(("nope",)) is MISSING
    assert document.get(("model", "deeper")) is MISSING
    assert document.get(("permissions", "allow", "0")) is MISSING


def test_keys_flat() -> None:
    assert doc(VSCODE_TABS).keys_flat() == {
        '"editor.tabSize"': 4,
        '"python.analysis.typeCheckingMode"': "basic",
        '"search.exclude".**/node_modules': True,
    }


# --- realistic edits, byte for byte ----------------------------------------------


def test_claude_settings_edits() -> None:
    document = doc(CLAUDE_SETTINGS)
    document.set(("permissions", "defaultMode"), "plan")
    document.set(("permissions", "allow"), ["Bash(make test)"])
    document.set(("env", "DISABLE_AUTOUPDATER"), "1")
    document.set(("hooks", "Stop"), [{"hooks": [{"type": "command", "command": "say done"}]}])
    document.delete(("includeCoAuthoredBy",))
    document.delete(("cleanupPeriodDays",))
    assert (
        document.to_text()
        == """\
{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "model": "claude-sonnet-4-5",
  "permissions": {
    "allow": [
      "Bash(make test)"
    ],
    "deny": [
      "Read(./.env)",
      "Read(./secrets/**)"
    ],
    "defaultMode": "plan"
  },
  "env": {
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
    "GREETING": "h\\u00e9llo \\"world\\"\\t✓",
    "DISABLE_AUTOUPDATER": "1"
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "say done"
          }
        ]
      }
    ]
  }
}
"""
    )


def test_vscode_four_space_edits_keep_layout_and_missing_newline() -> None:
    document = doc(VSCODE_SPACES)
    document.set(("editor.fontSize",), 16)
    document.set(("editor.rulers",), [80, 120])
    document.set(("[python]", "editor.tabSize"), 4)
    document.set(("terminal.integrated.env.linux",), {"PYTHONPATH": "src"})
    document.set(("editor.wordWrap",), "on")
    document.delete(("files.exclude", "**/.git"))
    assert document.to_text() == (
        "{\n"
        '    "editor.fontSize": 16,\n'
        '    "editor.rulers": [80, 120],\n'
        '    "files.exclude": {\n'
        '        "**/__pycache__": true\n'
        "    },\n"
        '    "[python]": {\n'
        '        "editor.defaultFormatter": "charliermarsh.ruff",\n'
        '        "editor.formatOnSave": true,\n'
        '        "editor.tabSize": 4\n'
        "    },\n"
        '    "terminal.integrated.env.linux": {\n'
        '        "PYTHONPATH": "src"\n'
        "    },\n"
        '    "workbench.colorTheme": "Default Dark Modern",\n'
        '    "editor.wordWrap": "on"\n'
        "}"
    )


def test_vscode_tab_edits_use_tabs() -> None:
    document = doc(VSCODE_TABS)
    document.set(("search.exclude", "**/dist"), True)
    document.set(("files.watcherExclude",), {"**/target": True, "**/.venv": True})
    document.delete(("editor.tabSize",))
    assert document.to_text() == (
        "{\n"
        '\t"python.analysis.typeCheckingMode": "basic",\n'
        '\t"search.exclude": {\n'
        '\t\t"**/node_modules": true,\n'
        '\t\t"**/dist": true\n'
        "\t},\n"
        '\t"files.watcherExclude": {\n'
        '\t\t"**/target": true,\n'
        '\t\t"**/.venv": true\n'
        "\t}\n"
        "}\n"
    )


def test_creates_intermediate_objects() -> None:
    document = doc(CLAUDE_SETTINGS)
    document.set(("statusLine", "command", "args"), ["--short"])
    assert document.to_text().endswith(
        '  "cleanupPeriodDays": 30,\n'
        '  "statusLine": {\n'
        '    "command": {\n'
        '      "args": [\n'
        '        "--short"\n'
        "      ]\n"
        "    }\n"
        "  }\n"
        "}\n"
    )
    assert document.get(("statusLine", "command", "args")) == ["--short"]


def test_edit_changes_only_the_edited_line() -> None:
    document = doc(CLAUDE_SETTINGS)
    document.set(("model",), "claude-opus-4-1")
    before, after = CLAUDE_SETTINGS.splitlines(), document.to_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [('  "model": "claude-sonnet-4-5",', '  "model": "claude-opus-4-1",')]


# --- same value is a no-op -------------------------------------------------------


@pytest.mark.parametrize("text", [CLAUDE_SETTINGS, VSCODE_SPACES, VSCODE_TABS])
def test_setting_present_values_changes_nothing(text: str) -> None:
    document = doc(text)
    for key, value in json.loads(text).items():
        document.set((key,), value)
    assert document.to_text() == text


def test_same_value_means_same_type() -> None:
    document = doc('{"a": 1, "b": true}')
    document.set(("a",), 1)
    document.set(("b",), True)
    assert document.to_text() == '{"a": 1, "b": true}'
    document.set(("a",), 1.0)
    document.set(("b",), 1)
    assert document.to_text() == '{"a": 1.0, "b": 1}'


def test_setting_a_mapping_merges_into_the_object() -> None:
    document = doc(CLAUDE_SETTINGS)
    document.set(
        ("env",),
        {"GREETING": 'héllo "world"\t✓', "CLAUDE_CODE_ENABLE_TELEMETRY": "1"},
    )
    # The untouched member keeps its original escapes; the other changes in place.
    assert '"CLAUDE_CODE_ENABLE_TELEMETRY": "1",\n' in document.to_text()
    assert '"GREETING": "h\\u00e9llo \\"world\\"\\t✓"\n' in document.to_text()
    document.set(("env",), {})
    assert '  "env": {},\n' in document.to_text()


# --- structure: compact, empty, delete ------------------------------------------


def test_compact_single_line_document_stays_compact() -> None:
    document = doc('{"a":1,"b":{"c":2}}')
    document.set(("b", "d"), [1, 2])
    document.set(("e",), {"f": 1})
    document.delete(("a",))
    assert document.to_text() == '{"b":{"c":2,"d":[1,2]},"e":{"f":1}}'


def test_spaced_single_line_object() -> None:
    document = doc('{ "a": 1, "b": 2 }\n')
    document.set(("c",), {"d": [1, 2]})
    assert document.to_text() == '{ "a": 1, "b": 2, "c": {"d": [1, 2]} }\n'
    document.delete(("b",))
    assert document.to_text() == '{ "a": 1, "c": {"d": [1, 2]} }\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", '{\n  "a": {\n    "b": 1\n  }\n}'),
        ("{}\n", '{\n  "a": {\n    "b": 1\n  }\n}\n'),
        ("{\n}\n", '{\n  "a": {\n    "b": 1\n  }\n}\n'),
        ("", '{\n  "a": {\n    "b": 1\n  }\n}\n'),
        ("  \n", '{\n  "a": {\n    "b": 1\n  }\n}\n'),
    ],
)
def test_empty_documents(text: str, expected: str) -> None:
    document = doc(text)
    assert document.to_text() == text
    document.set(("a", "b"), 1)
    assert document.to_text() == expected


def test_nested_empty_object_grows_with_indentation() -> None:
    document = doc('{\n    "x": {\n        "y": {}\n    }\n}\n')
    document.set(("x", "y", "z"), "v")
    assert document.to_text() == (
        '{\n    "x": {\n        "y": {\n            "z": "v"\n        }\n    }\n}\n'
    )


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("a", '{\n  "b": 2,\n  "c": 3\n}\n'),
        ("b", '{\n  "a": 1,\n  "c": 3\n}\n'),
        ("c", '{\n  "a": 1,\n  "b": 2\n}\n'),
    ],
)
def test_delete_first_middle_last(key: str, expected: str) -> None:
    document = doc('{\n  "a": 1,\n  "b": 2,\n  "c": 3\n}\n')
    document.delete((key,))
    assert document.to_text() == expected


def test_delete_only_member_keeps_empty_parent() -> None:
    document = doc('{\n  "outer": {\n    "only": [1, 2]\n  },\n  "z": 0\n}\n')
    document.delete(("outer", "only"))
    assert document.to_text() == '{\n  "outer": {},\n  "z": 0\n}\n'
    assert document.get(("outer",)) == {}
    document.delete(("outer",))
    document.delete(("z",))
    assert document.to_text() == "{}\n"


def test_delete_absent_is_a_no_op() -> None:
    document = doc(CLAUDE_SETTINGS)
    document.delete(("nope",))
    document.delete(("permissions", "nope"))
    document.delete(("model", "inside", "a", "string"))
    assert document.to_text() == CLAUDE_SETTINGS


def test_duplicate_keys_follow_json_last_wins() -> None:
    document = doc('{"a": 1, "b": 0, "a": 2}')
    assert document.get(("a",)) == 2
    document.set(("a",), 3)
    assert document.to_text() == '{"a": 1, "b": 0, "a": 3}'
    document.delete(("a",))
    assert document.to_text() == '{"b": 0}'


# --- strings, unicode, line endings ----------------------------------------------


def test_escaped_keys_are_matched_by_their_value_and_keep_their_spelling() -> None:
    document = doc('{\n  "caf\\u00e9": 1,\n  "tab\\there": "\\ud83d\\ude00"\n}\n')
    assert document.get(("café",)) == 1
    assert document.get(("tab\there",)) == "😀"
    document.set(("café",), 2)
    document.set(("new\nline",), 'quote " and \\ backslash ☕')
    assert document.to_text() == (
        '{\n  "caf\\u00e9": 2,\n  "tab\\there": "\\ud83d\\ude00",\n'
        '  "new\\nline": "quote \\" and \\\\ backslash ☕"\n}\n'
    )


def test_strings_containing_structure_do_not_confuse_the_tokenizer() -> None:
    text = '{"a": "}{,:[]\\"", "b": {"c": "\\\\"}, "d": [{"e": "]"}]}'
    document = doc(text)
    document.set(("b", "x"), 1)
    document.delete(("a",))
    assert document.to_text() == '{"b": {"c": "\\\\", "x": 1}, "d": [{"e": "]"}]}'


def test_crlf_line_endings_are_kept() -> None:
    document = doc('{\r\n  "a": 1\r\n}\r\n')
    document.set(("b",), {"c": 2})
    assert document.to_text() == '{\r\n  "a": 1,\r\n  "b": {\r\n    "c": 2\r\n  }\r\n}\r\n'


def test_byte_order_mark_is_kept() -> None:
    document = doc('\ufeff{"a": 1}\n')
    document.set(("b",), 2)
    assert document.to_text() == '\ufeff{"a": 1, "b": 2}\n'


def test_numbers_and_literals() -> None:
    document = doc('{"n": -1.5e+3, "z": 0, "t": true, "f": false, "x": null}')
    assert document.get(()) == {"n": -1500.0, "z": 0, "t": True, "f": False, "x": None}
    document.set(("x",), None)
    document.set(("z",), -0.25)
    assert document.to_text() == '{"n": -1.5e+3, "z": -0.25, "t": true, "f": false, "x": null}'


# --- errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "a": 1\n  "b": 2\n}', "settings.json:3:3: invalid JSON"),
        ('{\n  "a": NaN\n}', "settings.json:2:8: "),
        (
            '{\n  // comment\n  "a": 1\n  "b": 2\n}',
            "settings.json:4:3: invalid JSON (with comments)",
        ),
        ("[1, 2]", "settings.json:1:1: the top level of a JSON config file must be an object"),
        ('"text"', "settings.json:1:1: the top level"),
        ('{"a": 1} x', "settings.json:1:10: invalid JSON: Extra data"),
    ],
)
def test_parse_errors_name_origin_line_and_column(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as info:
        doc(text)
    assert str(info.value).startswith(where)
    assert info.value.origin == "settings.json"


def test_unrepresentable_values_are_refused() -> None:
    document = doc("{}")
    with pytest.raises(UnsupportedValueError):
        document.set(("a",), float("nan"))
    with pytest.raises(UnsupportedValueError):
        document.set(("a",), float("inf"))
    assert document.to_text() == "{}"


def test_setting_below_a_scalar_is_refused() -> None:
    document = doc(CLAUDE_SETTINGS)
    with pytest.raises(KeyPathError, match="model holds a string"):
        document.set(("model", "name"), "x")
    with pytest.raises(KeyPathError, match=r"permissions\.allow holds a list"):
        document.set(("permissions", "allow", "x"), "x")


# --- properties ------------------------------------------------------------------


@property_settings
@given(data=docs, draw=st.data())
def test_property_edits_in_a_row_are_those_made_one_file_at_a_time(
    data: dict[str, Any], draw: st.DataObject
) -> None:
    """An edit moves the offsets it knows instead of scanning the file again: several
    edits in a row (the text never asked for between them) leave what loading the
    text afresh before each would."""
    expected = dump(data)
    document = load("json", expected, origin="prop")
    for _ in range(draw.draw(st.integers(1, 6))):
        existing = all_paths(json.loads(expected))
        fresh_path = st.lists(keys, min_size=1, max_size=3).map(tuple)
        path = draw.draw(st.sampled_from(existing) | fresh_path if existing else fresh_path)
        value = draw.draw(leaves | st.dictionaries(keys, leaves, max_size=2))
        fresh = load("json", expected, origin="prop")
        if draw.draw(st.booleans()):
            document.delete(path)
            fresh.delete(path)
        else:
            try:
                fresh.set(path, value)
            except KeyPathError:
                continue
            document.set(path, value)
        expected = fresh.to_text()
        for other in all_paths(json.loads(expected)):
            assert same_value(document.get(other), fresh.get(other))
    assert document.to_text() == expected


FORMAT = "json"


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


(
    test_property_load_dump_round_trip,
    test_property_set_then_get_and_nothing_else_changes,
    test_property_delete_removes_only_that_key,
) = property_tests(FORMAT, dump)
