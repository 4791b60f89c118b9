"""Several schedules and exclusions (``scheduling.union``), held to a brute-force oracle: the
fire times of a union are the sorted set of each part's own fire times (each part is the
oracle-tested single schedule), less those whose wall time in the job's zone an exclusion
matches, where a date matches its whole day and a cron exclusion the minutes its fields name,
checked here field by field without cron_fields. Zones with 30- and 60-minute shifts and a
negative DST are among them."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.scheduling import cron, errors, fire_preview, union

ZONES = ["UTC", "Europe/Paris", "Australia/Lord_Howe", "Europe/Dublin", "America/New_York"]
SCHEDULES = [
    "0 9 * * 1-5",
    "30 12 * * 6,0",
    "0 */6 * * *",
    "15,45 1-3 * * *",
    "@daily",
    "@every 7h",
    "0 9 * * *",
    "30 2 * * *",
]
EXCLUSIONS = [
    "12-25",
    "01-01",
    "2026-11-01",
    "* * * * 0",
    "* 0-6 * * *",
    "0 9 * * 3",
    "* * 1 * *",
    "* 12-13 * * 6",
]


def _range(text: str, low: int, high: int) -> set[int]:
    """The values of one simple field as the oracle reads it: *, N, N-M, */S, lists."""
    values: set[int] = set()
    for part in text.split(","):
        if part == "*":
            values |= set(range(low, high + 1))
        elif part.startswith("*/"):
            values |= set(range(low, high + 1, int(part[2:])))
        elif "-" in part:
            first, last = part.split("-")
            values |= set(range(int(first), int(last) + 1))
        else:
            values.add(int(part))
    return values


def excluded(text: str, wall: datetime) -> bool:
    if text.count("-") == 1 and " " not in text:  # MM-DD
        month, day = text.split("-")
        return (wall.month, wall.day) == (int(month), int(day))
    if " " not in text:  # YYYY-MM-DD
        return wall.strftime("%Y-%m-%d") == text
    minute, hour, day, month, weekday = text.split()
    return (
        wall.minute in _range(minute, 0, 59)
        and wall.hour in _range(hour, 0, 23)
        and wall.day in _range(day, 1, 31)
        and wall.month in _range(month, 1, 12)
        and (wall.isoweekday() % 7) in _range(weekday, 0, 6)
    )


def oracle(
    schedules: list[str], exclusions: list[str], zone: str, start: datetime, end: datetime
) -> list[datetime]:
    fires: set[datetime] = set()
    for text in schedules:
        part = cron.parse_schedule(text, zone)
        fires |= set(cron.fire_times(part, start, end))
    local = ZoneInfo(zone)
    return sorted(
        fire
        for fire in fires
        if not any(excluded(e, fire.astimezone(local).replace(tzinfo=None)) for e in exclusions)
    )


@settings(max_examples=150, deadline=None)
@given(
    schedules=st.lists(st.sampled_from(SCHEDULES), min_size=1, max_size=3, unique=True),
    exclusions=st.lists(st.sampled_from(EXCLUSIONS), max_size=3, unique=True),
    zone=st.sampled_from(ZONES),
    start=st.datetimes(
        min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 1), timezones=st.just(UTC)
    ),
)
def test_the_union_fires_what_the_oracle_says(
    schedules: list[str], exclusions: list[str], zone: str, start: datetime
) -> None:
    end = start + timedelta(days=9)
    schedule = union.parse(schedules[0], schedules[1:], exclusions, zone)
    expected = oracle(schedules, exclusions, zone, start, end)
    try:
        fires = list(cron.fire_times(schedule, start, end))
    except errors.InvalidScheduleError as error:
        # Refused only when the exclusions cover every fire (15,45 1-3 * * * in 00:00-06:59).
        assert "narrow the exclusions" in str(error)
        assert oracle(schedules, exclusions, zone, start, start + timedelta(days=400)) == []
        return
    assert fires == expected
    # Backwards agrees: the last fire at or before each expected fire is that fire.
    for fire in expected[:5]:
        assert schedule.previous_fire_at_or_before(fire) == fire
        assert schedule.previous_fire_at_or_before(fire - timedelta(microseconds=1)) < fire


@pytest.mark.parametrize(
    ("zone", "start"),
    [
        ("Australia/Lord_Howe", "2026-10-03T00:00:00+00:00"),  # 30-minute spring-forward
        ("Pacific/Chatham", "2026-04-04T00:00:00+00:00"),  # fall-back, 45-minute offset
        ("Europe/Dublin", "2026-10-24T00:00:00+00:00"),  # negative DST in the tz database
        ("Africa/Casablanca", "2026-02-14T00:00:00+00:00"),  # DST suspended in Ramadan
    ],
)
def test_each_part_keeps_its_dst_rules_across_a_change(zone: str, start: str) -> None:
    begin = datetime.fromisoformat(start)
    end = begin + timedelta(days=5)
    for policy in (cron.DstPolicy("AtTransition", "First"), cron.DstPolicy("Skip", "Both")):
        schedule = union.parse("30 2 * * *", ["15 1 * * *"], ["* * * * 6"], zone, policy)
        parts = [cron.parse_schedule(text, zone, policy) for text in ("30 2 * * *", "15 1 * * *")]
        raw = sorted(set(itertools.chain(*(cron.fire_times(p, begin, end) for p in parts))))
        local = ZoneInfo(zone)
        expected = [f for f in raw if f.astimezone(local).isoweekday() != 6]
        assert list(cron.fire_times(schedule, begin, end)) == expected


def test_one_run_per_instant_however_many_schedules_name_it() -> None:
    schedule = union.parse("0 9 * * *", ["0 9 * * 1-5", "0 */3 * * *"])
    start = datetime(2026, 12, 7, tzinfo=UTC)  # a Monday
    fires = list(cron.fire_times(schedule, start, start + timedelta(days=1)))
    assert fires == [start + timedelta(hours=h) for h in (3, 6, 9, 12, 15, 18, 21, 24)]


def test_a_whole_excluded_day_is_skipped_by_the_day() -> None:
    """A minutely schedule off on Sundays: the fire after Saturday 23:59 is Monday 00:00."""
    schedule = union.parse("* * * * *", exclusions=["* * * * 0"], time_zone="Europe/Paris")
    saturday = datetime(2026, 12, 5, 23, 59, tzinfo=ZoneInfo("Europe/Paris"))
    assert schedule.next_fire_after(saturday) == datetime(
        2026, 12, 7, 0, 0, tzinfo=ZoneInfo("Europe/Paris")
    )
    monday = datetime(2026, 12, 7, 0, 0, tzinfo=ZoneInfo("Europe/Paris"))
    assert schedule.previous_fire_at_or_before(monday - timedelta(seconds=1)) == saturday


def test_a_plain_schedule_is_unchanged() -> None:
    assert union.parse("0 9 * * *") is cron.parse_schedule("0 9 * * *")
    assert union.parse_stored("0 9 * * *", "UTC") is cron.parse_schedule("0 9 * * *", "UTC")


def test_the_stored_text_reads_back_as_the_same_schedule() -> None:
    text = union.stored_text("0 9 * * 1-5", [" 0 12 * * 6 "], ["12-25", "* 0-6 * * *"])
    assert text == "0 9 * * 1-5\n0 12 * * 6\nexcept 12-25\nexcept * 0-6 * * *"
    stored = union.parse_stored(text, "Europe/Paris")
    direct = union.parse("0 9 * * 1-5", ["0 12 * * 6"], ["12-25", "* 0-6 * * *"], "Europe/Paris")
    start = datetime(2026, 12, 1, tzinfo=UTC)
    end = start + timedelta(days=40)
    assert list(cron.fire_times(stored, start, end)) == list(cron.fire_times(direct, start, end))


@pytest.mark.parametrize(
    ("additional", "exclusions", "says"),
    [
        (["61 * * * *"], [], "additionalSchedules[0]: '61 * * * *' is not a valid cron"),
        (["@every 1h", "@weird"], [], "additionalSchedules[1]: '@weird' is not a known macro"),
        ([], ["13-45"], "exclusions[0]: '13-45' is not a calendar date; write MM-DD"),
        ([], ["12-25", "2026-02-30"], "exclusions[1]: '2026-02-30' is not a calendar date"),
        ([], ["lunch"], "exclusions[0]: 'lunch' is neither a date (MM-DD, YYYY-MM-DD) nor a"),
        ([], ["* * * 13 *"], "month 13 out of range 1-12"),
    ],
)
def test_bad_entries_name_their_field(
    additional: list[str], exclusions: list[str], says: str
) -> None:
    with pytest.raises(errors.InvalidScheduleError) as raised:
        union.parse("0 9 * * *", additional, exclusions)
    assert says in str(raised.value)
    assert raised.value.reason == "InvalidSchedule"


def test_exclusions_that_leave_nothing_say_so() -> None:
    schedule = union.parse("0 9 * * *", exclusions=["* * * * *"])
    with pytest.raises(errors.InvalidScheduleError, match="narrow the exclusions"):
        schedule.next_fire_after(datetime(2026, 12, 1, tzinfo=UTC))


def test_the_preview_names_what_an_exclusion_dropped() -> None:
    schedule = union.parse("0 9 * * *", exclusions=["12-25"], time_zone="Europe/Paris")
    fires = fire_preview.preview(schedule, datetime(2026, 12, 24, 12, tzinfo=UTC), 2)
    assert [f.fire_time.astimezone(schedule.time_zone).day for f in fires] == [26, 27]  # type: ignore[attr-defined]
    assert fires[0].note == "after 2026-12-25 09:00: not fired (exclusions)"
    assert fires[1].note is None


def test_a_short_interval_off_most_of_the_day_still_fires() -> None:
    """Excluded stretches are skipped whole (an hour, a minute), not fire by fire: 82,800
    excluded seconds a day would pass any bound on tries."""
    schedule = union.parse("@every 1s", exclusions=["* 0-22 * * *"], time_zone="Europe/Paris")
    paris = ZoneInfo("Europe/Paris")
    morning = datetime(2026, 12, 7, 8, 0, tzinfo=paris)
    assert schedule.next_fire_after(morning) == datetime(2026, 12, 7, 23, 0, tzinfo=paris)
    late = datetime(2026, 12, 8, 9, 0, tzinfo=paris)
    last = datetime(2026, 12, 7, 23, 59, 59, tzinfo=paris)
    assert schedule.previous_fire_at_or_before(late) == last
    minutes = union.parse("@every 1s", exclusions=["0-58 * * * *"])
    start = datetime(2026, 12, 7, 8, 0, 30, tzinfo=UTC)
    assert minutes.next_fire_after(start) == datetime(2026, 12, 7, 8, 59, tzinfo=UTC)


def test_a_never_firing_union_names_its_exclusions_and_stays_short() -> None:
    texts = ["* * * * *"] + [f"{i:02d}-{i:02d}" for i in range(1, 13)]
    schedule = union.parse("0 9 * * *", ["0 10 * * *"] * 9, texts)
    with pytest.raises(errors.InvalidScheduleError) as raised:
        schedule.next_fire_after(datetime(2026, 12, 1, tzinfo=UTC))
    message = str(raised.value)
    assert message.startswith("exclusions: ['* * * * *', '01-01',")
    assert "leave the job's 10 schedules no fire time after" in message
    assert len(message) < 1000
