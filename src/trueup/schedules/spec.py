"""A schedule as a person types it: ``daily@HH:MM``, ``weekly:DAY[,DAY]@HH:MM``,
``every:N[m|h]``, with an optional IANA timezone.

Every scheduler can express exactly these: a repetition that divides an hour
(minutes) or a day (hours) is a calendar event too, so a missed run is caught
up after the machine wakes (systemd's ``Persistent=true``) like a daily one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trueup.errors import UsageError

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_AT = re.compile(r"^(?P<hour>[01]\d|2[0-3]):(?P<minute>[0-5]\d)$")
_EVERY = re.compile(r"^(?P<n>[1-9]\d*)(?P<unit>[mh])$")
FORMS = "daily@HH:MM, weekly:DAY[,DAY]@HH:MM (DAY: Mon..Sun) or every:N[m|h]"


@dataclass(frozen=True)
class Schedule:
    """When the job runs: at a time on some days, or every so many minutes."""

    text: str
    days: tuple[str, ...] = ()  # empty: every day
    hour: int = 0
    minute: int = 0
    every_minutes: int | None = None
    timezone: str | None = None


def parse_schedule(text: str, timezone: str | None = None) -> Schedule:
    """The schedule ``text`` spells, or a ``UsageError`` naming what is wrong with it."""
    spelled = text.strip()
    if timezone is not None:
        _check_zone(timezone)
    if spelled.startswith("every:"):
        return _every(spelled, timezone)
    head, at, time = spelled.partition("@")
    if not at:
        raise UsageError(f"schedule {text!r}: no time; expected {FORMS}")
    found = _AT.match(time)
    if found is None:
        raise UsageError(f"schedule {text!r}: time {time!r} is not HH:MM (00:00 to 23:59)")
    hour, minute = int(found["hour"]), int(found["minute"])
    if head == "daily":
        return Schedule(spelled, (), hour, minute, None, timezone)
    if head.startswith("weekly:"):
        days = tuple(_day(d, text) for d in head.removeprefix("weekly:").split(","))
        ordered = tuple(d for d in DAYS if d in days)
        return Schedule(spelled, ordered, hour, minute, None, timezone)
    raise UsageError(f"schedule {text!r}: expected {FORMS}")


def _every(text: str, timezone: str | None) -> Schedule:
    found = _EVERY.match(text.removeprefix("every:"))
    if found is None:
        raise UsageError(f"schedule {text!r}: expected every:N[m|h], e.g. every:15m or every:2h")
    n = int(found["n"])
    if found["unit"] == "m" and 60 % n:
        raise UsageError(
            f"schedule {text!r}: every N minutes must divide an hour (1, 2, 3, 4, 5, 6, 10, "
            "12, 15, 20, 30 or 60), so runs fall at the same minutes every hour"
        )
    if found["unit"] == "h" and 24 % n:
        raise UsageError(
            f"schedule {text!r}: every N hours must divide a day (1, 2, 3, 4, 6, 8, 12 or 24)"
        )
    minutes = n if found["unit"] == "m" else n * 60
    return Schedule(text, (), 0, 0, minutes, timezone)


def _day(word: str, text: str) -> str:
    day = word.strip().capitalize()
    if day not in DAYS:
        raise UsageError(f"schedule {text!r}: {word!r} is not a day (Mon, Tue, ..., Sun)")
    return day


def _check_zone(name: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(
            f"--timezone {name!r} is not an IANA timezone (e.g. Europe/Berlin, America/New_York)"
        ) from None
