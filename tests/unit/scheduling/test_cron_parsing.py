"""Parsing the ``schedule`` and ``timeZone`` fields: what is accepted, and what each error says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sundial.scheduling import cron, errors

START = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)  # a Thursday


@pytest.mark.parametrize(
    ("macro", "first_fire"),
    [
        ("@yearly", datetime(2027, 1, 1, tzinfo=UTC)),
        ("@annually", datetime(2027, 1, 1, tzinfo=UTC)),
        ("@monthly", datetime(2026, 2, 1, tzinfo=UTC)),
        ("@weekly", datetime(2026, 1, 4, tzinfo=UTC)),  # Sunday midnight
        ("@daily", datetime(2026, 1, 2, tzinfo=UTC)),
        ("@midnight", datetime(2026, 1, 2, tzinfo=UTC)),
        ("@hourly", datetime(2026, 1, 1, 1, tzinfo=UTC)),
        ("@HOURLY", datetime(2026, 1, 1, 1, tzinfo=UTC)),
    ],
)
def test_macros_fire_like_their_cron_expansion(macro: str, first_fire: datetime) -> None:
    assert cron.next_fire_after(cron.parse_schedule(macro), START) == first_fire


@pytest.mark.parametrize(
    ("expression", "first_fire"),
    [
        ("*/15 * * * *", datetime(2026, 1, 1, 0, 15, tzinfo=UTC)),
        ("0 9 * * MON-FRI", datetime(2026, 1, 1, 9, tzinfo=UTC)),
        ("0 0 ? * 7", datetime(2026, 1, 4, tzinfo=UTC)),  # 7 and ? as in Vixie cron
        ("0 0 1 feb *", datetime(2026, 2, 1, tzinfo=UTC)),
        ("5,10 3-4 * * *", datetime(2026, 1, 1, 3, 5, tzinfo=UTC)),
        ("  0   12 * * *  ", datetime(2026, 1, 1, 12, tzinfo=UTC)),
    ],
)
def test_five_field_expressions(expression: str, first_fire: datetime) -> None:
    assert cron.next_fire_after(cron.parse_schedule(expression), START) == first_fire


def test_day_of_month_and_day_of_week_are_ored_when_both_restricted() -> None:
    schedule = cron.parse_schedule("0 0 13 * FRI")
    fires = list(
        cron.fire_times(schedule, START, datetime(2026, 1, 31, tzinfo=UTC)),
    )
    assert [fire.day for fire in fires] == [2, 9, 13, 16, 23, 30]


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (
            "61 * * * *",
            "schedule: '61 * * * *' is not a valid cron expression: minute 61 out of range 0-59",
        ),
        (
            "0 24 * * *",
            "schedule: '0 24 * * *' is not a valid cron expression: hour 24 out of range 0-23",
        ),
        (
            "0 0 0 * *",
            "schedule: '0 0 0 * *' is not a valid cron expression: "
            "day-of-month 0 out of range 1-31",
        ),
        (
            "0 0 * 13 *",
            "schedule: '0 0 * 13 *' is not a valid cron expression: month 13 out of range 1-12",
        ),
        (
            "0 0 * * 8",
            "schedule: '0 0 * * 8' is not a valid cron expression: day-of-week 8 out of range 0-7",
        ),
        (
            "0 0 * * FUNDAY",
            "schedule: '0 0 * * FUNDAY' is not a valid cron expression: "
            "day-of-week value 'FUNDAY' is not a number or a known name",
        ),
        (
            "*/0 * * * *",
            "schedule: '*/0 * * * *' is not a valid cron expression: "
            "minute step 0 out of range 1-59",
        ),
        (
            "30-10 * * * *",
            "schedule: '30-10 * * * *' is not a valid cron expression: "
            "minute range 30-10 runs backwards; a range cannot wrap around, so write 30-59,0-10",
        ),
        (
            "0 0 L * *",
            "schedule: '0 0 L * *' is not a valid cron expression: "
            "day-of-month value 'L' uses L, W, # or H, which Sundial does not support "
            "(neither do Vixie cron and Kubernetes CronJob); list the values instead",
        ),
        (
            "? * * * *",
            "schedule: '? * * * *' is not a valid cron expression: minute does not accept '?'",
        ),
        (
            "0 0 * * * *",
            "schedule: '0 0 * * * *' is not a valid cron expression: it has 6 fields, expected 5 "
            "(seconds and years fields are not supported)",
        ),
        (
            "0 0 0 * * * 2026",
            "schedule: '0 0 0 * * * 2026' is not a valid cron expression: it has 7 fields, "
            "expected 5 (seconds and years fields are not supported)",
        ),
        (
            "0 0 *",
            "schedule: '0 0 *' is not a valid cron expression: it has 3 fields, expected 5 "
            "(minute hour day-of-month month day-of-week)",
        ),
        (
            "@reboot",
            "schedule: '@reboot' is not supported: Sundial schedules are time-based; "
            "create a JobRun for a one-off run",
        ),
        (
            "@fortnightly",
            "schedule: '@fortnightly' is not a known macro; use one of @yearly, @annually, "
            "@monthly, @weekly, @daily, @midnight, @hourly or @every <duration>",
        ),
        ("", "schedule: '' is empty; give a 5-field cron expression"),
        (
            "@every 5 minutes",
            "schedule: '@every 5 minutes' has an invalid @every duration; "
            "write it like 30s, 5m, 1h30m",
        ),
        (
            "@every 99999999999h",
            "schedule: '@every 99999999999h' has an interval of 359999999996400 s;"
            " it must be between 1s and 366d",
        ),
        (
            "@every 0s",
            "schedule: '@every 0s' has an interval of 0:00:00; it must be between 1s and 366d",
        ),
    ],
)
def test_bad_schedule_is_rejected_naming_the_field_and_problem(schedule: str, message: str) -> None:
    with pytest.raises(errors.InvalidScheduleError) as caught:
        cron.parse_schedule(schedule)
    assert str(caught.value) == message
    assert caught.value.field == "schedule"
    assert caught.value.reason == "InvalidSchedule"


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus_Mons", "america/new york", "../../etc/passwd", "+05"]
)
def test_unknown_time_zone_is_rejected_naming_time_zone(zone: str) -> None:
    with pytest.raises(errors.UnknownTimeZoneError) as caught:
        cron.parse_schedule("0 * * * *", zone)
    assert str(caught.value) == f"timeZone: {zone!r} is not a known IANA time zone name"
    assert caught.value.field == "timeZone"
    assert caught.value.reason == "UnknownTimeZone"


def test_every_scheduling_error_is_a_value_error_the_loop_can_catch() -> None:
    for bad in (lambda: cron.parse_schedule("nope"), lambda: cron.parse_time_zone("Nowhere/X")):
        with pytest.raises(errors.SchedulingError):
            bad()


@pytest.mark.parametrize("omitted", [None, ""])
def test_omitted_time_zone_means_utc(omitted: str | None) -> None:
    schedule = cron.parse_schedule("0 9 * * *", omitted)
    assert isinstance(schedule, cron.CronSchedule)
    assert schedule.time_zone.key == "UTC"


def test_time_zone_moves_the_fire_to_local_wall_clock() -> None:
    schedule = cron.parse_schedule("0 9 * * *", "Asia/Kolkata")
    assert cron.next_fire_after(schedule, START) == datetime(2026, 1, 1, 3, 30, tzinfo=UTC)


def test_interval_schedule_is_aligned_to_the_epoch_and_ignores_time_zones() -> None:
    schedule = cron.parse_schedule("@every 1h30m", "America/New_York")
    assert isinstance(schedule, cron.IntervalSchedule)
    assert schedule.every == timedelta(hours=1, minutes=30)
    fires = list(cron.fire_times(schedule, START, START + timedelta(hours=5)))
    assert fires == [
        datetime(2026, 1, 1, 1, 30, tzinfo=UTC),
        datetime(2026, 1, 1, 3, 0, tzinfo=UTC),
        datetime(2026, 1, 1, 4, 30, tzinfo=UTC),
    ]
    assert schedule.previous_fire_at_or_before(fires[1]) == fires[1]
    assert schedule.previous_fire_at_or_before(fires[1] - timedelta(microseconds=1)) == fires[0]


def test_fire_times_is_half_open_after_exclusive_until_inclusive() -> None:
    schedule = cron.parse_schedule("*/30 * * * *")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    fires = list(cron.fire_times(schedule, start, start + timedelta(hours=1)))
    assert fires == [start + timedelta(minutes=30), start + timedelta(hours=1)]


def test_previous_fire_includes_the_instant_itself() -> None:
    schedule = cron.parse_schedule("0 * * * *")
    on_the_hour = datetime(2026, 1, 1, 5, tzinfo=UTC)
    assert schedule.previous_fire_at_or_before(on_the_hour) == on_the_hour
    assert schedule.previous_fire_at_or_before(on_the_hour - timedelta(seconds=1)) == (
        on_the_hour - timedelta(hours=1)
    )


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="must be timezone-aware"):
        cron.next_fire_after(cron.parse_schedule("* * * * *"), datetime(2026, 1, 1))


def test_results_are_utc() -> None:
    schedule = cron.parse_schedule("0 9 * * *", "Europe/Berlin")
    fire = cron.next_fire_after(schedule, START)
    assert fire.tzinfo is UTC
