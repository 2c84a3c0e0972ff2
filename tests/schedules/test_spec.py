"""What a person may type as a schedule, and what is refused with why."""

from __future__ import annotations

import pytest

from trueup.errors import UsageError
from trueup.schedules.spec import parse_schedule


def test_daily_at_a_time() -> None:
    schedule = parse_schedule("daily@09:30")
    assert (schedule.days, schedule.hour, schedule.minute) == ((), 9, 30)
    assert schedule.every_minutes is None


def test_weekly_on_days_in_week_order_whatever_their_spelling() -> None:
    schedule = parse_schedule("weekly:thu,Mon@18:05", "Europe/Berlin")
    assert schedule.days == ("Mon", "Thu")
    assert (schedule.hour, schedule.minute, schedule.timezone) == (18, 5, "Europe/Berlin")


@pytest.mark.parametrize(("text", "minutes"), [("every:15m", 15), ("every:2h", 120)])
def test_every_so_many_minutes_or_hours(text: str, minutes: int) -> None:
    assert parse_schedule(text).every_minutes == minutes


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("daily", "no time"),
        ("daily@9:30", "is not HH:MM"),
        ("daily@24:00", "is not HH:MM"),
        ("weekly:Funday@10:00", "'Funday' is not a day"),
        ("monthly@10:00", "expected daily@HH:MM"),
        ("every:7m", "must divide an hour"),
        ("every:5h", "must divide a day"),
        ("every:0m", "expected every:N"),
    ],
)
def test_a_schedule_that_cannot_be_read_is_refused_saying_why(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_schedule(text)


def test_a_timezone_must_be_an_iana_name() -> None:
    with pytest.raises(UsageError, match="'Mars/Olympus' is not an IANA timezone"):
        parse_schedule("daily@09:00", "Mars/Olympus")
