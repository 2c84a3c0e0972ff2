"""Declared content: where a source is, spelt once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trueup.kinds.content import source_path

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
