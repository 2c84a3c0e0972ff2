"""A run's temp files found by its name around its targets, without its rollback material."""

from __future__ import annotations

from pathlib import Path

from trueup.execute.leftovers import declared_targets, run_mark, sweep_run_temp_files
from trueup.fs import WritableFS


def test_only_this_runs_temp_files_go_and_only_under_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d" / "tree" / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "link").symlink_to(outside)
    mine = [
        root / f".a.txt{run_mark('r1')}1",
        root / "d" / f".b{run_mark('r1')}2",
        root / "d" / "tree" / "sub" / f".c{run_mark('r1')}3",
    ]
    (root / f".new{run_mark('r1')}4").mkdir()  # a folder made whole under a temp name
    (root / f".new{run_mark('r1')}4" / "f").write_text("x")
    theirs = [root / f".a.txt{run_mark('r2')}1", outside / f".e{run_mark('r1')}5", root / "keep"]
    for path in [*mine, *theirs]:
        path.write_text("x")
    fs = WritableFS(tag="abandon")
    removed = sweep_run_temp_files(fs, str(root), "r1", ["a.txt", "d/tree", "d/link/e", "../x/e"])
    fs.close()
    assert removed == 4
    assert not any(path.exists() for path in mine)
    assert not (root / f".new{run_mark('r1')}4").exists()
    assert all(path.exists() for path in theirs)


def test_targets_are_read_from_the_declaration_as_it_is_now(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "a"\nkind = "file"\n'
        'target = "x/a"\ncontent = "a"\n[[resource]]\nid = "b"\n'
    )
    assert declared_targets(str(profile)) == ["x/a"]
    assert declared_targets(str(tmp_path / "gone.toml")) == []
    (tmp_path / "bad.toml").write_text("[[resource")
    assert declared_targets(str(tmp_path / "bad.toml")) == []
    assert declared_targets(None) == []
