"""When a schedule fires: cron expressions and intervals, in IANA time zones, with explicit DST.

A ``Schedule`` turns into instants (timezone-aware UTC datetimes). ``parse_schedule`` accepts:

- a 5-field cron expression (minute, hour, day-of-month, month, day-of-week; ``*``, ``?``,
  lists, ranges, steps, month and weekday names, 7 = Sunday; day-of-month and day-of-week OR'ed
  when both are restricted, as in Vixie cron and Kubernetes CronJob);
- the macros ``@yearly`` / ``@annually``, ``@monthly``, ``@weekly``, ``@daily`` / ``@midnight``,
  ``@hourly``;
- ``@every <duration>`` (``@every 30s``, ``@every 1h30m``): an interval in absolute time,
  aligned to the Unix epoch, so every leader computes the same fire times; the time zone does
  not apply to it.

Cron fires follow the local wall clock of the schedule's ``timeZone``, and DST is handled as
DESIGN.md section 7 says (see docs/adr/0002-cron-and-dst.md for why croniter is wrapped):

- a wall-clock time repeated by fall-back fires ONCE, at its first occurrence;
- a wall-clock time skipped by spring-forward fires at the first valid instant after it (the
  instant of the transition); several skipped times therefore share one fire.

Matching is done by croniter on a "wall-clock timeline" (local wall times written as if they
were UTC, which has no DST); each matching wall time is then resolved to a real instant by the
two rules above. Fire times strictly increase and every one is a UTC instant.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterError

from sundial.scheduling import errors
from sundial.scheduling.clock import require_aware

MAX_SCHEDULE_LENGTH = 256
MAX_INTERVAL = timedelta(days=366)

MACROS: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_MONTH_NAMES = {
    name: number
    for number, name in enumerate(
        ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
        start=1,
    )
}
_WEEKDAY_NAMES = {
    name: number for number, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])
}


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int]
    allows_question_mark: bool


_FIELDS = (
    _Field("minute", 0, 59, {}, False),
    _Field("hour", 0, 23, {}, False),
    _Field("day-of-month", 1, 31, {}, True),
    _Field("month", 1, 12, _MONTH_NAMES, False),
    _Field("day-of-week", 0, 7, _WEEKDAY_NAMES, True),
)

_ITEM = re.compile(r"^(?P<range>\*|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:/(?P<step>[0-9]+))?$")
_DURATION = re.compile(r"^(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?(?:(?P<s>[0-9]+)s)?$")


class Schedule(Protocol):
    """Anything that can say when it fires. All datetimes are timezone-aware; results are UTC."""

    @property
    def text(self) -> str:
        """The schedule as the user wrote it."""
        ...

    def next_fire_after(self, after: datetime) -> datetime:
        """The first fire time strictly after ``after``."""
        ...

    def previous_fire_at_or_before(self, at: datetime) -> datetime:
        """The last fire time at or before ``at``."""
        ...


@dataclass(frozen=True)
class IntervalSchedule:
    """Fires every ``every``, at ``anchor + k * every``; absolute time, no time zone, no DST."""

    every: timedelta
    text: str = ""
    anchor: datetime = datetime(1970, 1, 1, tzinfo=UTC)

    def __post_init__(self) -> None:
        if self.every < timedelta(seconds=1) or self.every > MAX_INTERVAL:
            raise errors.InvalidScheduleError(
                self.text or str(self.every),
                f"has an interval of {self.every}; it must be between 1s and {MAX_INTERVAL.days}d",
            )
        require_aware(self.anchor, "anchor")

    def next_fire_after(self, after: datetime) -> datetime:
        elapsed = require_aware(after, "after") - self.anchor
        periods = elapsed // self.every + 1
        return (self.anchor + periods * self.every).astimezone(UTC)

    def previous_fire_at_or_before(self, at: datetime) -> datetime:
        elapsed = require_aware(at, "at") - self.anchor
        return (self.anchor + (elapsed // self.every) * self.every).astimezone(UTC)


@dataclass(frozen=True)
class CronSchedule:
    """A 5-field cron expression read on the wall clock of ``time_zone``."""

    text: str
    expression: str
    time_zone: ZoneInfo
    _matcher: croniter = field(repr=False, compare=False)

    def next_fire_after(self, after: datetime) -> datetime:
        after_utc = require_aware(after, "after").astimezone(UTC)
        # A wall time at or before the local reading of `after` always resolves at or before
        # `after` (proof in the ADR), so matching can start there; a first-pass fall-back time
        # that resolves before `after` when `after` is in the second pass is skipped below.
        matches = self._wall_matches(_wall(after_utc, self.time_zone), forward=True)
        for wall_time in matches:
            instant = resolve_wall_time(wall_time, self.time_zone)
            if instant > after_utc:
                return instant
        raise AssertionError("unreachable: a cron iterator never ends")  # pragma: no cover

    def previous_fire_at_or_before(self, at: datetime) -> datetime:
        at_utc = require_aware(at, "at").astimezone(UTC)
        # Right after a fall-back, wall times later than the local reading of `at` (up to the
        # size of the shift) resolved to first occurrences at or before `at`; start there.
        start = _wall(at_utc, self.time_zone) + _recent_backward_shift(at_utc, self.time_zone)
        start += timedelta(microseconds=1)  # croniter's get_prev is strict; make `at` eligible
        for wall_time in self._wall_matches(start, forward=False):
            instant = resolve_wall_time(wall_time, self.time_zone)
            if instant <= at_utc:
                return instant
        raise AssertionError("unreachable: a cron iterator never ends")  # pragma: no cover

    def _wall_matches(self, start: datetime, *, forward: bool) -> Iterator[datetime]:
        """Naive local wall times matching the expression, strictly after/before ``start``."""
        matcher = copy.copy(self._matcher)
        matcher.set_current(start.replace(tzinfo=UTC), force=True)
        step = matcher.get_next if forward else matcher.get_prev
        while True:
            yield step(datetime).replace(tzinfo=None)


@functools.lru_cache(maxsize=16384)
def parse_schedule(schedule: str, time_zone: str | None = "UTC") -> CronSchedule | IntervalSchedule:
    """Compile the ``schedule`` and ``timeZone`` fields of a ScheduledJob.

    Results are immutable and cached (a trigger loop sees the same few expressions thousands of
    times a minute); errors are not cached.

    Raises ``InvalidScheduleError`` or ``UnknownTimeZoneError`` with a message naming the field.
    ``time_zone`` ``None`` or ``""`` means UTC, like an omitted ``timeZone``.
    """
    zone = parse_time_zone(time_zone)
    if not isinstance(schedule, str):
        raise errors.InvalidScheduleError(repr(schedule), "is not a string")
    text = schedule.strip()
    if not text:
        raise errors.InvalidScheduleError(schedule, "is empty; give a 5-field cron expression")
    if len(text) > MAX_SCHEDULE_LENGTH:
        raise errors.InvalidScheduleError(
            text[:40] + "...", f"is longer than {MAX_SCHEDULE_LENGTH} characters"
        )
    if text.startswith("@"):
        word, _, rest = text.partition(" ")
        lowered = word.lower()
        if lowered == "@every":
            return IntervalSchedule(every=_parse_duration(text, rest.strip()), text=text)
        if lowered == "@reboot":
            raise errors.InvalidScheduleError(
                text,
                "is not supported: Sundial schedules are time-based; "
                "create a JobRun for a one-off run",
            )
        if lowered not in MACROS or rest.strip():
            raise errors.InvalidScheduleError(
                text, f"is not a known macro; use one of {', '.join(MACROS)} or @every <duration>"
            )
        expression = MACROS[lowered]
    else:
        expression = _validate_fields(text)
    try:
        matcher = croniter(expression, datetime(2000, 1, 1, tzinfo=UTC))
    except (CroniterError, ValueError, KeyError) as error:  # pragma: no cover - pre-validated
        raise errors.InvalidScheduleError(
            text, f"is not a valid cron expression: {error}"
        ) from error
    return CronSchedule(text=text, expression=expression, time_zone=zone, _matcher=matcher)


def parse_time_zone(time_zone: str | None) -> ZoneInfo:
    """An IANA zone by name; ``None`` or ``""`` is UTC. Raises ``UnknownTimeZoneError``."""
    if not time_zone:
        return ZoneInfo("UTC")
    if not isinstance(time_zone, str) or len(time_zone) > 64:
        raise errors.UnknownTimeZoneError(str(time_zone))
    try:
        return ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError, OSError) as error:
        raise errors.UnknownTimeZoneError(time_zone) from error


def next_fire_after(schedule: Schedule, after: datetime) -> datetime:
    """The first fire time of ``schedule`` strictly after ``after`` (UTC)."""
    return schedule.next_fire_after(after)


def fire_times(schedule: Schedule, after: datetime, until: datetime) -> Iterator[datetime]:
    """Every fire time in the half-open interval ``(after, until]``, oldest first."""
    require_aware(until, "until")
    moment = schedule.next_fire_after(after)
    while moment <= until:
        yield moment
        moment = schedule.next_fire_after(moment)


def resolve_wall_time(wall_time: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant at which a naive local ``wall_time`` in ``zone`` fires.

    Unique wall times map to their instant; a repeated (fall-back) wall time maps to its first
    occurrence; a skipped (spring-forward) wall time maps to the first instant after the gap.
    """
    first = wall_time.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = wall_time.replace(tzinfo=zone, fold=1).astimezone(UTC)
    if first <= second:
        # Equal: an ordinary time. Less: repeated; fold=0 is the first occurrence.
        return first
    # In a gap fold=0 reads the wall time with the offset from before the jump (a later
    # instant) and fold=1 with the offset after it (an earlier one); the transition lies in
    # (second, first]. Transitions fall on whole seconds, so bisect on seconds.
    offset_after = wall_time.replace(tzinfo=zone, fold=1).utcoffset()
    low, high = second, first
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        middle = middle.replace(microsecond=0)
        if middle.astimezone(zone).utcoffset() == offset_after:
            high = middle
        else:
            low = middle
    return high


def _wall(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None, fold=0)


def _recent_backward_shift(instant: datetime, zone: ZoneInfo) -> timedelta:
    """How far the wall clock of ``zone`` was set back in the two days before ``instant``."""
    now_offset = instant.astimezone(zone).utcoffset() or timedelta(0)
    largest = timedelta(0)
    for hours_back in range(1, 49):
        earlier = (instant - timedelta(hours=hours_back)).astimezone(zone).utcoffset()
        if earlier is not None and earlier - now_offset > largest:
            largest = earlier - now_offset
    return largest


def _parse_duration(text: str, duration: str) -> timedelta:
    match = _DURATION.match(duration)
    if not duration or match is None:
        raise errors.InvalidScheduleError(
            text, "has an invalid @every duration; write it like 30s, 5m, 1h30m"
        )
    hours, minutes, seconds = (int(match.group(unit) or 0) for unit in ("h", "m", "s"))
    return timedelta(hours=hours, minutes=minutes, seconds=seconds)


def _validate_fields(text: str) -> str:
    """Check a 5-field expression field by field; return it normalised for croniter."""
    parts = text.split()
    if len(parts) != 5:
        hint = (
            " (seconds and years fields are not supported)"
            if len(parts) in (6, 7)
            else " (minute hour day-of-month month day-of-week)"
        )
        raise errors.InvalidScheduleError(
            text,
            f"is not a valid cron expression: it has {len(parts)} fields, expected 5{hint}",
        )
    normalised = []
    for spec, part in zip(_FIELDS, parts, strict=True):
        normalised.append(_validate_field(text, spec, part))
    return " ".join(normalised)


def _validate_field(text: str, spec: _Field, part: str) -> str:
    def fail(problem: str) -> errors.InvalidScheduleError:
        return errors.InvalidScheduleError(text, f"is not a valid cron expression: {problem}")

    if part == "?":
        if not spec.allows_question_mark:
            raise fail(f"{spec.name} does not accept '?'")
        return "*"
    items = []
    for item in part.split(","):
        match = _ITEM.match(item)
        if match is None:
            raise fail(f"{spec.name} item {item!r} is not a number, name, range or step")
        step = match.group("step")
        if step is not None and not 1 <= int(step) <= spec.high:
            raise fail(f"{spec.name} step {step} out of range 1-{spec.high}")
        span = match.group("range")
        if span != "*":
            bounds = [_field_value(fail, spec, bound) for bound in span.split("-")]
            if len(bounds) == 2 and bounds[0] > bounds[1]:
                raise fail(f"{spec.name} range {span} runs backwards")
            span = "-".join(str(bound) for bound in bounds)
        items.append(span if step is None else f"{span}/{step}")
    return ",".join(items)


def _field_value(
    fail: Callable[[str], errors.InvalidScheduleError], spec: _Field, token: str
) -> int:
    if token.isdigit():
        value = int(token)
    elif token.upper() in spec.names:
        value = spec.names[token.upper()]
    else:
        raise fail(f"{spec.name} value {token!r} is not a number or a known name")
    if not spec.low <= value <= spec.high:
        raise fail(f"{spec.name} {value} out of range {spec.low}-{spec.high}")
    return value
