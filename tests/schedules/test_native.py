"""The files each scheduler reads, checked by that scheduler's own rules.

systemd units are checked with ``systemd-analyze verify`` where it is
installed. ``plutil -lint`` does not exist here, so the launchd agent is
parsed back with plistlib (the format launchd reads). No Task Scheduler schema
(XSD) is available offline either: the task XML is parsed and its structure
checked against the elements and order the Task Scheduler 1.2 schema requires.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from trueup.errors import UsageError
from trueup.schedules.native import NAME, PLIST, TASK_NS, TASK_XML, disabled, native_files
from trueup.schedules.spec import parse_schedule

ARGV = ["/opt/trueup bin/trueup", "apply", "/home/me/setup/work 100%.toml", "--no-input"]


def files_of(platform: str, text: str, zone: str | None = None) -> dict[str, str | None]:
    found = native_files(platform, parse_schedule(text, zone), ARGV, {"TRUEUP_DATA": "/d"})
    return {f.target: f.content if f.link is None else f"-> {f.link}" for f in found}


def test_systemd_gets_a_service_a_persistent_timer_and_the_link_that_enables_it() -> None:
    files = files_of("linux", "weekly:Mon,Thu@09:30", "Europe/Berlin")
    timer = files[f".config/systemd/user/{NAME}.timer"] or ""
    assert "OnCalendar=Mon,Thu *-*-* 09:30:00 Europe/Berlin" in timer
    assert "Persistent=true" in timer
    service = files[f".config/systemd/user/{NAME}.service"] or ""
    # Quoted where a word holds a space; % doubled, as systemd expands it otherwise.
    assert 'ExecStart="/opt/trueup bin/trueup" apply "/home/me/setup/work 100%%.toml"' in service
    assert "Environment=TRUEUP_DATA=/d" in service
    assert files[f".config/systemd/user/timers.target.wants/{NAME}.timer"] == f"-> ../{NAME}.timer"


def systemd_verify(folder: Path) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze verify --user`` on the timer in ``folder`` (a runtime
    folder of its own: a container has no user session)."""
    runtime = folder / "runtime"
    runtime.mkdir(exist_ok=True)
    return subprocess.run(
        ["systemd-analyze", "verify", "--user", str(folder / f"{NAME}.timer")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=folder,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
    )


needs_systemd = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


@needs_systemd
@pytest.mark.parametrize("text", ["daily@06:00", "weekly:Sun@23:59", "every:15m", "every:6h"])
def test_systemd_analyze_verify_accepts_the_units(tmp_path: Path, text: str) -> None:
    tool = tmp_path / "bin" / "trueup"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    argv = [str(tool), "apply", str(tmp_path / "p.toml"), "--no-input"]
    for native in native_files("linux", parse_schedule(text, "UTC"), argv, {}):
        if native.link is None:
            (tmp_path / native.target.rsplit("/", 1)[-1]).write_text(native.content or "")
    done = systemd_verify(tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr


@needs_systemd
def test_systemd_analyze_verify_would_refuse_a_broken_timer(tmp_path: Path) -> None:
    """The check above can fail: the same call refuses a timer it cannot read."""
    (tmp_path / f"{NAME}.timer").write_text("[Timer]\nOnCalendar=someday\n")
    (tmp_path / f"{NAME}.service").write_text("[Service]\nExecStart=/bin/true\n")
    done = systemd_verify(tmp_path)
    assert done.returncode != 0 and "someday" in done.stderr


def test_launchd_gets_a_property_list_it_can_read() -> None:
    plist = plistlib.loads((files_of("macos", "weekly:Sun,Mon@07:05")[PLIST] or "").encode())
    assert plist["Label"] == "dev.trueup.sync"
    assert plist["ProgramArguments"] == ARGV
    assert plist["EnvironmentVariables"] == {"TRUEUP_DATA": "/d"}
    # launchd counts Sunday as 0.
    assert plist["StartCalendarInterval"] == [
        {"Hour": 7, "Minute": 5, "Weekday": 1},
        {"Hour": 7, "Minute": 5, "Weekday": 0},
    ]
    every = plistlib.loads((files_of("macos", "every:30m")[PLIST] or "").encode())
    assert every["StartInterval"] == 1800


def test_task_scheduler_gets_a_task_definition_of_its_schema() -> None:
    text = files_of("windows", "weekly:Tue@12:00")[TASK_XML] or ""
    task = ET.fromstring(text.encode())
    ns = {"t": TASK_NS}
    assert task.tag == f"{{{TASK_NS}}}Task" and task.get("version") == "1.2"
    assert [child.tag.split("}")[1] for child in task] == [
        "RegistrationInfo",
        "Triggers",
        "Principals",
        "Settings",
        "Actions",
    ]
    trigger = task.find("t:Triggers/t:CalendarTrigger", ns)
    assert trigger is not None
    assert trigger.findtext("t:StartBoundary", namespaces=ns) == "2026-01-01T12:00:00"
    assert trigger.find("t:ScheduleByWeek/t:DaysOfWeek/t:Tuesday", ns) is not None
    assert task.findtext("t:Settings/t:StartWhenAvailable", namespaces=ns) == "true"
    exec_ = task.find("t:Actions/t:Exec", ns)
    assert exec_ is not None and exec_.findtext("t:Command", namespaces=ns) == "cmd.exe"
    arguments = exec_.findtext("t:Arguments", namespaces=ns) or ""
    assert 'set "TRUEUP_DATA=/d"' in arguments and '"/opt/trueup bin/trueup" apply' in arguments
    repeat = ET.fromstring((files_of("windows", "every:20m")[TASK_XML] or "").encode())
    assert repeat.findtext("t:Triggers/t:TimeTrigger/t:Repetition/t:Interval", namespaces=ns) == (
        "PT20M"
    )


@pytest.mark.parametrize("platform", ["macos", "windows"])
def test_a_timezone_is_refused_where_the_scheduler_has_none(platform: str) -> None:
    with pytest.raises(UsageError, match="--timezone works with systemd timers only"):
        files_of(platform, "daily@09:00", "Europe/Berlin")


def test_a_job_switched_off_in_its_own_file_is_recognised() -> None:
    plist = plistlib.loads((files_of("macos", "daily@09:00")[PLIST] or "").encode())
    off = plistlib.dumps({**plist, "Disabled": True})
    assert disabled("macos", f"/home/me/{PLIST}", off)
    assert not disabled("macos", f"/home/me/{PLIST}", plistlib.dumps(plist))
    xml = (files_of("windows", "daily@09:00")[TASK_XML] or "").encode()
    switched = xml.replace(
        b"<Enabled>true</Enabled><ExecutionTimeLimit>",
        b"<Enabled>false</Enabled><ExecutionTimeLimit>",
    )
    assert disabled("windows", f"C:/Users/me/{TASK_XML}", switched)
    assert not disabled("windows", f"C:/Users/me/{TASK_XML}", xml)
