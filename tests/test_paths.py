"""Target rules and root confinement."""

from __future__ import annotations

from pathlib import Path

import pytest

from trueup.paths import RootResolver, TargetError, find_overlaps, normalise_target


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("", "empty"),
        ("a/../b", "'..'"),
        ("a/*.txt", "glob"),
        ("/etc/x", "absolute"),
        ("a\0b", "NUL"),
        (".", "root itself"),
    ],
)
def test_bad_targets(raw: str, why: str) -> None:
    with pytest.raises(TargetError, match=why):
        normalise_target(raw)


def test_normalisation() -> None:
    assert normalise_target("./a//b/") == "a/b"
    assert normalise_target("a\\b") == "a/b"
    assert normalise_target("cafe\u0301") == "caf\u00e9"


def test_overlaps_after_normalisation() -> None:
    pairs = [("x", normalise_target("a/b")), ("y", normalise_target("./a")), ("z", "c")]
    assert find_overlaps(pairs) == [("y", "x")]
    assert find_overlaps([("a", "ab"), ("b", "a")]) == []


def test_overlaps_are_found_whatever_sorts_between_the_two_paths() -> None:
    # As text, "s-old" and "s.md" sort between "s" and "s/SKILL.md".
    pairs = [("skill", "s"), ("old", "s-old"), ("md", "s.md"), ("inside", "s/SKILL.md")]
    assert find_overlaps(pairs) == [("skill", "inside")]


def test_symlinked_parent_outside_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    with pytest.raises(TargetError, match="outside the root"):
        RootResolver(root).resolve("link/deeper/file")


def test_symlinked_parent_inside_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert RootResolver(tmp_path).resolve("link/f") == tmp_path.resolve() / "link" / "f"
