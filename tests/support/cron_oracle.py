"""An independent cron oracle: the rules of Vixie cron and Sundial's DST rule, by brute force.

Nothing here imports Sundial. It is written from the rules, not from ``sundial.scheduling.cron``:

Matching (Vixie cron, as ``man 5 crontab`` and its source state it):
- five fields; each is a comma list of ``*``, ``N``, ``N-M`` and ``X/S`` where ``X`` is ``*``
  (the whole field), ``N-M`` or ``N`` (``N`` to the end of the field, as robfig/cron reads it);
  month and weekday names; day-of-week 7 is Sunday; ``?`` is ``*`` in the day fields;
- a day matches when the day-of-month and day-of-week fields both match, except when both
  are restricted (neither *starts* with ``*``), in which case either one is enough.

Time (docs/design.md, Scheduling) is simulated as a daemon that wakes at every UTC minute, reads the
zone's wall clock, and fires once if any wall-clock minute it sees *for the first time* matches:
- after a fall-back the clock shows minutes it has shown before, so they do not fire again;
- at a spring-forward the clock jumps, and every skipped minute is seen for the first time at
  the instant of the jump, so they fire there, together, once.

``fires_between`` also takes a DST policy, as a ScheduledJob's ``dstPolicy`` states it: minutes
the clock jumps over fire at the jump (``AtTransition``) or not at all (``Skip``); a minute the
clock shows twice fires at its first showing, its second, or both. Whether a minute will be
shown again is read off the same minute-by-minute readings, looking ahead.

The daemon needs to know the latest wall minute it has seen; that is the maximum reading over
the past, and a reading can exceed the present one only within a fall-back's size after it.
No zone tested sets its clock back by more than two hours (the tests check that), so a
``LOOKBACK`` of four hours of minute-by-minute readings gives it exactly.

``cronsim`` (PyPI, which follows Debian's cron) is a second opinion on matching: it is fed the
naive wall-clock timeline, where it has no DST rules of its own, and its matches go through the
same daemon as the oracle's.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import cronsim

MINUTE = timedelta(minutes=1)
LOOKBACK = timedelta(hours=4)
#: Every (month, day, weekday) combination, February 29 included, recurs within 40 years.
SEARCH_YEARS = 41

MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
WEEKDAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True)
class Expression:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # Monday is 0, as date.weekday() counts
    days_either: bool

    def day_matches(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        by_date = day.day in self.days
        by_weekday = day.weekday() in self.weekdays
        return (by_date or by_weekday) if self.days_either else (by_date and by_weekday)

    def matches(self, wall: datetime) -> bool:
        return wall.minute in self.minutes and wall.hour in self.hours and self.day_matches(wall)


def parse(text: str) -> Expression:
    text = MACROS.get(text.strip().lower(), text)
    minute, hour, day, month, weekday = text.split()
    weekdays = {(value - 1) % 7 for value in _field(weekday, 0, 6, WEEKDAYS)}  # Sunday 0 -> 6
    return Expression(
        minutes=frozenset(_field(minute, 0, 59, [])),
        hours=frozenset(_field(hour, 0, 23, [])),
        days=frozenset(_field(day, 1, 31, [])),
        months=frozenset(_field(month, 1, 12, MONTHS, first_name=1)),
        weekdays=frozenset(weekdays),
        days_either=not day.startswith(("*", "?")) and not weekday.startswith(("*", "?")),
    )


def _field(text: str, low: int, high: int, names: list[str], first_name: int = 0) -> set[int]:
    def number(token: str) -> int:
        if token.upper() in names:
            return names.index(token.upper()) + first_name
        return int(token)

    values: set[int] = set()
    for item in text.split(","):
        span, _, step = item.partition("/")
        if span in ("*", "?"):
            first, last = low, high
        elif "-" in span:
            first, last = (number(part) for part in span.split("-"))
        else:
            first = number(span)
            last = max(first, high) if step else first  # `7/S` in day-of-week: Sunday
        values.update(range(first, last + 1, int(step or 1)))
    return values


def wall(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None, fold=0)


def _floor_minute(instant: datetime) -> datetime:
    return instant.astimezone(UTC).replace(second=0, microsecond=0)


def latest_wall_seen(zone: ZoneInfo, at: datetime) -> datetime:
    """The latest wall-clock minute the daemon has read at any minute up to ``at``."""
    last = _floor_minute(at)
    steps = int(LOOKBACK / MINUTE)
    return max(wall(last - k * MINUTE, zone) for k in range(steps + 1))


def first_instant_showing(zone: ZoneInfo, wall_minute: datetime) -> datetime:
    """The first UTC minute at which the wall clock reads ``wall_minute`` or later."""
    labelled = wall_minute.replace(tzinfo=UTC)
    nearby = [(labelled + timedelta(hours=k)).astimezone(zone) for k in range(-36, 37)]
    largest = max(reading.utcoffset() or timedelta(0) for reading in nearby)
    instant = labelled - largest - timedelta(hours=3)
    assert wall(instant, zone) < wall_minute
    while wall(instant, zone) < wall_minute:
        instant += MINUTE
    return instant


def _wall_minutes(expression: Expression, start: date, *, forward: bool) -> Iterator[datetime]:
    """Matching wall minutes in date order from ``start``, for ``SEARCH_YEARS`` years."""
    step = timedelta(days=1 if forward else -1)
    times = sorted(itertools.product(expression.hours, expression.minutes), reverse=not forward)
    day = start
    for _ in range(SEARCH_YEARS * 366):
        if expression.day_matches(day):
            for hour, minute in times:
                yield datetime(day.year, day.month, day.day, hour, minute)
        day += step


def next_wall_match(expression: Expression, after: datetime) -> datetime | None:
    return next(
        (w for w in _wall_minutes(expression, after.date(), forward=True) if w > after), None
    )


def previous_wall_match(expression: Expression, at: datetime) -> datetime | None:
    return next((w for w in _wall_minutes(expression, at.date(), forward=False) if w <= at), None)


def never_fires(text: str) -> bool:
    return next_wall_match(parse(text), datetime(2025, 1, 1)) is None


def next_fire(text: str, zone_name: str, after: datetime) -> datetime | None:
    """The daemon's first fire strictly after ``after``, or None if the expression never fires."""
    zone = ZoneInfo(zone_name)
    wall_minute = next_wall_match(parse(text), latest_wall_seen(zone, after))
    return None if wall_minute is None else first_instant_showing(zone, wall_minute)


def previous_fire(text: str, zone_name: str, at: datetime) -> datetime | None:
    """The daemon's last fire at or before ``at``."""
    zone = ZoneInfo(zone_name)
    wall_minute = previous_wall_match(parse(text), latest_wall_seen(zone, at))
    return None if wall_minute is None else first_instant_showing(zone, wall_minute)


def fires_between(
    text: str,
    zone_name: str,
    start: datetime,
    end: datetime,
    *,
    skipped_time: str = "AtTransition",
    repeated_time: str = "First",
) -> list[datetime]:
    """Every daemon fire in ``(start, end]``, by stepping through the minutes once, under the
    DST policy given (the defaults are Sundial's rule without a ``dstPolicy``)."""
    expression = parse(text)
    zone = ZoneInfo(zone_name)
    seen = latest_wall_seen(zone, start)
    first = _floor_minute(start) + MINUTE
    count = (_floor_minute(end) - first) // MINUTE + 1
    readings = [wall(first + k * MINUTE, zone) for k in range(count + int(LOOKBACK / MINUTE))]
    fires = []
    for index in range(max(count, 0)):
        instant, now = first + index * MINUTE, readings[index]
        if now > seen:
            jumped_over = [seen + MINUTE * k for k in range(1, (now - seen) // MINUTE)]
            shown_again = now in readings[index + 1 :]
            fires_now = expression.matches(now) and (
                not shown_again or repeated_time in ("First", "Both")
            )
            fires_in_the_gap = skipped_time == "AtTransition" and any(
                expression.matches(minute) for minute in jumped_over
            )
            if fires_now or fires_in_the_gap:
                fires.append(instant)
            seen = now
        elif expression.matches(now) and repeated_time in ("Second", "Both"):
            fires.append(instant)  # the clock shows this minute again: its second showing
    return fires


def cronsim_next_fire(text: str, zone_name: str, after: datetime) -> datetime | None:
    """The same daemon, with cronsim choosing the matching wall minutes."""
    zone = ZoneInfo(zone_name)
    expression = MACROS.get(text.strip().lower(), text).replace("?", "*")
    try:
        matches = cronsim.CronSim(expression, latest_wall_seen(zone, after))
        wall_minute = next(matches)
    except (cronsim.CronSimError, StopIteration):  # cronsim's "never fires" answers
        return None
    return first_instant_showing(zone, wall_minute)


@functools.cache
def transitions(zone_name: str, first_year: int, last_year: int) -> tuple[datetime, ...]:
    """Every UTC instant in the years at which the zone's offset changes, to the second."""
    zone = ZoneInfo(zone_name)
    found = []
    day = datetime(first_year, 1, 1, tzinfo=UTC)
    end = datetime(last_year + 1, 1, 1, tzinfo=UTC)

    def offset(instant: datetime) -> timedelta | None:
        return instant.astimezone(zone).utcoffset()

    while day < end:
        following = day + timedelta(hours=6)
        if offset(day) != offset(following):
            low, high = day, following
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                if offset(middle) == offset(day):
                    low = middle
                else:
                    high = middle
            found.append(high.replace(microsecond=0))
        day = following
    return tuple(found)
