"""Folders reached from the root down: links inside the root work, nothing leads out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trueup.anchor import Anchor, OutsideRoot
from trueup.fs import ReadOnlyFS, WritableFS


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root" / "real" / "deep").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return tmp_path / "root"


def same_folder(fd: int, path: Path) -> bool:
    return os.path.samestat(os.fstat(fd), os.stat(path))


def test_a_folder_is_reached_from_the_root(root: Path) -> None:
    anchor = Anchor(str(root))
    assert same_folder(anchor.folder(f"{root}/real/deep"), root / "real" / "deep")
    anchor.close()


@pytest.mark.parametrize("link", ["real", "./real/deep/..", "ABSOLUTE"])
def test_a_link_that_stays_inside_the_root_is_followed(root: Path, link: str) -> None:
    (root / "skills").symlink_to(str(root / "real") if link == "ABSOLUTE" else link)
    anchor = Anchor(str(root))
    assert same_folder(anchor.folder(f"{root}/skills/deep"), root / "real" / "deep")
    anchor.close()


@pytest.mark.parametrize("link", ["../outside", "ABSOLUTE", "real/../.."])
def test_a_link_that_leads_out_of_the_root_is_refused(root: Path, link: str) -> None:
    outside = root.parent / "outside"
    (root / "x").symlink_to(str(outside) if link == "ABSOLUTE" else link)
    anchor = Anchor(str(root))
    with pytest.raises(OutsideRoot, match=r"outside the root|above the root"):
        anchor.folder(f"{root}/x")
    anchor.close()


def test_a_folder_replaced_since_it_was_reached_is_refused_by_recheck(root: Path) -> None:
    anchor = Anchor(str(root))
    anchor.folder(f"{root}/real/deep")
    anchor.recheck()  # nothing changed
    (root / "real").rename(root / "moved")
    (root / "real").mkdir()
    (root / "real" / "deep").mkdir()
    with pytest.raises(OutsideRoot, match="replaced while trueup ran"):
        anchor.recheck()
    anchor.forget()
    anchor.recheck()  # forgotten: reached afresh next time
    anchor.close()


def test_a_folder_reached_again_after_its_descriptor_was_let_go_must_be_the_same(
    root: Path,
) -> None:
    anchor = Anchor(str(root))
    for i in range(100):  # more folders than descriptors kept open
        (root / f"d{i}").mkdir()
        anchor.folder(f"{root}/d{i}")
    (root / "d0").rename(root / "d0-moved")
    (root / "d0").symlink_to(root / "d1")
    with pytest.raises(OutsideRoot, match="replaced"):
        anchor.folder(f"{root}/d0")
    anchor.close()


def test_a_write_staged_before_its_folder_is_swapped_for_a_link_never_leaves_the_root(
    root: Path,
) -> None:
    outside = root.parent / "outside"
    fs = WritableFS(tag="run")
    fs.confine(root)
    fs.write(f"{root}/real/deep/one.txt", b"one", exclusive=True)
    (root / "real").rename(root / "aside")
    (root / "real").symlink_to(outside)
    (outside / "deep").mkdir()
    # Into the folder it already holds, now moved aside: still inside the root.
    fs.write(f"{root}/real/deep/two.txt", b"two", exclusive=True)
    with pytest.raises(OutsideRoot, match="outside the root"):
        fs.commit()
    fs.discard()
    fs.close()
    assert sorted(p.name for p in outside.rglob("*")) == ["deep"]
    assert sorted(p.name for p in (root / "aside").rglob("*")) == ["deep"], "temp files gone"


def test_reading_through_a_folder_swapped_for_a_link_out_is_refused(root: Path) -> None:
    outside = root.parent / "outside"
    (outside / "secret.txt").write_text("not yours")
    (root / "real" / "secret.txt").write_text("yours")
    fs = ReadOnlyFS()
    fs.confine(root)
    assert fs.read_bytes(f"{root}/real/secret.txt") == b"yours"
    fs.close()
    (root / "real").rename(root / "aside")
    (root / "real").symlink_to(outside)
    with pytest.raises(OutsideRoot):
        fs.read_bytes(f"{root}/real/secret.txt")
    fs.close()


def test_a_tree_nested_deeper_than_the_limit_is_refused_not_recursed(tmp_path: Path) -> None:
    from trueup.errors import UsageError
    from trueup.fs import MAX_TREE_DEPTH

    deep = tmp_path / "t"
    fd = os.open(tmp_path, os.O_RDONLY)
    os.mkdir("t", dir_fd=fd)
    current = os.open("t", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    for _ in range(MAX_TREE_DEPTH + 5):  # names relative to a descriptor: no PATH_MAX
        os.mkdir("d", dir_fd=current)
        nxt = os.open("d", os.O_RDONLY, dir_fd=current)
        os.close(current)
        current = nxt
    os.close(current)
    with pytest.raises(UsageError, match=f"nested over {MAX_TREE_DEPTH} deep"):
        ReadOnlyFS().walk(deep)
