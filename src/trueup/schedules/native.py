"""What each platform's scheduler reads, as files under the user's home.

- Linux: a systemd user service and timer (``Persistent=true``: a run missed
  while the machine slept happens when it wakes), enabled by the same link
  ``systemctl --user enable`` makes in ``timers.target.wants``;
- macOS: a launchd user agent (a property list);
- Windows: a Task Scheduler task definition (XML), registered with ``schtasks``.

Only systemd takes an IANA timezone (``OnCalendar=... Europe/Berlin``);
launchd and Task Scheduler run on the machine's local time, so a timezone
for them is refused rather than ignored.
"""

from __future__ import annotations

import plistlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from trueup.errors import UsageError
from trueup.schedules.spec import DAYS, Schedule

PLATFORMS = ("linux", "macos", "windows")
NAME = "trueup-sync"
LABEL = "dev.trueup.sync"
UNIT_DIR = ".config/systemd/user"
#: Where ``systemctl --user enable`` links a timer: the link is what "enabled" is.
ENABLED_LINK = f"{UNIT_DIR}/timers.target.wants/{NAME}.timer"
PLIST = f"Library/LaunchAgents/{LABEL}.plist"
TASK_XML = f"AppData/Local/trueup/{NAME}.xml"
TASK_NS = "http://schemas.microsoft.com/windows/2004/02/mit/task"


@dataclass(frozen=True)
class NativeFile:
    """One file (or, with ``link``, symlink) the scheduler reads, relative to the home."""

    target: str
    content: str | None = None
    link: str | None = None


def native_files(
    platform: str, schedule: Schedule, argv: Sequence[str], env: Mapping[str, str]
) -> list[NativeFile]:
    """The files that make ``schedule`` run ``argv`` (with ``env``) on ``platform``."""
    if schedule.timezone is not None and platform != "linux":
        raise UsageError(
            f"--timezone works with systemd timers only; on {platform} the schedule "
            "runs on the machine's local time: drop --timezone"
        )
    if platform == "linux":
        return [
            NativeFile(f"{UNIT_DIR}/{NAME}.service", _service(argv, env)),
            NativeFile(f"{UNIT_DIR}/{NAME}.timer", _timer(schedule)),
            NativeFile(ENABLED_LINK, link=f"../{NAME}.timer"),
        ]
    if platform == "macos":
        return [NativeFile(PLIST, _plist(schedule, argv, env))]
    return [NativeFile(TASK_XML, _task(schedule, argv, env))]


def native_paths(platform: str) -> list[str]:
    """The file the scheduler is pointed at (activation's argument), relative to the home."""
    return [{"linux": f"{UNIT_DIR}/{NAME}.timer", "macos": PLIST}.get(platform, TASK_XML)]


def activation(platform: str, files: Sequence[str]) -> list[list[str]]:
    """The commands that make a running scheduler read the files (best effort)."""
    if platform == "linux":
        return [
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "restart", f"{NAME}.timer"],
        ]
    if platform == "macos":
        return [["launchctl", "unload", files[0]], ["launchctl", "load", "-w", files[0]]]
    return [["schtasks", "/Create", "/TN", NAME, "/XML", files[0], "/F"]]


def deactivation(platform: str, files: Sequence[str]) -> list[list[str]]:
    if platform == "linux":
        return [
            ["systemctl", "--user", "stop", f"{NAME}.timer"],
            ["systemctl", "--user", "daemon-reload"],
        ]
    if platform == "macos":
        return [["launchctl", "unload", files[0]]]
    return [["schtasks", "/Delete", "/TN", NAME, "/F"]]


def disabled(platform: str, path: str, live: bytes) -> bool:
    """Whether ``live``, found at ``path``, is a schedule switched off by hand."""
    if platform == "macos" and path.endswith(PLIST):
        try:
            return bool(plistlib.loads(live).get("Disabled"))
        except Exception:  # not a property list at all: edited, not disabled
            return False
    if platform == "windows" and path.endswith(TASK_XML):
        settings = re.search(rb"<Settings>.*?</Settings>", live, re.S)
        return settings is not None and b"<Enabled>false</Enabled>" in settings.group(0)
    return False


# -- systemd ------------------------------------------------------------------
def _service(argv: Sequence[str], env: Mapping[str, str]) -> str:
    lines = [
        "[Unit]",
        "Description=trueup: make this machine match its declaration",
        "",
        "[Service]",
        "Type=oneshot",
        *(f"Environment={_systemd_word(f'{k}={v}')}" for k, v in sorted(env.items())),
        "ExecStart=" + " ".join(_systemd_word(a) for a in argv),
    ]
    return "\n".join(lines) + "\n"


def _timer(schedule: Schedule) -> str:
    lines = [
        "[Unit]",
        f"Description=trueup: run {NAME}.service {schedule.text}",
        "",
        "[Timer]",
        f"OnCalendar={_on_calendar(schedule)}",
        "Persistent=true",
        f"Unit={NAME}.service",
        "",
        "[Install]",
        "WantedBy=timers.target",
    ]
    return "\n".join(lines) + "\n"


def _on_calendar(schedule: Schedule) -> str:
    zone = f" {schedule.timezone}" if schedule.timezone else ""
    every = schedule.every_minutes
    if every is not None:
        if every < 60:
            return f"*-*-* *:00/{every}:00{zone}"
        return f"*-*-* 00/{every // 60}:00:00{zone}"
    days = ",".join(schedule.days) + " " if schedule.days else ""
    return f"{days}*-*-* {schedule.hour:02d}:{schedule.minute:02d}:00{zone}"


def _systemd_word(word: str) -> str:
    """One argument as systemd reads it: quoted when needed, ``%`` doubled."""
    word = word.replace("%", "%%")
    if re.fullmatch(r"[A-Za-z0-9_./:=@+,-]+", word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


# -- launchd ------------------------------------------------------------------
def _plist(schedule: Schedule, argv: Sequence[str], env: Mapping[str, str]) -> str:
    job: dict[str, object] = {
        "Label": LABEL,
        "ProgramArguments": list(argv),
        "ProcessType": "Background",
        "RunAtLoad": False,
    }
    if env:
        job["EnvironmentVariables"] = dict(env)
    if schedule.every_minutes is not None:
        job["StartInterval"] = schedule.every_minutes * 60
    else:
        at = {"Hour": schedule.hour, "Minute": schedule.minute}
        # launchd counts Sunday as 0, Monday as 1.
        weekdays = [(DAYS.index(d) + 1) % 7 for d in schedule.days]
        job["StartCalendarInterval"] = [{**at, "Weekday": w} for w in weekdays] or [at]
    return plistlib.dumps(job, sort_keys=True).decode("utf-8")


# -- Task Scheduler -------------------------------------------------------------
_WEEKDAY = {
    "Mon": "Monday",
    "Tue": "Tuesday",
    "Wed": "Wednesday",
    "Thu": "Thursday",
    "Fri": "Friday",
    "Sat": "Saturday",
    "Sun": "Sunday",
}


def _task(schedule: Schedule, argv: Sequence[str], env: Mapping[str, str]) -> str:
    start = f"2026-01-01T{schedule.hour:02d}:{schedule.minute:02d}:00"
    if schedule.every_minutes is not None:
        trigger = (
            f"<TimeTrigger><StartBoundary>{start}</StartBoundary><Enabled>true</Enabled>"
            f"<Repetition><Interval>PT{schedule.every_minutes}M</Interval></Repetition>"
            "</TimeTrigger>"
        )
    elif schedule.days:
        days = "".join(f"<{_WEEKDAY[d]} />" for d in schedule.days)
        trigger = (
            f"<CalendarTrigger><StartBoundary>{start}</StartBoundary><Enabled>true</Enabled>"
            f"<ScheduleByWeek><DaysOfWeek>{days}</DaysOfWeek><WeeksInterval>1</WeeksInterval>"
            "</ScheduleByWeek></CalendarTrigger>"
        )
    else:
        trigger = (
            f"<CalendarTrigger><StartBoundary>{start}</StartBoundary><Enabled>true</Enabled>"
            "<ScheduleByDay><DaysInterval>1</DaysInterval></ScheduleByDay></CalendarTrigger>"
        )
    # Task Scheduler has no per-task environment: variables are set through cmd's `set`.
    command, arguments = argv[0], " ".join(_windows_word(a) for a in argv[1:])
    if env:
        sets = " && ".join(f'set "{k}={v}"' for k, v in sorted(env.items()))
        arguments = f"/d /c {sets} && {_windows_word(command)} {arguments}"
        command = "cmd.exe"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<Task version="1.2" xmlns="{TASK_NS}">\n'
        "  <RegistrationInfo><Description>trueup: make this machine match its declaration"
        f"</Description><URI>\\{NAME}</URI></RegistrationInfo>\n"
        f"  <Triggers>{trigger}</Triggers>\n"
        '  <Principals><Principal id="Author"><LogonType>InteractiveToken</LogonType>'
        "<RunLevel>LeastPrivilege</RunLevel></Principal></Principals>\n"
        "  <Settings><MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>"
        "<StartWhenAvailable>true</StartWhenAvailable><Enabled>true</Enabled>"
        "<ExecutionTimeLimit>PT1H</ExecutionTimeLimit></Settings>\n"
        f'  <Actions Context="Author"><Exec><Command>{escape(command)}</Command>'
        f"<Arguments>{escape(arguments)}</Arguments></Exec></Actions>\n"
        "</Task>\n"
    )


def _windows_word(word: str) -> str:
    return f'"{word}"' if not word or re.search(r'[\s"&|<>^]', word) else word
