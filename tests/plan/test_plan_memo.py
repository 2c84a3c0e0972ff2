"""A converged plan is remembered, and never trusted past any change it depends on.

Each test converges a profile, ages every file past the racy window, plans
once (which remembers), then changes one thing and checks that the next plan
sees it.
"""

from __future__ import annotations

import marshal
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from trueup.engine import Engine
from trueup.errors import UsageError
from trueup.model import ActionType, Outcome
from trueup.plan import memo
from trueup.settings import Settings

PROFILE = """[profile]
id = "m"
name = "Memo"

[[resource]]
id = "file"
kind = "file"
target = "etc/one.txt"
source = "src/one.txt"

[[resource]]
id = "tree"
kind = "directory"
target = "tree"
source = "src/tree"
policy = "replace"
"""


@pytest.fixture
def world(tmp_path: Path, engine: Engine) -> Path:
    """A converged profile whose files are all old enough to be trusted by their stat."""
    (tmp_path / "src" / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "one.txt").write_text("one\n")
    (tmp_path / "src" / "tree" / "a.txt").write_text("a\n")
    (tmp_path / "src" / "tree" / "sub" / "b.txt").write_text("b\n")
    (tmp_path / "profile.toml").write_text(PROFILE)
    (tmp_path / "root").mkdir()
    prepared = engine.prepare(tmp_path / "profile.toml", tmp_path / "root")
    result = engine.apply(prepared, prepared.plan)
    assert result is not None and result.outcome is Outcome.CONVERGED
    age(tmp_path)
    return tmp_path


def age(base: Path) -> None:
    """Move every mtime 10 s into the past (folders included)."""
    past = time.time_ns() - 10_000_000_000
    os.utime(base, ns=(past, past))
    for folder, dirs, files in os.walk(base):
        for name in [*dirs, *files]:
            os.utime(os.path.join(folder, name), ns=(past, past), follow_symlinks=False)


def changes(engine: Engine, world: Path) -> list[tuple[str, str]]:
    plan = engine.prepare(world / "profile.toml", world / "root").plan
    return [(a.resource_id, a.type.value) for a in plan.actions if a.type is not ActionType.NO_OP]


def remembered(engine: Engine, world: Path) -> bool:
    return engine.prepare(world / "profile.toml", world / "root").remembered


def test_a_converged_plan_is_answered_from_memory(engine: Engine, world: Path) -> None:
    first = engine.prepare(world / "profile.toml", world / "root")
    assert not first.plan.changes and not first.remembered
    again = engine.prepare(world / "profile.toml", world / "root")
    assert again.remembered
    assert again.plan.digest == first.plan.digest and again.plan.body() == first.plan.body()


def test_files_too_new_to_trust_are_planned_again(engine: Engine, world: Path) -> None:
    (world / "root" / "etc" / "one.txt").write_text("one\n")  # same bytes, fresh mtime
    assert changes(engine, world) == []
    assert not remembered(engine, world)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda w: (w / "root/etc/one.txt").write_text("edited\n"), [("file", "write-file")]),
        (lambda w: (w / "root/etc/one.txt").unlink(), [("file", "write-file")]),
        (lambda w: (w / "src/one.txt").write_text("two\n"), [("file", "write-file")]),
        (lambda w: (w / "root/tree/extra.txt").write_text("x"), [("tree", "mirror-directory")]),
        (lambda w: (w / "root/tree/sub/b.txt").unlink(), [("tree", "mirror-directory")]),
        (lambda w: (w / "src/tree/sub/c.txt").write_text("c"), [("tree", "mirror-directory")]),
        (
            lambda w: (w / "profile.toml").write_text(PROFILE.replace("etc/one", "etc/two")),
            [("file", "human-action")],  # the id was applied at etc/one (planner._moved)
        ),
    ],
    ids=[
        "target edited",
        "target deleted",
        "source edited",
        "file added to a mirrored folder",
        "file deleted deep in a folder",
        "file added to a source folder",
        "profile edited",
    ],
)
def test_any_change_is_seen_after_a_remembered_plan(
    engine: Engine, world: Path, change: object, expected: list[tuple[str, str]]
) -> None:
    assert changes(engine, world) == []
    assert remembered(engine, world)
    change(world)  # type: ignore[operator]
    age(world)
    found = changes(engine, world)
    assert sorted(set(found)) == sorted(set(expected)), found


def test_a_plan_with_drift_is_never_answered_from_memory(engine: Engine, world: Path) -> None:
    """Its diff of what --overwrite would discard is read through the resources."""
    (world / "profile.toml").write_text(PROFILE.replace('policy = "replace"', ""))
    assert changes(engine, world) == []
    (world / "root/tree/a.txt").write_text("edited\n")
    age(world)
    assert changes(engine, world) == [("tree", "drift-conflict")]
    assert not remembered(engine, world)


def test_a_run_of_the_target_makes_the_memory_stale(engine: Engine, world: Path) -> None:
    assert changes(engine, world) == []
    engine.store.start_run(
        engine.prepare(world / "profile.toml", world / "root").plan.target,
        "0" * 64,
        str(world / "profile.toml"),
        "t",
    )
    assert not remembered(engine, world)


def test_a_parent_swapped_for_a_link_outside_the_root_is_refused(
    engine: Engine, world: Path, tmp_path: Path
) -> None:
    assert changes(engine, world) == []
    outside = tmp_path / "outside"
    (world / "root" / "etc").rename(outside)
    (world / "root" / "etc").symlink_to(outside)
    age(world)
    with pytest.raises(UsageError, match="outside the root"):
        engine.prepare(world / "profile.toml", world / "root")


def test_a_source_folder_emptied_after_a_remembered_plan_is_refused(
    engine: Engine, world: Path
) -> None:
    assert changes(engine, world) == []
    assert remembered(engine, world)
    (world / "src/tree/a.txt").unlink()
    (world / "src/tree/sub/b.txt").unlink()  # the empty folder stays
    age(world)
    with pytest.raises(UsageError, match="'src/tree' holds no files"):
        engine.prepare(world / "profile.toml", world / "root")


def test_a_plan_remembered_for_one_state_store_is_not_used_for_another(
    engine: Engine, world: Path, tmp_path: Path, fresh_state: object
) -> None:
    assert changes(engine, world) == [] and remembered(engine, world)
    other = tmp_path / "other"
    fresh_state.into(other)  # type: ignore[attr-defined]
    settings = Settings(
        data=engine.settings.data, state_url=f"sqlite:///{other / 'state.db'}", actor="t"
    )
    elsewhere = Engine(settings)
    try:
        assert not elsewhere.prepare(world / "profile.toml", world / "root").remembered
    finally:
        elsewhere.close()


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # cut short, as by a full disk
        lambda b: b"\x00" * len(b),  # overwritten
        lambda b: b"",  # emptied
        lambda b: marshal.dumps(["not", "a", "memo"]),  # some other value
    ],
    ids=["truncated", "zeroed", "empty", "wrong shape"],
)
def test_a_damaged_memory_is_ignored_and_replaced(
    engine: Engine, world: Path, damage: Callable[[bytes], bytes]
) -> None:
    assert changes(engine, world) == [] and remembered(engine, world)
    (memo,) = (engine.settings.data / "cache" / "plans").iterdir()
    memo.write_bytes(damage(memo.read_bytes()))
    again = engine.prepare(world / "profile.toml", world / "root")
    assert not again.remembered and not again.plan.changes
    assert remembered(engine, world)


# -- links: what is read through a link depends on the link and on its target --
# A change is aged on its own (``aged``): ageing everything would change every
# ctime, and so every witness, hiding nothing whatever trueup watched.
def aged(*paths: Path) -> None:
    past = time.time_ns() - 10_000_000_000
    for path in paths:
        os.utime(path, ns=(past, past), follow_symlinks=False)


def linked(path: Path, to: Path) -> None:
    """Make ``path`` a link to ``to`` (replacing whatever is there, as ln -sfn)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
    path.symlink_to(to)


@pytest.mark.parametrize("memory", ["remembered", "forgotten"])
def test_an_edit_behind_a_linked_source_file_is_seen(
    engine: Engine, world: Path, memory: str
) -> None:
    (world / "shared").mkdir()
    (world / "shared" / "one.txt").write_text("one\n")
    linked(world / "src" / "one.txt", world / "shared" / "one.txt")
    age(world)
    assert changes(engine, world) == [] and remembered(engine, world)
    (world / "shared" / "one.txt").write_text("edited\n")
    aged(world / "shared" / "one.txt")
    if memory == "forgotten":  # then only the stat cache could hide the edit
        shutil.rmtree(engine.settings.data / "cache" / "plans")
    assert changes(engine, world) == [("file", "write-file")]


def test_a_linked_source_folder_pointed_elsewhere_is_seen(engine: Engine, world: Path) -> None:
    for version in ("v1", "v2"):
        shutil.copytree(world / "src" / "tree", world / version)
    (world / "v2" / "a.txt").write_text("a, second version\n")
    (world / "skills").mkdir()  # nothing else in it is read: only the link tells
    linked(world / "skills" / "tree", world / "v1")
    (world / "profile.toml").write_text(PROFILE.replace('"src/tree"', '"skills/tree"'))
    age(world)
    assert changes(engine, world) == [] and remembered(engine, world)
    linked(world / "skills" / "tree", world / "v2")
    aged(world / "skills" / "tree", world / "skills")
    assert changes(engine, world) == [("tree", "mirror-directory")]


def test_a_profile_reached_through_a_chain_of_links_is_watched_all_along(
    engine: Engine, world: Path
) -> None:
    for release, text in (("r1", PROFILE), ("r2", PROFILE.replace("etc/one", "etc/two"))):
        (world / "releases" / release).mkdir(parents=True)
        (world / "releases" / release / "profile.toml").write_text(text)
    (world / "links").mkdir()
    linked(world / "links" / "current.toml", world / "releases" / "r1" / "profile.toml")
    linked(world / "profile.toml", world / "links" / "current.toml")
    age(world)
    assert changes(engine, world) == [] and remembered(engine, world)
    linked(world / "links" / "current.toml", world / "releases" / "r2" / "profile.toml")
    aged(world / "links" / "current.toml", world / "links")
    assert changes(engine, world) == [("file", "human-action")]  # r2 moves the applied id


def test_a_folder_deep_above_a_target_swapped_for_a_link_out_of_the_root_is_refused(
    engine: Engine, world: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    deep = PROFILE.replace('target = "etc/one.txt"', 'target = "etc/deep/er/one.txt"')
    (world / "profile.toml").write_text(deep)
    # The id was applied at etc/one.txt: taking it over is --overwrite's to say.
    prepared = engine.prepare(world / "profile.toml", world / "root", force=["file"])
    assert engine.apply(prepared, prepared.plan) is not None
    age(world)
    assert changes(engine, world) == [] and remembered(engine, world)
    outside = tmp_path_factory.mktemp("elsewhere") / "deep"
    (world / "root" / "etc" / "deep").rename(outside)
    linked(world / "root" / "etc" / "deep", outside)
    aged(world / "root" / "etc" / "deep", world / "root" / "etc")
    with pytest.raises(UsageError, match="outside the root"):
        engine.prepare(world / "profile.toml", world / "root")


def test_a_reinstalled_parser_library_invalidates_remembered_plans(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path_factory.mktemp("site")
    (site / "fakeparser").mkdir()
    (site / "fakeparser" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(memo, "_PARSERS", ("fakeparser",))
    before = memo._code_stamp()
    (site / "fakeparser" / "__init__.py").unlink()  # an upgrade replaces the files
    (site / "fakeparser" / "__init__.py").write_text("VERSION = 2\n")
    os.utime(site / "fakeparser", ns=(time.time_ns() + 10**9,) * 2)
    assert memo._code_stamp() != before
