"""Where a declared source is, spelt once for everything that reads it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trueup.errors import UsageError
from trueup.sources import SourceBounds, source_path

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


def test_bounds_resolve_links_on_the_way_and_at_the_end(tmp_path: Path) -> None:
    base = tmp_path / "p"
    (base / "tree").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "secret").write_text("s")
    (base / "tree" / "leak").symlink_to(tmp_path / "out" / "secret")
    (base / "tree" / "fine").symlink_to("../tree")
    bounds = SourceBounds(base)
    assert bounds.holds(str(base / "tree" / "fine"))
    assert not bounds.holds(str(base / "tree" / "leak"))
    assert not bounds.holds(str(base / ".." / "out" / "secret"))
    assert not bounds.holds(str(tmp_path / "p-sibling" / "x")), "a prefix is not a folder"
    assert bounds.holds_link(str(base / "tree" / "up"), "../tree/x")
    assert not bounds.holds_link(str(base / "tree" / "up"), "../../out/secret")
    assert not bounds.holds_link(str(base / "tree" / "abs"), "/etc/passwd")
    wider = SourceBounds(base, [str(tmp_path / "out")])
    assert wider.holds(str(base / "tree" / "leak"))
    assert wider.holds_link(str(base / "tree" / "x"), "../../out/secret")


def test_a_refused_source_names_it_and_how_to_allow_its_folder(tmp_path: Path) -> None:
    bounds = SourceBounds(tmp_path / "p", ["../shared"])
    with pytest.raises(UsageError) as refused:
        bounds.check("/etc/hostname", "/etc/hostname")
    message = refused.value.message
    assert "field 'source': '/etc/hostname' is outside the profile's folder" in message
    assert "../shared" in message and "it is /etc/hostname" in message
    assert 'allow_sources_outside = ["/etc"]' in (refused.value.hint or "")
