"""A workstation's whole setup through the installed ``trueup``: its tools, its
credentials and the schedule that keeps it so."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from fleet import Machine, invite, serving
from test_many_machines import make_source
from world import Result, World

UNITS = ".config/systemd/user"


def schedule(world: World, *args: str, env: dict[str, str] | None = None) -> Result:
    return world.run("schedule", *args, "--root", str(world.root), env=env)


def test_a_schedule_installed_current_edited_disabled_and_removed(world: World) -> None:
    profile = world.write("workstation.toml", '[profile]\nid = "w"\nname = "W"\n')
    done = schedule(world, "set", "daily@09:30", "--profile", str(profile), "--yes", "--json")
    assert done.code == 0, done.out + done.err
    assert done.json["data"]["schedule"]["schedule"] == "daily@09:30"
    timer = world.target(f"{UNITS}/trueup-sync.timer")
    service = world.target(f"{UNITS}/trueup-sync.service")
    assert "OnCalendar=*-*-* 09:30:00" in timer.read_text()
    assert f"apply {profile} --root {os.path.realpath(world.root)} --no-input" in (
        service.read_text()
    )
    # Files under a --root that is not the home are not handed to the running systemd.
    steps = done.json["data"]["scheduler"]
    assert steps and all(s["result"].startswith("not run: the files are under") for s in steps)

    status = schedule(world, "status", "--json")
    assert (status.code, status.json["data"]["state"]) == (0, "current")

    timer.write_text(timer.read_text().replace("09:30", "10:00"))  # edited by hand
    status = schedule(world, "status", "--json")
    assert (status.code, status.json["data"]["state"]) == (3, "drifted")
    again = schedule(world, "set", "daily@09:30", "--profile", str(profile), "--yes")
    assert again.code == 4 and "rerun with --overwrite" in again.out + again.err
    assert "10:00" in timer.read_text()  # the person's edit is left as it is
    assert (
        schedule(
            world, "set", "daily@09:30", "--profile", str(profile), "--yes", "--overwrite"
        ).code
        == 0
    )
    assert "09:30" in timer.read_text()

    world.target(f"{UNITS}/timers.target.wants/trueup-sync.timer").unlink()  # systemctl disable
    status = schedule(world, "status")
    assert status.code == 3 and status.out.startswith("disabled: daily@09:30")

    removed = schedule(world, "remove", "--yes", "--overwrite")
    assert removed.code == 0, removed.out + removed.err
    assert not timer.exists() and not service.exists()
    status = schedule(world, "status", "--json")
    assert (status.code, status.json["data"]["state"]) == (0, "not-installed")


def test_a_bad_schedule_is_refused_with_nothing_written(world: World) -> None:
    profile = world.write("workstation.toml", '[profile]\nid = "w"\nname = "W"\n')
    done = schedule(world, "set", "hourly", "--profile", str(profile), "--yes")
    assert done.code == 2 and "schedule 'hourly': no time" in done.err
    assert "Traceback" not in done.err
    assert not world.target(UNITS).exists()


def test_a_schedule_without_a_terminal_or_yes_asks_for_yes(world: World) -> None:
    profile = world.write("workstation.toml", '[profile]\nid = "w"\nname = "W"\n')
    done = schedule(world, "set", "every:15m", "--profile", str(profile))
    assert done.code == 2 and "--yes" in done.err
    assert not world.target(UNITS).exists()
    assert schedule(world, "status").out.startswith("not-installed")


def _stand_in_uv(folder: Path) -> None:
    uv = folder / "uv"
    uv.write_text(
        "#!/bin/sh\n"
        'spec="$3"; name="${spec%%==*}"; version="${spec#*==}"\n'
        f'printf \'#!/bin/sh\\necho "%s %s"\\n\' "$name" "$version" > "{folder}/$name"\n'
        f'chmod 755 "{folder}/$name"\n'
    )
    uv.chmod(0o755)


def test_a_profile_with_a_tool_and_a_credential_end_to_end(world: World) -> None:
    tools = world.base / "bin"
    system = world.base / "system"
    tools.mkdir()
    system.mkdir()
    (system / "chmod").symlink_to(shutil.which("chmod") or "/bin/chmod")
    _stand_in_uv(tools)
    profile = world.write(
        "workstation.toml",
        """
[profile]
id = "w"
name = "W"

[[resource]]
id = "linter"
kind = "tool"
target = "linter"
version = "0.6.9"
recipe = [{ manager = "uv", package = "linter" }]

[[resource]]
id = "api-key"
kind = "credential"
target = "credentials/api"
store = "env"
name = "AGENT_API_KEY"
""",
    )
    path = {"PATH": f"{tools}:{system}"}
    first = world.run("apply", str(profile), "--root", str(world.root), "--yes", env=path)
    # The tool is installed; the key is the person's to provide: exit 3, with how.
    assert first.code == 3, first.out + first.err
    assert "AGENT_API_KEY is not set: export it" in first.out
    assert (tools / "linter").exists()
    secret = "sk-test-never-shown-123456"
    keyed = {**path, "AGENT_API_KEY": secret}
    second = world.run(
        "apply", str(profile), "--root", str(world.root), "--yes", "--json", env=keyed
    )
    assert second.code == 0, second.out + second.err
    assert secret not in second.out + second.err
    assert world.run("plan", str(profile), "--root", str(world.root), env=keyed).code == 0


def test_a_follower_s_schedule_syncs_from_its_source(world: World) -> None:
    make_source(world)
    laptop = Machine(world, "laptop")
    with serving(world):
        assert laptop.follow(invite(world, "--group", "laptops")).code == 0
    done = laptop.run("schedule", "set", "every:30m", "--root", str(laptop.root), "--yes")
    assert done.code == 0, done.out + done.err
    service = (laptop.root / UNITS / "trueup-sync.service").read_text()
    assert f"sync --apply --root {os.path.realpath(laptop.root)} --no-input" in service
    assert f"Environment=TRUEUP_DATA={laptop.data}" in service


def test_without_a_profile_or_a_source_there_is_nothing_to_schedule(world: World) -> None:
    done = schedule(world, "set", "daily@09:00", "--yes")
    assert done.code == 2 and "this machine follows no source" in done.err
    assert "--profile" in done.err
