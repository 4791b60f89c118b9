"""DST, as docs/design.md ("Scheduling") states it, in three zones with different kinds of shift.

- in the repeated (fall-back) hour a wall-clock time fires once, at its first occurrence;
- a wall-clock time skipped by spring-forward fires at the first valid instant after it.

2026 transitions used here:
America/New_York   spring 03-08 02:00 EST -> 03:00 EDT    fall 11-01 02:00 EDT -> 01:00 EST
Europe/Berlin      spring 03-29 02:00 CET -> 03:00 CEST   fall 10-25 03:00 CEST -> 02:00 CET
Australia/Lord_Howe (a 30-minute shift)
                   fall 04-05 02:00 +11 -> 01:30 +10:30   spring 10-04 02:00 +10:30 -> 02:30 +11

Besides worked examples, an independent oracle simulates a cron daemon minute by minute in real
time: it fires at a real minute when a wall-clock time the local clock reaches there *for the
first time* matches the expression. Hypothesis checks the implementation against it.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.scheduling import cron

NEW_YORK = "America/New_York"
BERLIN = "Europe/Berlin"
LORD_HOWE = "Australia/Lord_Howe"


def utc(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)  # type: ignore[misc]


def fires_between(expression: str, zone: str, start: datetime, end: datetime) -> list[datetime]:
    return list(cron.fire_times(cron.parse_schedule(expression, zone), start, end))


def local(fires: list[datetime], zone: str) -> list[str]:
    return [fire.astimezone(ZoneInfo(zone)).strftime("%m-%d %H:%M%z") for fire in fires]


# -- worked examples -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "expression", "start", "expected"),
    [
        # Daily at a time inside the gap: fires at the first valid instant after it, once.
        (NEW_YORK, "30 2 * * *", utc(2026, 3, 7, 12), ["03-08 03:00-0400", "03-09 02:30-0400"]),
        (BERLIN, "30 2 * * *", utc(2026, 3, 28, 12), ["03-29 03:00+0200", "03-30 02:30+0200"]),
        (LORD_HOWE, "15 2 * * *", utc(2026, 10, 3, 0), ["10-04 02:30+1100", "10-05 02:15+1100"]),
        # Hourly across the gap: the skipped hour merges into the first instant after it.
        (
            NEW_YORK,
            "0 * * * *",
            utc(2026, 3, 8, 5, 30),
            ["03-08 01:00-0500", "03-08 03:00-0400", "03-08 04:00-0400"],
        ),
        (
            LORD_HOWE,
            "0 * * * *",
            utc(2026, 10, 3, 14, 0),
            ["10-04 01:00+1030", "10-04 02:30+1100", "10-04 03:00+1100"],
        ),
    ],
)
def test_spring_forward_fires_skipped_times_at_the_first_valid_instant(
    zone: str, expression: str, start: datetime, expected: list[str]
) -> None:
    fires = fires_between(expression, zone, start, start + timedelta(days=3))
    assert local(fires, zone)[: len(expected)] == expected


@pytest.mark.parametrize(
    ("zone", "expression", "start", "expected"),
    [
        # Daily at a time inside the repeated hour: once, at the first occurrence.
        (NEW_YORK, "30 1 * * *", utc(2026, 10, 31, 12), ["11-01 01:30-0400", "11-02 01:30-0500"]),
        (BERLIN, "30 2 * * *", utc(2026, 10, 24, 12), ["10-25 02:30+0200", "10-26 02:30+0100"]),
        (LORD_HOWE, "45 1 * * *", utc(2026, 4, 4, 0), ["04-05 01:45+1100", "04-06 01:45+1030"]),
        # Hourly across the repeated hour: the repeated wall time does not fire twice.
        (
            NEW_YORK,
            "0 * * * *",
            utc(2026, 11, 1, 3, 30),
            ["11-01 00:00-0400", "11-01 01:00-0400", "11-01 02:00-0500", "11-01 03:00-0500"],
        ),
        (
            BERLIN,
            "0 * * * *",
            utc(2026, 10, 24, 23, 30),
            ["10-25 02:00+0200", "10-25 03:00+0100", "10-25 04:00+0100"],
        ),
        (
            LORD_HOWE,
            "*/15 * * * *",
            utc(2026, 4, 4, 14, 20),
            [
                "04-05 01:30+1100",
                "04-05 01:45+1100",
                "04-05 02:00+1030",  # 01:30 and 01:45 at +10:30 already fired at +11
                "04-05 02:15+1030",
            ],
        ),
    ],
)
def test_fall_back_fires_a_repeated_wall_time_once_at_its_first_occurrence(
    zone: str, expression: str, start: datetime, expected: list[str]
) -> None:
    fires = fires_between(expression, zone, start, start + timedelta(days=3))
    assert local(fires, zone)[: len(expected)] == expected


def test_next_fire_from_inside_the_second_pass_does_not_go_back_to_the_first() -> None:
    schedule = cron.parse_schedule("30 1 * * *", NEW_YORK)
    inside_second_pass = utc(2026, 11, 1, 6, 15)  # 01:15 EST, after 01:30 EDT already fired
    assert local([cron.next_fire_after(schedule, inside_second_pass)], NEW_YORK) == [
        "11-02 01:30-0500"
    ]


def test_previous_fire_inside_the_second_pass_is_the_first_occurrence() -> None:
    schedule = cron.parse_schedule("30 1 * * *", NEW_YORK)
    at = utc(2026, 11, 1, 6, 45)  # 01:45 EST
    assert schedule.previous_fire_at_or_before(at) == utc(2026, 11, 1, 5, 30)  # 01:30 EDT


def test_previous_fire_of_a_gap_time_is_the_transition_instant() -> None:
    schedule = cron.parse_schedule("30 2 * * *", NEW_YORK)
    transition = utc(2026, 3, 8, 7)  # 03:00 EDT
    assert schedule.previous_fire_at_or_before(transition) == transition
    assert schedule.previous_fire_at_or_before(transition - timedelta(seconds=1)) == utc(
        2026, 3, 7, 7, 30
    )


# -- the oracle --------------------------------------------------------------------------------


def oracle_fires(
    minutes: frozenset[int], hours: frozenset[int], zone: str, start: datetime, end: datetime
) -> list[datetime]:
    """Fires in (start, end] of ``M H * * *`` by minute-by-minute simulation in real time."""
    tz = ZoneInfo(zone)

    def wall(instant: datetime) -> datetime:
        return instant.astimezone(tz).replace(tzinfo=None)

    def matches(wall_time: datetime) -> bool:
        return wall_time.minute in minutes and wall_time.hour in hours

    reached = max(wall(start - timedelta(minutes=m)) for m in range(0, 4 * 60))
    fires = []
    instant = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while instant <= end:
        now_wall = wall(instant)
        newly_reached = now_wall - reached
        if newly_reached > timedelta(0):
            # Every wall minute in (reached, now_wall] is seen for the first time now.
            steps = newly_reached // timedelta(minutes=1)
            if any(matches(now_wall - timedelta(minutes=k)) for k in range(steps)):
                fires.append(instant)
            reached = now_wall
        instant += timedelta(minutes=1)
    return fires


TRANSITIONS = [
    (NEW_YORK, utc(2026, 3, 8, 7)),
    (NEW_YORK, utc(2026, 11, 1, 6)),
    (BERLIN, utc(2026, 3, 29, 1)),
    (BERLIN, utc(2026, 10, 25, 1)),
    (LORD_HOWE, utc(2026, 4, 4, 15)),
    (LORD_HOWE, utc(2026, 10, 3, 15, 30)),
]


@st.composite
def minute_hour_schedules(draw: st.DrawFn) -> tuple[str, frozenset[int], frozenset[int]]:
    minute_choice = draw(
        st.sampled_from(["0", "15", "30", "45", "*/15", "0,30", "10,20,40,50", "5"])
    )
    hour_choice = draw(st.sampled_from(["*", "1", "2", "1,2", "0-3", "*/2", "3"]))
    minutes = frozenset(
        range(0, 60, 15)
        if minute_choice == "*/15"
        else (int(part) for part in minute_choice.split(","))
    )
    if hour_choice == "*":
        hours = frozenset(range(24))
    elif hour_choice == "*/2":
        hours = frozenset(range(0, 24, 2))
    elif hour_choice == "0-3":
        hours = frozenset(range(4))
    else:
        hours = frozenset(int(part) for part in hour_choice.split(","))
    return f"{minute_choice} {hour_choice} * * *", minutes, hours


transitions = st.sampled_from(TRANSITIONS)
offsets_minutes = st.integers(min_value=-20 * 60, max_value=2 * 60)


@settings(max_examples=40, deadline=None)
@given(minute_hour_schedules(), transitions, offsets_minutes)
def test_fires_match_a_minute_by_minute_simulation_of_the_rules(
    schedule: tuple[str, frozenset[int], frozenset[int]],
    transition: tuple[str, datetime],
    offset_minutes: int,
) -> None:
    expression, minutes, hours = schedule
    zone, instant = transition
    start = instant + timedelta(minutes=offset_minutes)
    end = start + timedelta(hours=26)
    assert fires_between(expression, zone, start, end) == oracle_fires(
        minutes, hours, zone, start, end
    )


@settings(max_examples=40, deadline=None)
@given(minute_hour_schedules(), transitions, offsets_minutes)
def test_fire_times_strictly_increase_and_each_wall_time_fires_at_most_once(
    schedule: tuple[str, frozenset[int], frozenset[int]],
    transition: tuple[str, datetime],
    offset_minutes: int,
) -> None:
    expression, _, _ = schedule
    zone, instant = transition
    start = instant + timedelta(minutes=offset_minutes)
    fires = fires_between(expression, zone, start, start + timedelta(hours=30))
    assert all(earlier < later for earlier, later in itertools.pairwise(fires))
    walls = [fire.astimezone(ZoneInfo(zone)).replace(tzinfo=None) for fire in fires]
    assert len(walls) == len(set(walls))
    assert all(fire.tzinfo is UTC for fire in fires)


@settings(max_examples=40, deadline=None)
@given(minute_hour_schedules(), transitions)
def test_no_wall_time_skipped_by_spring_forward_is_lost(
    schedule: tuple[str, frozenset[int], frozenset[int]], transition: tuple[str, datetime]
) -> None:
    expression, minutes, hours = schedule
    zone, instant = transition
    tz = ZoneInfo(zone)
    start, end = instant - timedelta(hours=6), instant + timedelta(hours=6)
    fires = fires_between(expression, zone, start, end)
    fire_walls = [fire.astimezone(tz).replace(tzinfo=None) for fire in fires]
    # Every matching wall minute in the window, whether it exists on the clock or not.
    wall = start.astimezone(tz).replace(tzinfo=None) + timedelta(hours=1)
    last = end.astimezone(tz).replace(tzinfo=None) - timedelta(hours=1)
    while wall <= last:
        if wall.minute in minutes and wall.hour in hours:
            # It fires at this wall time or, if the clock skipped it, at the first wall time
            # that exists after it (the reading right after the jump).
            later = [reading for reading in fire_walls if reading >= wall]
            assert later, f"{wall} never fired"
            assert later[0] == first_existing_wall_at_or_after(wall, tz)
        wall += timedelta(minutes=1)


def first_existing_wall_at_or_after(wall: datetime, tz: ZoneInfo) -> datetime:
    def exists(candidate: datetime) -> bool:
        round_trip = candidate.replace(tzinfo=tz).astimezone(UTC).astimezone(tz)
        return round_trip.replace(tzinfo=None) == candidate

    while not exists(wall):
        wall += timedelta(minutes=1)
    return wall


@settings(max_examples=30, deadline=None)
@given(minute_hour_schedules(), transitions, offsets_minutes)
def test_previous_and_next_fire_agree(
    schedule: tuple[str, frozenset[int], frozenset[int]],
    transition: tuple[str, datetime],
    offset_minutes: int,
) -> None:
    expression, _, _ = schedule
    zone, instant = transition
    parsed = cron.parse_schedule(expression, zone)
    at = instant + timedelta(minutes=offset_minutes, seconds=7)
    previous = parsed.previous_fire_at_or_before(at)
    assert previous <= at
    assert parsed.next_fire_after(previous) > at
