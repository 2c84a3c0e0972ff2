"""Where a declared source is, spelt once for everything that reads it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trueup.sources import declared_sources, source_path

SOURCES = [
    "a.txt",
    "src/d000/f000.txt",
    "src/.hidden/x",
    ".dotfile",
    "./a.txt",
    "src/./a.txt",
    "../up/a.txt",
    "src/../a.txt",
    "src//a.txt",
    "src/",
    "/abs/a.txt",
    "src/..",
    "src/.",
    "..",
    ".",
    "a..b/c.d",
    "name with space/ü.txt",
]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("base", ["/home/p/profiles", "/"])
def test_a_source_is_spelt_absolute_and_normal_as_the_os_would(base: str, source: str) -> None:
    expected = os.path.abspath(os.path.join(base, source))
    assert source_path(base, source) == expected
    assert source_path(Path(base), source) == expected


def test_the_sources_of_raw_resources_are_taken_as_they_come() -> None:
    """Before validation: whatever is not a resource with a text source is passed over."""
    raws = [
        {"source": "a.txt"},
        {"content": "inline"},
        {"source": 7},
        "not a table",
        {"source": "../b.txt"},
    ]
    assert declared_sources(raws, "/p/q") == ["/p/q/a.txt", "/p/b.txt"]
    assert declared_sources({"source": "a.txt"}, "/p") == []
