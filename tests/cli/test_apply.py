"""``trueup apply``: the plan, applied under the lock, verified and recorded."""

from __future__ import annotations

from world import World


def test_apply_writes_the_file_and_a_second_plan_is_converged(world: World, profile: str) -> None:
    applied = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert applied.code == 0, applied.err
    assert world.target("x").read_text() == "c"
    again = world.run("plan", profile, "--root", str(world.root), "--json")
    assert again.code == 0 and again.json["status"] == "converged"


def test_apply_without_yes_or_a_terminal_changes_nothing(world: World, profile: str) -> None:
    refused = world.run("apply", profile, "--root", str(world.root))
    assert refused.code != 0
    assert not world.target("x").exists()


def test_the_hint_to_type_the_name_is_not_shown_once_it_was_typed(
    world: World, profile: str
) -> None:
    world.target("x").write_text("a person's own text\n")
    root = str(world.root)
    asked = world.run("apply", profile, "--root", root, "--no-input")
    assert asked.code == 3 and "types the target's name" in asked.out, asked.out
    done = world.run("apply", profile, "--root", root, "--yes", "--confirm", "P")
    assert done.code == 0, done.err
    assert "(destroys)" in done.out and "types the target's name" not in done.out, done.out


def test_a_root_that_does_not_exist_is_made_with_yes_and_named_without(
    world: World, profile: str
) -> None:
    missing = world.base / "new" / "home"
    refused = world.run("apply", profile, "--root", str(missing))
    assert refused.code == 2, refused.err
    assert f"root {missing} does not exist; nothing was changed" in refused.err
    assert f"trueup apply {profile} --root {missing} --yes" in refused.err, refused.err
    assert not missing.exists()
    unattended = world.run("apply", profile, "--root", str(missing), "--no-input")
    assert unattended.code == 2 and not missing.exists(), unattended.err
    planned = world.run("plan", profile, "--root", str(missing))
    assert planned.code == 2 and "mkdir -p" in planned.err and "--yes" in planned.err
    made = world.run("apply", profile, "--root", str(missing), "--yes")
    assert made.code == 0, made.err
    assert f"created root {missing}" in made.err
    assert (missing / "x").read_text() == "c"
