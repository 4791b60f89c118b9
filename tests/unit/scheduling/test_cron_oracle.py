"""The scheduling layer against an independent oracle and cronsim, over random schedules.

``cron_oracle`` is a brute-force cron daemon written from the rules (see its docstring); cronsim
(PyPI) is a second opinion on which wall-clock minutes match. Both must agree with Sundial on
every generated expression, zone and instant, and on every offset change of 2025-2028 in the
zones below, with no exceptions: the intended differences from other crons (ADR 0002) are in
the DST rule, which the oracle implements as Sundial documents it.

The default run is bounded and derandomized so the unit tier stays fast and reproducible. Set
``SUNDIAL_ORACLE_EXAMPLES`` (for example 5000) for a longer, randomized search.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.scheduling import cron, errors
from support import cron_oracle

ZONES = [
    "UTC",
    "Australia/Lord_Howe",  # 30-minute shift
    "Pacific/Chatham",  # +12:45 / +13:45, transitions at 02:45 and 03:45 local
    "Europe/Dublin",  # negative DST in the tz database: winter is the "DST" period
    "Africa/Casablanca",  # clocks go back for Ramadan, four changes a year
    "America/Sao_Paulo",  # DST abolished in 2019
    "Asia/Kathmandu",  # +05:45
    "America/New_York",
    "Europe/Berlin",
    "America/Santiago",  # southern hemisphere, transitions at local midnight
    "Antarctica/Troll",  # a two-hour shift
]
LONG = os.environ.get("SUNDIAL_ORACLE_EXAMPLES")
EXAMPLES = int(LONG) if LONG else 200
oracle_settings = settings(max_examples=EXAMPLES, deadline=None, derandomize=LONG is None)

TRANSITIONS = [
    (zone, instant) for zone in ZONES for instant in cron_oracle.transitions(zone, 2025, 2028)
]


# -- random expressions ------------------------------------------------------------------------


def field_items(low: int, high: int, names: list[str], first_name: int) -> st.SearchStrategy[str]:
    @st.composite
    def value(draw: st.DrawFn, number: int) -> str:
        index = number - first_name
        if names and 0 <= index < len(names) and draw(st.booleans()):
            name = names[index]
            return draw(st.sampled_from([name, name.lower(), name.title()]))
        return str(number)

    @st.composite
    def span(draw: st.DrawFn) -> str:
        first = draw(st.integers(low, high))
        last = first if draw(st.booleans()) else draw(st.integers(first, high))  # N-N often
        return f"{draw(value(first))}-{draw(value(last))}"

    numbers = st.integers(low, high)
    steps = st.integers(1, min(high, 12)).map(str)
    return st.one_of(
        st.just("*"),
        st.builds(lambda step: f"*/{step}", steps),
        numbers.flatmap(value),
        span(),
        st.builds(lambda spanned, step: f"{spanned}/{step}", span(), steps),
        st.builds(lambda number, step: f"{number}/{step}", numbers.map(str), steps),
    )


def field(
    low: int, high: int, names: list[str] | None = None, first_name: int = 0, day: bool = False
) -> st.SearchStrategy[str]:
    lists = st.lists(field_items(low, high, names or [], first_name), min_size=1, max_size=3)
    joined = lists.map(",".join)
    return st.one_of(joined, st.just("?")) if day else joined


expressions = st.one_of(
    st.builds(
        lambda *fields: " ".join(fields),
        field(0, 59),
        field(0, 23),
        field(1, 31, day=True),
        field(1, 12, cron_oracle.MONTHS, 1),
        field(0, 7, cron_oracle.WEEKDAYS, day=True),
    ),
    # Small fields make sparse and never-firing schedules likely.
    st.builds(
        lambda minute, day, month, weekday: f"{minute} 0 {day} {month} {weekday}",
        st.sampled_from(["0", "*/20"]),
        st.sampled_from(["29", "30", "31", "30,31", "29-31", "*/29", "?", "1-1", "31-31/5"]),
        st.sampled_from(["2", "FEB", "4,6", "2,4,9,11", "4-4", "*", "*/2", "11"]),
        st.sampled_from(["*", "?", "1", "*/7", "0-6", "MON-MON", "7", "*/3"]),
    ),
    st.sampled_from(list(cron_oracle.MACROS)),
)
zones = st.sampled_from(ZONES)
instants = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2028, 12, 31), timezones=st.just(UTC)
)


@st.composite
def near_transitions(draw: st.DrawFn) -> tuple[str, datetime]:
    zone, transition = draw(st.sampled_from(TRANSITIONS))
    offset = draw(
        st.one_of(
            st.integers(-180, 180).map(lambda minutes: timedelta(minutes=minutes)),
            st.integers(-3 * 3600, 3 * 3600).map(lambda seconds: timedelta(seconds=seconds)),
        )
    )
    return zone, transition + offset


def cronsim_reads_it_as_sundial_does(expression: str) -> bool:
    """Whether the expression avoids the two places cronsim reads differently (not Sundial's
    intended differences, cronsim's own):

    - ``N-N/S`` is ``N-max/S`` in cronsim (it cannot tell it from ``N/S``); Vixie cron,
      robfig/cron and Sundial read it as N;
    - ``N/S`` in day-of-week runs up to 7 (Sunday again) in cronsim and up to 6 in robfig/cron
      and Sundial: ``1/3`` is Mon, Thu, Sun in cronsim and Mon, Thu in Kubernetes.
    """
    parts = expression.split()
    if len(parts) != 5:
        return True
    for position, part in enumerate(parts):
        for item in part.split(","):
            spanned, slash, _ = item.partition("/")
            if not slash or spanned.startswith("*"):
                continue
            low, dash, high = spanned.partition("-")
            if (dash and _value(low) == _value(high)) or (not dash and position == 4):
                return False
    return True


def _value(token: str) -> int:
    if token.upper() in cron_oracle.MONTHS:
        return cron_oracle.MONTHS.index(token.upper()) + 1
    if token.upper() in cron_oracle.WEEKDAYS:
        return cron_oracle.WEEKDAYS.index(token.upper())
    return int(token)


# -- the comparisons -----------------------------------------------------------------------------


def check_against_the_oracles(expression: str, zone: str, instant: datetime) -> None:
    expected_next = cron_oracle.next_fire(expression, zone, instant)
    if expected_next is None:
        with pytest.raises(errors.InvalidScheduleError, match="never fires"):
            cron.parse_schedule(expression, zone)
        if cronsim_reads_it_as_sundial_does(expression):
            assert cron_oracle.cronsim_next_fire(expression, zone, instant) is None
        return
    schedule = cron.parse_schedule(expression, zone)
    assert schedule.next_fire_after(instant) == expected_next
    assert schedule.previous_fire_at_or_before(instant) == cron_oracle.previous_fire(
        expression, zone, instant
    )
    if cronsim_reads_it_as_sundial_does(expression):
        assert cron_oracle.cronsim_next_fire(expression, zone, instant) == expected_next


@oracle_settings
@given(expressions, zones, instants)
def test_next_and_previous_fire_agree_with_the_oracle_and_cronsim(
    expression: str, zone: str, instant: datetime
) -> None:
    check_against_the_oracles(expression, zone, instant)


@oracle_settings
@given(expressions, near_transitions())
def test_around_offset_changes_fires_agree_with_the_oracle_and_cronsim(
    expression: str, near: tuple[str, datetime]
) -> None:
    zone, instant = near
    check_against_the_oracles(expression, zone, instant)


# Schedules that fire on every kind of wall-clock minute a transition touches.
TRANSITION_SCHEDULES = ["*/15 * * * *", "0 * * * *", "*/7 * * * *", "30 0-4 * * *"]


@pytest.mark.parametrize(
    "zone", [zone for zone in ZONES if cron_oracle.transitions(zone, 2025, 2028)]
)
def test_every_offset_change_of_2025_to_2028_fires_as_the_oracle_does(zone: str) -> None:
    checked = 0
    for transition in cron_oracle.transitions(zone, 2025, 2028):
        start, end = transition - timedelta(hours=3), transition + timedelta(hours=3)
        for expression in TRANSITION_SCHEDULES:
            schedule = cron.parse_schedule(expression, zone)
            expected = cron_oracle.fires_between(expression, zone, start, end)
            assert list(cron.fire_times(schedule, start, end)) == expected, (
                f"{expression} in {zone} around {transition.isoformat()}"
            )
            checked += 1
    assert checked >= 4 * len(TRANSITION_SCHEDULES)


def test_the_zones_include_every_kind_of_offset_change() -> None:
    counts = {zone: len(cron_oracle.transitions(zone, 2025, 2028)) for zone in ZONES}
    assert counts["UTC"] == counts["Asia/Kathmandu"] == counts["America/Sao_Paulo"] == 0
    assert counts["Africa/Casablanca"] >= 8 and counts["Australia/Lord_Howe"] == 8
    shifts = set()
    for zone, instant in TRANSITIONS:
        before = (instant - timedelta(seconds=1)).astimezone(ZoneInfo(zone))
        after = instant.astimezone(ZoneInfo(zone))
        shifts.add((after.utcoffset() or timedelta(0)) - (before.utcoffset() or timedelta(0)))
    hour = timedelta(hours=1)
    assert {hour / 2, -hour / 2, hour, -hour, 2 * hour, -2 * hour} <= shifts
    # The oracle's daemon remembers the wall clock for LOOKBACK; no shift back is longer.
    assert max(-shift for shift in shifts) < cron_oracle.LOOKBACK
