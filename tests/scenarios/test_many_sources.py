"""A profile of many file resources with sources: whether a source's digest came from
the stat cache or from reading it, what lands is what the sources hold."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from world import World

COUNT = 300


def profile_of_sources(world: World) -> Path:
    past = time.time_ns() - 10_000_000_000  # old enough for their stat to be trusted
    resources = []
    for i in range(COUNT):
        source = world.profiles / "src" / f"d{i // 100}" / f"f{i:03d}.txt"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(f"line {i}\n" * (i % 5 + 1))
        os.utime(source, ns=(past, past))
        resources.append(
            {
                "id": f"f{i:03d}",
                "kind": "file",
                "target": f"tree/d{i // 100}/f{i:03d}.txt",
                "source": f"src/d{i // 100}/f{i:03d}.txt",
            }
        )
    document = {"profile": {"id": "many", "name": "Many"}, "resource": resources}
    return world.write("many.json", json.dumps(document))


def same_tree(world: World, root: Path) -> bool:
    return all(
        (root / "tree" / f"d{i // 100}" / f"f{i:03d}.txt").read_bytes()
        == (world.profiles / "src" / f"d{i // 100}" / f"f{i:03d}.txt").read_bytes()
        for i in range(COUNT)
    )


def test_first_apply_then_an_apply_elsewhere_then_one_after_an_edit_write_the_sources(
    world: World,
) -> None:
    profile = profile_of_sources(world)
    first = world.run("apply", "--yes", str(profile), "--root", str(world.root))
    assert first.code == 0, first.err
    assert same_tree(world, world.root)

    # The profile is known now (its validation cached, its sources' digests in
    # the stat cache): an apply into another root trusts them by their stat.
    elsewhere = world.base / "elsewhere"
    elsewhere.mkdir()
    second = world.run("apply", "--yes", str(profile), "--root", str(elsewhere))
    assert second.code == 0, second.err
    assert same_tree(world, elsewhere)

    edited = world.profiles / "src" / "d1" / "f150.txt"
    edited.write_text("edited since\n")
    third_root = world.base / "third"
    third_root.mkdir()
    third = world.run("apply", "--yes", str(profile), "--root", str(third_root))
    assert third.code == 0, third.err
    assert (third_root / "tree" / "d1" / "f150.txt").read_text() == "edited since\n"
    assert same_tree(world, third_root)
    assert not list(world.base.rglob("*.trueup-tmp-*"))
