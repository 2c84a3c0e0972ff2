"""YAML edits near anchors, commented-out options and block scalars keep the layout.

Helm values and compose files are full of switched-off options written as
comments under a key, of anchors reused further down, and of ``|``/``>-``
paragraphs: an edit that moves those lines, drops a blank line or flattens a
paragraph changes text the person wrote and reviews in every diff.
"""

from __future__ import annotations

import pytest
from realconfigs import corpus

from trueup.kinds.formats import load
from trueup.kinds.formats import yaml as yaml_format


@pytest.fixture(autouse=True, params=["whole", "sections"])
def yaml_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: the whole round trip, and a top-level section at a time (as
    large files are read and edited: see ``_SectionedYamlDocument``)."""
    monkeypatch.setattr(yaml_format, "SECTIONS_FROM", 0 if request.param == "sections" else 2**62)
    yaml_format.clear_cache()
    return str(request.param)


def edited(text: str, path: tuple[str, ...], value: object) -> str:
    document = load("yaml", text, origin="values.yaml")
    document.set(path, value)
    result = document.to_text()
    assert load("yaml", result, origin="values.yaml").get(path) == value
    return result


def test_an_alias_does_not_take_the_blank_line_after_its_anchor() -> None:
    text = "containerPortName: &p http\n\nservice:\n  port: 80\n  name: *p\n"
    assert edited(text, ("service", "extra"), 1) == (
        "containerPortName: &p http\n\nservice:\n  port: 80\n  name: *p\n  extra: 1\n"
    )


def test_a_key_after_an_alias_keeps_comments_and_blank_lines_in_place() -> None:
    text = (
        "name: &n web\n\n# The service\nservice:\n  name: *n\n\n# Ingress\ningress:\n  on: false\n"
    )
    assert edited(text, ("service", "port"), 80) == (
        "name: &n web\n\n# The service\nservice:\n  name: *n\n  port: 80\n\n"
        "# Ingress\ningress:\n  on: false\n"
    )


def test_a_new_top_level_key_leaves_indented_commented_out_options_above_it() -> None:
    text = "resources: {}\n  # limits:\n  #   cpu: 100m\n"
    assert edited(text, ("nodeSelector",), {"disk": "ssd"}) == (
        "resources: {}\n  # limits:\n  #   cpu: 100m\nnodeSelector:\n  disk: ssd\n"
    )


def test_a_new_top_level_key_leaves_touching_commented_out_items_above_it() -> None:
    text = "tolerations: []\n# - key: x\n#   operator: Exists\n"
    assert edited(text, ("affinity",), "x") == (
        "tolerations: []\n# - key: x\n#   operator: Exists\naffinity: x\n"
    )


def test_a_nested_key_leaves_commented_out_options_of_the_key_before_it() -> None:
    text = "a:\n  b:\n    c: 1\n    # d: 2\n# About e\ne: 1\n"
    assert (
        edited(text, ("a", "x"), 1) == "a:\n  b:\n    c: 1\n    # d: 2\n  x: 1\n# About e\ne: 1\n"
    )


def test_a_changed_folded_scalar_stays_a_paragraph() -> None:
    text = "a: 1\ndesc: >-\n  folded text that is long\n  over two lines\nb: 2\n"
    assert edited(text, ("desc",), "other text that is long over two lines and more words") == (
        "a: 1\ndesc: >-\n  other text that is long\n  over two lines and more\n  words\nb: 2\n"
    )


def test_a_changed_literal_scalar_keeps_its_indentation() -> None:
    text = "job:\n  script: |\n      echo one\n      echo two\n  when: always\n"
    assert edited(text, ("job", "script"), "echo three\necho four\n") == (
        "job:\n  script: |\n      echo three\n      echo four\n  when: always\n"
    )


def test_real_files_keep_every_comment_line_when_a_key_is_added() -> None:
    for path in corpus(".yaml", ".yml"):
        text = path.read_text(encoding="utf-8")
        try:
            document = load("yaml", text, origin=path.name)
        except ValueError:
            continue  # multi-document files are not config files trueup edits
        document.set(("trueupAdded",), {"on": True})
        out = document.to_text()
        before = [line for line in text.splitlines() if line.lstrip().startswith("#")]
        after = out.splitlines()
        assert before == [line for line in after if line.lstrip().startswith("#")], path.name
        assert after[: len(text.splitlines())] == text.splitlines() or "trueupAdded" in out
