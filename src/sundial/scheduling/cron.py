"""When a schedule fires: cron expressions and intervals, in IANA time zones, with explicit DST.

A ``Schedule`` turns into instants (timezone-aware UTC datetimes). ``parse_schedule`` accepts:

- a 5-field cron expression (minute, hour, day-of-month, month, day-of-week; ``*``, ``?``,
  lists, ranges, steps, month and weekday names, 7 = Sunday). ``N-N`` is the single value N;
  day-of-month and day-of-week are OR'ed only when both are restricted, and a day field whose
  text starts with ``*`` (or is ``?``) is not restricted, as in Vixie cron. An expression that
  can never fire (``0 0 30 2 *``) is refused here, saying why;
- the macros ``@yearly`` / ``@annually``, ``@monthly``, ``@weekly``, ``@daily`` / ``@midnight``,
  ``@hourly``;
- ``@every <duration>`` (``@every 30s``, ``@every 1h30m``): an interval in absolute time,
  aligned to the Unix epoch, so every leader computes the same fire times; the time zone does
  not apply to it.

Cron fires follow the local wall clock of the schedule's ``timeZone``, and DST is handled as
docs/design.md says (see docs/adr/0002-cron-and-dst.md for why croniter is wrapped). By
default (``DstPolicy()``, the rule since the first release):

- a wall-clock time repeated by fall-back fires ONCE, at its first occurrence;
- a wall-clock time skipped by spring-forward fires at the first valid instant after it (the
  instant of the transition); several skipped times therefore share one fire.

A ScheduledJob's ``dstPolicy`` may instead skip the times spring-forward skips, and fire a
repeated time at its second occurrence or at both (docs/adr/0055-dst-policy.md).

``cron_fields`` expands each field to the values it matches; croniter then only walks the
calendar on a "wall-clock timeline" (local wall times written as if they were UTC, which has no
DST), given every field as ``*`` or an explicit list and the day rule as its ``day_or`` flag.
Each matching wall time is resolved to its instants (none, one or two) by the policy. Fire times
strictly increase and every one is a UTC instant. Every failure, whatever the input or instant,
is a ``SchedulingError`` naming the field; no croniter exception leaves this module.
docs/cron.md compares these semantics with Kubernetes CronJob and Vixie cron.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterError

from sundial.scheduling import cron_fields, errors
from sundial.scheduling.clock import require_aware

MAX_SCHEDULE_LENGTH = 256
#: What croniter and datetime arithmetic raise at the edges; never let one escape this module.
_EVALUATION_ERRORS = (CroniterError, ValueError, OverflowError, KeyError)
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

SKIPPED_TIME_CHOICES = ("AtTransition", "Skip")
REPEATED_TIME_CHOICES = ("First", "Second", "Both")


@dataclass(frozen=True)
class DstPolicy:
    """What a cron schedule does with a wall-clock time that a DST change skips or repeats.

    ``skipped_time`` (spring-forward): ``AtTransition`` fires at the first instant after the
    gap, so several skipped times share one fire; ``Skip`` does not fire them at all.
    ``repeated_time`` (fall-back): ``First`` or ``Second`` fires once, at that occurrence;
    ``Both`` fires at each of the two. The defaults are Sundial's rule before the policy
    existed, so a schedule without ``dstPolicy`` fires exactly as it did.
    """

    skipped_time: str = "AtTransition"
    repeated_time: str = "First"

    def __post_init__(self) -> None:
        if self.skipped_time not in SKIPPED_TIME_CHOICES:
            raise errors.InvalidPolicyError(
                "dstPolicy.skippedTime",
                self.skipped_time,
                f"must be one of {', '.join(SKIPPED_TIME_CHOICES)}",
            )
        if self.repeated_time not in REPEATED_TIME_CHOICES:
            raise errors.InvalidPolicyError(
                "dstPolicy.repeatedTime",
                self.repeated_time,
                f"must be one of {', '.join(REPEATED_TIME_CHOICES)}",
            )

    @classmethod
    def from_manifest(cls, value: object) -> DstPolicy:
        """The policy a ScheduledJob's ``spec.dstPolicy`` states (``skippedTime``,
        ``repeatedTime``); absent (``None``) is the default."""
        if value is None:
            return DEFAULT_DST_POLICY
        if not isinstance(value, Mapping):
            raise errors.InvalidPolicyError(
                "dstPolicy", value, "must be an object with skippedTime and repeatedTime"
            )
        unknown = sorted(str(key) for key in value if key not in ("skippedTime", "repeatedTime"))
        if unknown:
            raise errors.InvalidPolicyError(
                "dstPolicy", value, f"has unknown fields {', '.join(unknown)}"
            )
        return cls(value.get("skippedTime", "AtTransition"), value.get("repeatedTime", "First"))


DEFAULT_DST_POLICY = DstPolicy()

_DURATION = re.compile(r"^(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?(?:(?P<s>[0-9]+)s)?$")
_TIME_ZONE_PREFIX = re.compile(r"^(?:CRON_)?TZ=", re.IGNORECASE)


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
        return self._fire(elapsed // self.every + 1, "after", after)

    def previous_fire_at_or_before(self, at: datetime) -> datetime:
        elapsed = require_aware(at, "at") - self.anchor
        return self._fire(elapsed // self.every, "at or before", at)

    def _fire(self, periods: int, where: str, instant: datetime) -> datetime:
        try:
            return (self.anchor + periods * self.every).astimezone(UTC)
        except OverflowError as error:  # past year 9999 or before year 1
            raise errors.InvalidScheduleError(
                self.text or str(self.every),
                f"has no fire time {where} {instant.isoformat()} that can be computed ({error})",
            ) from error


@dataclass(frozen=True)
class CronSchedule:
    """A 5-field cron expression read on the wall clock of ``time_zone``."""

    text: str
    expression: str
    time_zone: ZoneInfo
    _matcher: croniter = field(repr=False, compare=False)
    dst_policy: DstPolicy = DEFAULT_DST_POLICY

    def next_fire_after(self, after: datetime) -> datetime:
        require_aware(after, "after")
        # A wall time at or before the local reading of `after` always resolves at or before
        # `after` (proof in ADR 0002) unless a policy fires the second occurrence of a repeated
        # time: then, with `after` in the first pass, matching starts one shift earlier. A
        # first-pass fall-back time that resolves before `after` is skipped below.
        try:
            after_utc = after.astimezone(UTC)
            start = _wall(after_utc, self.time_zone)
            if self.dst_policy.repeated_time != "First":
                start -= _first_pass_shift(after_utc, self.time_zone)
            if self.dst_policy.repeated_time == "Both":
                return self._earliest_after(start, after_utc)
            for wall_time in self._wall_matches(start, forward=True):
                for instant in wall_time_instants(wall_time, self.time_zone, self.dst_policy):
                    if instant > after_utc:
                        return instant
        except _EVALUATION_ERRORS as error:
            raise self._no_fire("after", after, error) from error
        raise AssertionError("unreachable: a cron iterator never ends")  # pragma: no cover

    def previous_fire_at_or_before(self, at: datetime) -> datetime:
        require_aware(at, "at")
        # Right after a fall-back, wall times later than the local reading of `at` (up to the
        # size of the shift) resolved to first occurrences at or before `at`; start there.
        try:
            at_utc = at.astimezone(UTC)
            start = _wall(at_utc, self.time_zone) + _recent_backward_shift(at_utc, self.time_zone)
            start += timedelta(microseconds=1)  # croniter's get_prev is strict; `at` is eligible
            if self.dst_policy.repeated_time == "Both":
                return self._latest_at_or_before(start, at_utc)
            for wall_time in self._wall_matches(start, forward=False):
                for instant in reversed(
                    wall_time_instants(wall_time, self.time_zone, self.dst_policy)
                ):
                    if instant <= at_utc:
                        return instant
        except _EVALUATION_ERRORS as error:
            raise self._no_fire("at or before", at, error) from error
        raise AssertionError("unreachable: a cron iterator never ends")  # pragma: no cover

    def _earliest_after(self, start: datetime, after: datetime) -> datetime:
        """With both occurrences firing, wall order is not instant order (01:00 twice lies
        around 01:30 once), but only within one repeated interval: keep the earliest instant
        past ``after`` until no later wall time can resolve before it. A wall time resolves to
        itself minus an offset the zone has near that instant, so none at or past ``best`` plus
        the largest offset near ``best`` can."""
        best: datetime | None = None
        largest = timedelta(0)
        for wall_time in self._wall_matches(start, forward=True):
            if best is not None and wall_time.replace(tzinfo=UTC) - largest >= best:
                return best
            for instant in wall_time_instants(wall_time, self.time_zone, self.dst_policy):
                if instant > after and (best is None or instant < best):
                    best = instant
                    largest = _offset_range(best, self.time_zone)[1]
        raise AssertionError("unreachable: a cron iterator never ends")  # pragma: no cover

    def _latest_at_or_before(self, start: datetime, at: datetime) -> datetime:
        """The mirror of ``_earliest_after``: no wall time at or before ``best`` plus the
        smallest offset near ``best`` can resolve after ``best``."""
        best: datetime | None = None
        smallest = timedelta(0)
        for wall_time in self._wall_matches(start, forward=False):
            if best is not None and wall_time.replace(tzinfo=UTC) - smallest <= best:
                return best
            for instant in wall_time_instants(wall_time, self.time_zone, self.dst_policy):
                if instant <= at and (best is None or instant > best):
                    best = instant
                    smallest = _offset_range(best, self.time_zone)[0]
        raise AssertionError("unreachable: a cron iterator never ends")  # pragma: no cover

    def _no_fire(self, where: str, instant: datetime, error: Exception) -> errors.SchedulingError:
        # Parsing refuses expressions that never fire, so this is the edge of the calendar
        # (year 1 or 9999) or a croniter failure; either way it must not leave this layer as
        # anything but a SchedulingError the trigger loop turns into a Stalled schedule.
        return errors.InvalidScheduleError(
            self.text,
            f"has no fire time {where} {instant.isoformat()} that can be computed ({error}); "
            "check the schedule and the instant",
        )

    def _wall_matches(self, start: datetime, *, forward: bool) -> Iterator[datetime]:
        """Naive local wall times matching the expression, strictly after/before ``start``."""
        matcher = copy.copy(self._matcher)
        matcher.set_current(start.replace(tzinfo=UTC), force=True)
        step = matcher.get_next if forward else matcher.get_prev
        while True:
            yield step(datetime).replace(tzinfo=None)


def parse_schedule(
    schedule: str, time_zone: str | None = "UTC", dst_policy: DstPolicy = DEFAULT_DST_POLICY
) -> CronSchedule | IntervalSchedule:
    """Compile the ``schedule`` and ``timeZone`` fields of a ScheduledJob.

    Results are immutable and cached (a trigger loop sees the same few expressions thousands of
    times a minute); errors are not cached.

    Raises ``InvalidScheduleError`` or ``UnknownTimeZoneError`` with a message naming the field,
    whatever the arguments are (a non-string never reaches the cache, which would raise
    ``TypeError`` on an unhashable value). ``time_zone`` ``None`` or ``""`` means UTC, like an
    omitted ``timeZone``. ``dst_policy`` applies to cron expressions; an ``@every`` interval
    runs in absolute time and has no DST to apply it to.
    """
    if time_zone is not None and not isinstance(time_zone, str):
        raise errors.UnknownTimeZoneError(time_zone, "is not a string; give an IANA name")
    if not isinstance(schedule, str):
        parse_time_zone(time_zone)  # a bad zone is reported first, as for string schedules
        raise errors.InvalidScheduleError(
            schedule, "is not a string; give a 5-field cron expression"
        )
    if not isinstance(dst_policy, DstPolicy):
        raise TypeError(f"dst_policy must be a DstPolicy, not {type(dst_policy).__name__}")
    return _compile(schedule, time_zone, dst_policy)


@functools.lru_cache(maxsize=16384)
def _compile(
    schedule: str, time_zone: str | None, dst_policy: DstPolicy
) -> CronSchedule | IntervalSchedule:
    zone = parse_time_zone(time_zone)
    text = schedule.strip()
    if not text:
        raise errors.InvalidScheduleError(schedule, "is empty; give a 5-field cron expression")
    if len(text) > MAX_SCHEDULE_LENGTH:
        raise errors.InvalidScheduleError(
            text[:40] + "...", f"is longer than {MAX_SCHEDULE_LENGTH} characters"
        )
    if _TIME_ZONE_PREFIX.match(text):
        raise errors.InvalidScheduleError(text, _time_zone_prefix_problem(text))
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
        if lowered in MACROS and rest.strip():
            raise errors.InvalidScheduleError(
                text, f"has text after {word}; a macro stands alone (write just {lowered!r})"
            )
        if lowered not in MACROS:
            raise errors.InvalidScheduleError(
                text, f"is not a known macro; use one of {', '.join(MACROS)} or @every <duration>"
            )
        fields = cron_fields.expand(MACROS[lowered])
    else:
        fields = cron_fields.expand(text)
    cron_fields.require_a_fire(text, fields)
    expression, day_or = fields.for_croniter()
    try:
        matcher = croniter(expression, datetime(2000, 1, 1, tzinfo=UTC), day_or=day_or)
        # A last guard: whatever the check above missed, croniter must find a fire.
        copy.copy(matcher).get_next(datetime)
    except (CroniterError, ValueError, KeyError, OverflowError) as error:
        raise errors.InvalidScheduleError(
            text, f"is not a cron expression Sundial can evaluate: {error}"
        ) from error
    return CronSchedule(
        text=text, expression=expression, time_zone=zone, _matcher=matcher, dst_policy=dst_policy
    )


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


def wall_time_instants(
    wall_time: datetime, zone: ZoneInfo, policy: DstPolicy = DEFAULT_DST_POLICY
) -> tuple[datetime, ...]:
    """The UTC instants at which a naive local ``wall_time`` in ``zone`` fires under ``policy``,
    earliest first: one for an ordinary time; for a repeated one, its first, its second or
    both; for a skipped one, the transition or none."""
    first = wall_time.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = wall_time.replace(tzinfo=zone, fold=1).astimezone(UTC)
    if first == second:
        return (first,)
    if first < second:  # repeated by fall-back
        return {"First": (first,), "Second": (second,)}.get(policy.repeated_time, (first, second))
    if policy.skipped_time == "Skip":
        return ()
    return (resolve_wall_time(wall_time, zone),)


def _first_pass_shift(instant: datetime, zone: ZoneInfo) -> timedelta:
    """How far the wall clock of ``zone`` will be set back after ``instant`` when ``instant``
    lies in the first pass of a repeated interval; zero otherwise."""
    local = instant.astimezone(zone)
    if local.fold == 1:
        return timedelta(0)
    wall = local.replace(tzinfo=None)
    first = wall.replace(tzinfo=zone, fold=0).utcoffset()
    second = wall.replace(tzinfo=zone, fold=1).utcoffset()
    if first is None or second is None or first <= second:
        return timedelta(0)
    return first - second


def _offset_range(instant: datetime, zone: ZoneInfo) -> tuple[timedelta, timedelta]:
    """The smallest and largest UTC offsets of ``zone`` within two days of ``instant``."""
    hour = instant.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return _offset_range_around(hour, zone)


@functools.lru_cache(maxsize=4096)
def _offset_range_around(hour: datetime, zone: ZoneInfo) -> tuple[timedelta, timedelta]:
    # Read every hour from two days before ``hour`` to two days and an hour after it: no
    # offset in the tz database lasts less than an hour, so none is missed.
    offsets = [
        (hour + timedelta(hours=hours)).astimezone(zone).utcoffset() or timedelta(0)
        for hours in range(-48, 50)
    ]
    return min(offsets), max(offsets)


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


def _time_zone_prefix_problem(text: str) -> str:
    prefix, _, rest = text.partition(" ")
    variable, _, name = prefix.partition("=")
    rest = rest.strip()
    fix = f"put {name!r} in the timeZone field" if name else "name the zone in the timeZone field"
    if rest:
        fix += f" and write the schedule as {rest!r}"
    return (
        f"sets the time zone with {variable.upper()}=, which Sundial does not accept "
        f"(nor does Kubernetes CronJob); {fix}"
    )


def _parse_duration(text: str, duration: str) -> timedelta:
    match = _DURATION.match(duration)
    if not duration or match is None:
        raise errors.InvalidScheduleError(
            text, "has an invalid @every duration; write it like 30s, 5m, 1h30m"
        )
    hours, minutes, seconds = (int(match.group(unit) or 0) for unit in ("h", "m", "s"))
    total = hours * 3600 + minutes * 60 + seconds
    if total > MAX_INTERVAL.total_seconds():
        # Checked before timedelta, which overflows (OverflowError) long before Python's ints.
        raise errors.InvalidScheduleError(
            text, f"has an interval of {total} s; it must be between 1s and {MAX_INTERVAL.days}d"
        )
    return timedelta(seconds=total)
