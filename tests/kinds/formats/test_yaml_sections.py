"""Large YAML files: read by the C parser, edited a top-level section at a time.

What the sections give must be what the whole round trip gives: the same values,
the same anchors and merge keys, the same edited text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from realconfigs import corpus
from ruamel.yaml import YAML

from trueup.kinds.formats import (
    ConfigDocument,
    KeyPath,
    KeyPathError,
    flatten,
    load,
    parse_key_path,
    same_value,
)
from trueup.kinds.formats import yaml as yaml_format


@pytest.fixture
def sections(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(yaml_format, "SECTIONS_FROM", 0)
    yaml_format.clear_cache()
    yield
    yaml_format.clear_cache()


def _round_trip(text: str) -> ConfigDocument:
    return yaml_format.YamlDocument(text, "x.yaml", indent_from=text)


def _sectioned(text: str) -> ConfigDocument:
    document = load("yaml", text, origin="x.yaml")
    assert type(document).__name__ == "_SectionedYamlDocument"
    return document


TRICKY = """\
# values whose reading differs between YAML 1.1 and 1.2, or between loaders
%s
port: 22:22
plain: [yes, no, on, off, y, n, "~", ~, null, Null, NULL, True, TRUE, false]
numbers: [0o17, 017, 0x1F, 1_000, 1e3, 1.5e+3, .inf, -.Inf, .NaN, 0.1, +12, -0]
dates:
  - 2001-12-14t21:59:43.10-05:00
  - 2002-12-14
  - 2001-12-14 21:59:43.10
keys: {1: int, 1.5: float, yes: word, null: none, 0x10: hex, 2001-01-01: date}
tagged: !Ref some.value
tagged_map: !Custom {a: 1}
tagged_list: !Custom [1, 2]
binaryish: !!str 123
ordered: !!omap [{b: 1}, {a: 2}]
defaults: &defaults {timeout: 3, retries: 2}
service:
  <<: *defaults
  retries: 5
text: |
  line one
  line two
folded: >-
  folded
  text
empty:
quoted: 'it''s'
"""


@pytest.mark.usefixtures("sections")
@pytest.mark.parametrize("head", ["", "---"])
def test_the_c_parser_reads_tricky_values_as_the_round_trip_does(head: str) -> None:
    text = TRICKY % head
    fast = _sectioned(text)
    whole = _round_trip(text)
    assert same_value(fast.get(()), whole.get(()))
    assert same_value(fast.keys_flat(), whole.keys_flat())
    for path in flatten(whole.get(())):
        key = parse_key_path(path)
        assert same_value(fast.get(key), whole.get(key))
        assert fast.inherited(key) == whole.inherited(key)
        assert fast.shared_by(key) == whole.shared_by(key)
    assert fast.kept_whole() == whole.kept_whole()


@pytest.mark.usefixtures("sections")
@pytest.mark.parametrize(
    "text",
    [
        "%YAML 1.1\n---\na: yes\n",  # a directive changes how values read
        "a: 1\n---\nb: 2\n",  # several documents
        "<<: {a: 1}\nb: 2\n",  # a merge key at the top
        "? a\n: 1\n",  # an explicit key
        "{a: 1,\n b: 2}\n",  # a flow mapping at the top
        "a: 1\rb: 2\n",  # a line break Python and YAML count differently
        "- a\n- b\n",
        "a: !!set {x, y}\n",  # read as text by the round trip
        "",
    ],
)
def test_shapes_a_section_cannot_stand_for_take_the_whole_round_trip(text: str) -> None:
    assert yaml_format._scan(text, "x.yaml") is None


SHARED = """\
# head comment
---
base: &base
  image: app:1  # pinned
  port: 80

one:
  <<: *base
  port: 81
two:
  name: &n two  # the name
  tags: [a, b]

three:
  labels:
    name: *n
  notes: |
    kept
    as is
  # commented-out:
  # extra: 1
last:
  value: {}
    # limits:
    #   cpu: 1
"""


def _edits() -> list[list[tuple[KeyPath, object]]]:
    missing = yaml_format.MISSING
    return [
        [(("one", "port"), 82)],
        [(("one", "image"), "app:2")],
        [(("base", "image"), "app:3")],
        [(("two", "name"), "deux")],
        [(("three", "labels", "team"), "core"), (("new",), {"a": 1})],
        [(("three",), missing)],
        [(("base",), missing)],
        [(("one",), missing), (("two", "tags"), ["c"])],
        [(("last", "value", "cpu"), 2), (("last",), missing), (("zz",), 1)],
        [(("three", "notes"), "changed\ntext\n"), (("two",), missing)],
    ]


@pytest.mark.usefixtures("sections")
@pytest.mark.parametrize("edits", _edits())
def test_edits_through_sections_write_what_the_whole_round_trip_writes(
    edits: list[tuple[KeyPath, object]],
) -> None:
    results = []
    for make in (_round_trip, _sectioned):
        document = make(SHARED)
        outcome: list[object] = []
        for path, value in edits:
            try:
                if value is yaml_format.MISSING:
                    document.delete(path)
                else:
                    document.set(path, value)
                outcome.append(document.get(path))
            except Exception as exc:
                outcome.append(repr(exc))
        outcome.extend([document.to_text(), document.get(()), document.kept_whole()])
        results.append(outcome)
    assert results[0] == results[1]


def test_a_large_file_is_read_once_per_text() -> None:
    text = "".join(f"key{i}:\n  name: &a{i} v{i}\n  other: *a{i}\n" for i in range(6000))
    assert len(text) >= yaml_format.SECTIONS_FROM
    yaml_format.clear_cache()
    first = load("yaml", text, origin="x.yaml")
    second = load("yaml", text, origin="x.yaml")
    assert first._scan is second._scan  # type: ignore[attr-defined]
    second.set(("key7", "name"), "changed")
    assert first.get(("key7", "name")) == "v7"
    section = "key7:\n  name: &a7 v7\n  other: *a7\n"
    alone = _round_trip(section)
    alone.set(("key7", "name"), "changed")
    assert second.to_text() == text.replace(section, alone.to_text())
    yaml_format.clear_cache()


@pytest.mark.usefixtures("sections")
def test_real_files_read_and_edit_alike_whole_and_by_section() -> None:
    checked = 0
    for path in corpus(".yml", ".yaml"):
        text = path.read_text(encoding="utf-8")
        try:
            whole = _round_trip(text)
        except Exception:
            continue
        document = load("yaml", text, origin=path.name)
        if type(document).__name__ != "_SectionedYamlDocument":
            continue
        checked += 1
        expected = YAML(typ="rt").load(text)
        assert same_value(document.get(()), yaml_format._plain(expected)), path.name
        assert document.kept_whole() == whole.kept_whole(), path.name
        for dotted in whole.keys_flat():
            key = parse_key_path(dotted)
            assert document.shared_by(key) == whole.shared_by(key), (path.name, dotted)
            assert document.inherited(key) == whole.inherited(key), (path.name, dotted)
        first = next(iter(whole.keys_flat()), None)
        whole_edit, section_edit = _round_trip(text), load("yaml", text, origin=path.name)
        for edited in (whole_edit, section_edit):
            edited.set(("trueup_added",), {"a": 1})
            if first is not None:
                with contextlib.suppress(KeyPathError):  # inside an anchor: refused in both
                    edited.set(parse_key_path(first), "changed")
        assert section_edit.to_text() == whole_edit.to_text(), path.name
    assert checked > 5
