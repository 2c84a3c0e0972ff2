"""A renamed resource (a new id at an old id's target) is never deleted by the rename,
however the run is batched, interrupted or recovered."""

from __future__ import annotations

from pathlib import Path

import pytest
from world import World

HEAD = '[profile]\nid = "r"\nname = "R"\n'


def files(**targets: str) -> str:
    """One file resource per id: ``id="target:content"``."""
    text = HEAD
    for rid, spec in targets.items():
        target, content = spec.split(":")
        text += (
            f'\n[[resource]]\nid = "{rid}"\nkind = "file"\ntarget = "{target}"\n'
            f'content = "{content}\\n"\n'
        )
    return text


def apply(world: World, profile: Path, *extra: str, env: dict[str, str] | None = None) -> int:
    done = world.run("apply", str(profile), "--root", str(world.root), "--yes", *extra, env=env)
    return done.code


def converged(world: World, profile: Path) -> bool:
    planned = world.run("plan", str(profile), "--root", str(world.root), "--json")
    return bool(planned.json["status"] == "converged")


def test_a_rename_with_new_content_in_another_batch_than_the_old_id(world: World) -> None:
    profile = world.write("p.toml", files(a="notes.txt:hello"))
    assert apply(world, profile) == 0
    world.write("p.toml", files(b="notes.txt:hello v2", f1="f1:1", f2="f2:2", f3="f3:3"))
    assert apply(world, profile, env={"TRUEUP_BATCH_SIZE": "2"}) == 0
    assert world.target("notes.txt").read_text() == "hello v2\n"
    assert converged(world, profile)


@pytest.mark.parametrize("content", ["hello", "hello v2"])
def test_a_rename_interrupted_between_batches_is_recovered(world: World, content: str) -> None:
    profile = world.write("p.toml", files(a="notes.txt:hello"))
    assert apply(world, profile) == 0
    world.write("p.toml", files(b=f"notes.txt:{content}", f3="f3:3"))
    env = {"TRUEUP_BATCH_SIZE": "2", "TRUEUP_CRASH_AT": "journal-succeeded:1"}
    assert apply(world, profile, env=env) != 0
    recovered = world.run("recover", env={"TRUEUP_BATCH_SIZE": "2"})
    assert recovered.code == 0, recovered.out + recovered.err
    assert world.target("notes.txt").read_text() == f"{content}\n"
    assert apply(world, profile) == 0
    assert world.target("notes.txt").read_text() == f"{content}\n"
    assert converged(world, profile)


def test_an_id_moved_with_overwrite_onto_a_dropped_id_s_target_keeps_it(world: World) -> None:
    profile = world.write("p.toml", files(x="a.txt:same", y="b.txt:other"))
    assert apply(world, profile) == 0
    world.write("p.toml", files(y="a.txt:same"))
    assert apply(world, profile, "--overwrite", "y") == 0
    assert world.target("a.txt").read_text() == "same\n"
    assert converged(world, profile)


def test_a_renamed_resource_in_drift_keeps_the_old_record_until_it_is_applied(
    world: World,
) -> None:
    world.write("src/f1", "one\n")
    tree = HEAD + '\n[[resource]]\nid = "{rid}"\nkind = "directory"\ntarget = "d"\nsource = "src"\n'
    profile = world.write("p.toml", tree.format(rid="a"))
    assert apply(world, profile) == 0
    world.target("d/f1").write_text("edited\n")
    world.write("p.toml", tree.format(rid="b"))
    assert apply(world, profile) == 4, "the edit is drift"
    world.target("d/f1").write_text("one\n")
    assert apply(world, profile) == 0
    world.write("p.toml", HEAD)
    assert apply(world, profile) == 0
    assert not world.target("d").exists(), "still trueup's: dropped, it is removed"


def test_a_kill_while_new_folders_are_written_is_recovered(world: World) -> None:
    world.write("src/one.txt", "one\n")
    world.write("src/sub/two.txt", "two\n")
    profile = world.write(
        "p.toml",
        HEAD
        + '\n[[resource]]\nid = "d"\nkind = "directory"\ntarget = "out/d"\nsource = "src"\n'
        + '\n[[resource]]\nid = "k"\nkind = "skill"\ntarget = "skills/k"\nsource = "src"\n',
    )
    assert apply(world, profile, env={"TRUEUP_CRASH_AT": "temp-written"}) != 0
    recovered = world.run("recover")
    assert recovered.code == 0, recovered.out + recovered.err
    assert world.target("out/d/sub/two.txt").read_text() == "two\n"
    assert world.target("skills/k/one.txt").read_text() == "one\n"
    assert converged(world, profile)


def test_sigterm_as_the_run_starts_stops_it_cleanly(world: World) -> None:
    profile = world.write("p.toml", files(a="a.txt:x"))
    stopped = world.run(
        "apply",
        str(profile),
        "--root",
        str(world.root),
        "--yes",
        "--json",
        env={"TRUEUP_CRASH_AT": "run-started:1:SIGTERM"},
    )
    assert stopped.code == 2 and stopped.json["status"] == "error", stopped.out + stopped.err
    assert apply(world, profile) == 0, "the target is not left locked"
