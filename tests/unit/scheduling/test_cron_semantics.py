"""Cron semantics users port from Vixie cron and Kubernetes CronJob, and the errors for bad input.

- ``N-N`` is the single value N (croniter alone reads it as the whole cycle);
- a day field starting with ``*`` does not restrict, whatever its step, so day-of-month and
  day-of-week are OR'ed only when neither starts with ``*``;
- an expression that can never fire is refused when parsed, saying why; nothing croniter
  raises leaves the scheduling layer as anything but a ``SchedulingError``;
- odd input (non-strings, ``TZ=`` prefixes, crontab lines, extensions) gets a message saying
  what to write instead.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sundial.scheduling import cron, errors

START = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)  # a Thursday
YEAR_END = datetime(2027, 1, 1, tzinfo=UTC)


def fires(expression: str, start: datetime = START, end: datetime = YEAR_END) -> list[datetime]:
    return list(cron.fire_times(cron.parse_schedule(expression), start, end))


@pytest.mark.parametrize(
    ("equal_ends", "single_value"),
    [
        ("30 2-2 * * *", "30 2 * * *"),
        ("0-0 12 * * *", "0 12 * * *"),
        ("0 12 * 6-6 *", "0 12 * 6 *"),
        ("0 12 * JUN-JUN *", "0 12 * 6 *"),
        ("0 0 1-1 * *", "0 0 1 * *"),
        ("0 0 * * MON-MON", "0 0 * * 1"),
        ("0 0 * * 7-7", "0 0 * * 0"),
        ("0 0 * * SUN-SUN", "0 0 * * 0"),
        ("15 9-9/3 * * *", "15 9 * * *"),
        ("0 0 1-1,15-15 * *", "0 0 1,15 * *"),
    ],
)
def test_a_range_with_equal_ends_is_that_single_value(equal_ends: str, single_value: str) -> None:
    assert fires(equal_ends) == fires(single_value)
    assert len(fires(single_value)) < 400  # far fewer than every hour or every day


def test_equal_ends_ranges_fire_once_per_cycle() -> None:
    assert len(fires("30 2-2 * * *")) == 365
    assert len(fires("0 12 * 6-6 *")) == 30
    assert len(fires("0 0 1-1 * *")) == 12


@pytest.mark.parametrize(
    ("expression", "weekdays", "days_of_month"),
    [
        # A day field that starts with `*` does not restrict: only the other field counts.
        ("0 0 */1 * 1", {0}, None),
        ("0 0 ? * MON", {0}, None),
        ("0 0 13 * */1", None, {13}),
        ("0 0 13 * ?", None, {13}),
        # Vixie cron: `*/2` still starts with `*`, so the fields are AND'ed (odd-day Mondays).
        ("0 0 */2 * 1", {0}, {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}),
    ],
)
def test_a_day_field_starting_with_a_star_does_not_restrict(
    expression: str, weekdays: set[int] | None, days_of_month: set[int] | None
) -> None:
    found = fires(expression)
    assert found
    for fire in found:
        assert weekdays is None or fire.weekday() in weekdays
        assert days_of_month is None or fire.day in days_of_month
    if weekdays == {0} and days_of_month is None:
        assert len(found) == 52  # every Monday of 2026, and nothing else


def test_both_day_fields_restricted_are_ored_even_when_one_covers_every_day() -> None:
    # `1-31` does not start with `*`: Vixie cron and robfig/cron OR it with Monday: daily.
    assert len(fires("0 0 1-31 * 1")) == 365
    assert len(fires("0 0 1-31/1 * 1")) == 365
    # Both restricted and neither full: the 13th or any Friday.
    january = fires("0 0 13 * FRI", end=datetime(2026, 2, 1, tzinfo=UTC))
    assert [fire.day for fire in january] == [2, 9, 13, 16, 23, 30]


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("0 0 30 2 *", "February has no day 30"),
        ("0 0 31 2 *", "February has no day 31"),
        ("0 0 31 4,6,9,11 *", "April, June, September and November have no day 31"),
        ("0 0 31 2,4 *", "February and April have no day 31"),
        ("0 0 30,31 FEB *", "February has no day 30 or 31"),
        ("0 0 30-31 2 */2", "February has no day 30 or 31"),
        ("0 0 31 APR-APR ?", "April has no day 31"),
    ],
)
def test_a_schedule_that_can_never_fire_is_refused_saying_why(expression: str, why: str) -> None:
    with pytest.raises(errors.InvalidScheduleError) as caught:
        cron.parse_schedule(expression)
    assert str(caught.value) == (
        f"schedule: {expression!r} never fires: {why}; change the day-of-month or the month field"
    )
    assert caught.value.field == "schedule"


@pytest.mark.parametrize(
    ("expression", "first_fire"),
    [
        # February 29 exists, in leap years.
        ("0 0 29 2 *", datetime(2028, 2, 29, tzinfo=UTC)),
        # February 29 on a Sunday (`*/7` is Sunday and starts with `*`: AND): 2032.
        ("0 0 29 2 */7", datetime(2032, 2, 29, tzinfo=UTC)),
        # Both restricted: OR'ed, so the Mondays of February fire although the 30th never does.
        ("0 0 30 2 1", datetime(2026, 2, 2, tzinfo=UTC)),
        ("0 0 31 4 MON-FRI", datetime(2026, 4, 1, tzinfo=UTC)),
    ],
)
def test_rare_but_possible_schedules_are_accepted(expression: str, first_fire: datetime) -> None:
    assert cron.next_fire_after(cron.parse_schedule(expression), START) == first_fire


@pytest.mark.parametrize(
    ("expression", "call"),
    [
        ("59 23 31 12 *", lambda s: s.next_fire_after(datetime(9999, 12, 31, 23, 59, tzinfo=UTC))),
        ("0 0 1 1 *", lambda s: s.previous_fire_at_or_before(datetime(1, 1, 1, tzinfo=UTC))),
        ("0 0 29 2 *", lambda s: s.next_fire_after(datetime(9996, 3, 1, tzinfo=UTC))),
        ("@every 7h", lambda s: s.next_fire_after(datetime(9999, 12, 31, 23, tzinfo=UTC))),
        ("@every 7h", lambda s: s.previous_fire_at_or_before(datetime(1, 1, 1, tzinfo=UTC))),
    ],
)
def test_the_edge_of_the_calendar_is_a_scheduling_error_not_a_croniter_one(
    expression: str, call: object
) -> None:
    schedule = cron.parse_schedule(expression)
    with pytest.raises(errors.InvalidScheduleError) as caught:
        call(schedule)  # type: ignore[operator]
    assert "has no fire time" in str(caught.value)
    assert caught.value.field == "schedule"


@pytest.mark.parametrize("value", [["0 * * * *"], {"cron": "0 * * * *"}, 5, None, b"0 * * * *"])
def test_a_schedule_that_is_not_a_string_is_a_scheduling_error(value: object) -> None:
    with pytest.raises(errors.InvalidScheduleError) as caught:
        cron.parse_schedule(value)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"schedule: {value!r} is not a string; give a 5-field cron expression"
    )


@pytest.mark.parametrize("value", [["UTC"], {"zone": "UTC"}, 5])
def test_a_time_zone_that_is_not_a_string_is_a_scheduling_error(value: object) -> None:
    with pytest.raises(errors.UnknownTimeZoneError) as caught:
        cron.parse_schedule("0 * * * *", value)  # type: ignore[arg-type]
    assert str(caught.value) == f"timeZone: {value!r} is not a string; give an IANA name"


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        (
            "TZ=Europe/Berlin 0 * * * *",
            "sets the time zone with TZ=, which Sundial does not accept (nor does Kubernetes "
            "CronJob); put 'Europe/Berlin' in the timeZone field and write the schedule as "
            "'0 * * * *'",
        ),
        (
            "CRON_TZ=America/New_York 30 9 * * MON-FRI",
            "sets the time zone with CRON_TZ=, which Sundial does not accept (nor does "
            "Kubernetes CronJob); put 'America/New_York' in the timeZone field and write the "
            "schedule as '30 9 * * MON-FRI'",
        ),
        (
            "cron_tz=UTC",
            "sets the time zone with CRON_TZ=, which Sundial does not accept (nor does "
            "Kubernetes CronJob); put 'UTC' in the timeZone field",
        ),
        (
            "0 * * * * /usr/local/bin/backup --all",
            "is not a valid cron expression: it has 7 fields, expected 5 (the schedule holds "
            "only the time fields: a crontab line's command goes in the job's handler or "
            "template, not here)",
        ),
        (
            "0 0 * * * root run-parts",
            "is not a valid cron expression: it has 7 fields, expected 5 (the schedule holds "
            "only the time fields: a crontab line's command goes in the job's handler or "
            "template, not here)",
        ),
        (
            "0 0 12 * * ?",
            "is not a valid cron expression: it has 6 fields, expected 5 "
            "(seconds and years fields are not supported)",
        ),
        ("@daily 0", "has text after @daily; a macro stands alone (write just '@daily')"),
        (
            "0 0 * * 5#3",
            "is not a valid cron expression: day-of-week value '5#3' uses L, W, # or H, which "
            "Sundial does not support (neither do Vixie cron and Kubernetes CronJob); "
            "list the values instead",
        ),
        (
            "H/15 * * * *",
            "is not a valid cron expression: minute value 'H' uses L, W, # or H, which Sundial "
            "does not support (neither do Vixie cron and Kubernetes CronJob); "
            "list the values instead",
        ),
        (
            "0 0 15W * *",
            "is not a valid cron expression: day-of-month value '15W' uses L, W, # or H, which "
            "Sundial does not support (neither do Vixie cron and Kubernetes CronJob); "
            "list the values instead",
        ),
        (
            "0 0 * * SAT-SUN",
            "is not a valid cron expression: day-of-week range SAT-SUN runs backwards; "
            "Sunday is also 7, so write 6-7",
        ),
        (
            "0 22-2 * * *",
            "is not a valid cron expression: hour range 22-2 runs backwards; a range cannot "
            "wrap around, so write 22-23,0-2",
        ),
    ],
)
def test_wrong_input_gets_a_hint_that_fixes_it(schedule: str, problem: str) -> None:
    with pytest.raises(errors.InvalidScheduleError) as caught:
        cron.parse_schedule(schedule)
    assert str(caught.value) == f"schedule: {schedule!r} {problem}"


def test_the_hinted_fixes_are_accepted() -> None:
    assert cron.parse_schedule("0 * * * *", "Europe/Berlin")
    weekend = fires("0 0 * * 6-7", end=START + timedelta(days=7))
    assert [fire.strftime("%a") for fire in weekend] == ["Sat", "Sun"]
    assert len(fires("0 22-23,0-2 * * *", end=START + timedelta(days=1))) == 5
