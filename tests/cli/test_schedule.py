"""``trueup schedule``: status, set and remove answers before anything is installed.

Installing, drift and removal of a real timer's files are in
tests/scenarios/test_workstation_setup.py; this file pins the refusals and the
status envelope.
"""

from __future__ import annotations

import pytest
from world import World


def schedule(world: World, *args: str) -> tuple[int, str, str]:
    done = world.run("schedule", *args, "--root", str(world.root))
    return done.code, done.out, done.err


def test_status_before_anything_is_installed(world: World) -> None:
    code, out, _ = schedule(world, "status", "--json")
    assert code == 0
    assert '"state": "not-installed"' in out and '"schedule": null' in out


@pytest.mark.parametrize(
    ("when", "said"),
    [
        ("every:0m", "expected every:N[m|h]"),
        ("sometimes", "expected daily@HH:MM, weekly:DAY[,DAY]@HH:MM"),
        ("daily@25:00", "daily@25:00"),
    ],
)
def test_a_bad_schedule_is_refused_and_nothing_written(
    world: World, profile: str, when: str, said: str
) -> None:
    code, _, err = schedule(world, "set", when, "--profile", profile, "--yes")
    assert code == 2 and said in err, err
    assert list(world.root.iterdir()) == []


def test_set_without_a_profile_on_a_machine_that_follows_nothing(world: World) -> None:
    code, _, err = schedule(world, "set", "every:30m", "--yes")
    assert code == 2
    assert "give --profile FILE" in err and "trueup schedule set daily@09:00 --profile" in err


def test_removing_what_is_not_installed_changes_nothing(world: World) -> None:
    code, out, _ = schedule(world, "remove", "--yes")
    assert code == 0 and "no schedule is installed; nothing was changed" in out
