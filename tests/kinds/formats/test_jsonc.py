"""JSON with comments and trailing commas (JSONC) is edited, keeping both.

VS Code, Cursor and Zed settings, ``tsconfig.json`` and ``devcontainer.json`` are
JSONC: a person's comments there are notes and switched-off options, so an edit
that dropped them (or refused the file) would cost them real work.
"""

from __future__ import annotations

import json

import pytest
from realconfigs import corpus

from trueup.kinds.formats import ConfigError, format_for_path, load
from trueup.kinds.formats.json import without_comments

SETTINGS = """\
{
  // Editor
  "editor.fontSize": 14, // big enough
  /* Files the explorer hides. */
  "files.exclude": {
    "**/.git": true,
  },
  // "workbench.colorTheme": "Default Dark+",
}
"""


def doc(text: str) -> object:
    return load("json", text, origin="settings.json")


def test_jsonc_is_read() -> None:
    document = load("json", SETTINGS, origin="settings.json")
    assert document.get(()) == {"editor.fontSize": 14, "files.exclude": {"**/.git": True}}


def test_set_keeps_comments_and_the_trailing_comma_style() -> None:
    document = load("json", SETTINGS, origin="settings.json")
    document.set(("editor.fontSize",), 16)
    document.set(("files.exclude", "**/node_modules"), True)
    document.set(("zed.theme",), "One")
    assert (
        document.to_text()
        == """\
{
  // Editor
  "editor.fontSize": 16, // big enough
  /* Files the explorer hides. */
  "files.exclude": {
    "**/.git": true,
    "**/node_modules": true,
  },
  "zed.theme": "One",
  // "workbench.colorTheme": "Default Dark+",
}
"""
    )


def test_a_new_member_leaves_the_comment_ending_the_line_before_it() -> None:
    document = load("json", '{\n  "a": 1, // one\n  "b": 2 // two\n}\n', origin="s.json")
    document.set(("c",), 3)
    assert document.to_text() == '{\n  "a": 1, // one\n  "b": 2, // two\n  "c": 3\n}\n'


def test_delete_cuts_only_the_member_line() -> None:
    text = '{\n  "a": 1, // one\n  // about b\n  "b": 2 // two\n}\n'
    document = load("json", text, origin="s.json")
    document.delete(("a",))
    assert document.to_text() == '{\n  // about b\n  "b": 2 // two\n}\n'
    document = load("json", text, origin="s.json")
    document.delete(("b",))
    assert document.to_text() == '{\n  "a": 1 // one\n  // about b\n}\n'


def test_comments_in_an_emptied_object_stay_and_take_new_members_below() -> None:
    document = load("json", '{\n  // notes\n  "a": 1\n}\n', origin="s.json")
    document.delete(("a",))
    assert document.to_text() == "{\n  // notes\n}\n"
    document.set(("b",), True)
    assert document.to_text() == '{\n  // notes\n  "b": true\n}\n'


def test_comment_markers_inside_strings_are_text() -> None:
    text = '{\n  "url": "https://example.com/*x*/", // real\n  "b": [1,],\n}\n'
    document = load("json", text, origin="s.json")
    assert document.get(()) == {"url": "https://example.com/*x*/", "b": [1]}
    document.set(("url",), "http://a//b")
    assert document.get(("url",)) == "http://a//b"
    assert "// real" in document.to_text()


def test_blanking_keeps_offsets() -> None:
    text = '{"a": /* x */ 1, // y\n "b": [2,],}'
    clean = without_comments(text)
    assert len(clean) == len(text)
    assert json.loads(clean) == {"a": 1, "b": [2]}


def test_invalid_jsonc_names_line_and_column() -> None:
    with pytest.raises(ConfigError, match=r"^settings\.json:3:3: invalid JSON \(with comments\)"):
        doc('{\n  "a": 1 // one\n  "b": 2\n}')


def test_jsonc_extension_is_json() -> None:
    assert format_for_path("~/.config/zed/settings.jsonc") == "json"


def test_real_jsonc_files_keep_every_comment_through_an_edit() -> None:
    files = corpus(".json")
    commented = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        document = load("json", text, origin=path.name)
        if without_comments(text) == text:
            continue
        commented += 1
        comments = [line.strip() for line in text.splitlines() if line.strip().startswith("//")]
        document.set(("trueup.added",), {"on": True})
        out = document.to_text()
        assert all(comment in out for comment in comments), path.name
        assert load("json", out, origin=path.name).get(("trueup.added", "on")) is True
    assert commented > 0
