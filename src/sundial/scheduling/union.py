"""Several schedules fired as one, less exclusions.

A ScheduledJob fires on ``schedule`` and on each of ``additionalSchedules`` (cron expressions,
macros or ``@every``): the union of their fire times, one fire per instant however many name
it. ``exclusions`` drop fire times whose wall time in the job's zone they match:

- a date, ``MM-DD`` (every year: ``12-25``) or ``YYYY-MM-DD`` (that day only): the whole day;
- a 5-field cron expression: every minute it names (``* * * * 0``: all of Sunday;
  ``* 0-6 * * *``: 00:00 to 06:59 every day).

Each part keeps the DST policy of a cron expression (``cron.CronSchedule``); an exclusion reads
the wall time of the instant a part resolved to. One expression and no exclusions is the plain
schedule, unchanged (``parse`` returns it), so a job that uses neither pays nothing.

PostgreSQL keeps the whole as one text (``schedules.cron``), a line per schedule and a line
``except <exclusion>`` per exclusion (``stored_text``); the trigger reads it back with
``parse_stored``, so the row needs no other column.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sundial.scheduling import cron, cron_fields, errors
from sundial.scheduling.clock import require_aware

__all__ = [
    "Exclusion",
    "UnionSchedule",
    "parse",
    "parse_manifest",
    "parse_stored",
    "stored_text",
]

#: Excluded stretches tried in a row before a union is reported as never firing (every fire
#: of ``15 1-3 * * *`` falls in ``* 0-6 * * *``). A match is skipped by the whole day, hour
#: or minute its exclusion covers, so ``@every 1s`` off for 23 hours a day needs 23 tries.
MAX_EXCLUDED_IN_A_ROW = 5_000
EXCEPT = "except "
_DATE = re.compile(r"^(?:(?P<year>[0-9]{4})-)?(?P<month>[0-9]{2})-(?P<day>[0-9]{2})$")
_WHOLE_DAY = frozenset(range(60)), frozenset(range(24))


@dataclass(frozen=True)
class Exclusion:
    """One entry of ``exclusions``: a date (every year, or one day) or a cron expression."""

    text: str
    month_day: tuple[int, int] | None = None
    year: int | None = None
    fields: cron_fields.Fields | None = None

    @classmethod
    def parse(cls, text: str, where: str) -> Exclusion:
        """``where`` names the field (``exclusions[2]``) in the error."""
        stripped = text.strip()
        found = _DATE.match(stripped)
        if found is not None:
            year = int(found["year"]) if found["year"] else None
            month, day = int(found["month"]), int(found["day"])
            try:
                date(year or 2000, month, day)  # 2000 is a leap year: 02-29 is a date
            except ValueError:
                raise errors.InvalidScheduleError(
                    text, "is not a calendar date; write MM-DD or YYYY-MM-DD", field=where
                ) from None
            return cls(stripped, month_day=(month, day), year=year)
        try:
            fields = cron_fields.expand(stripped)
        except errors.InvalidScheduleError as error:
            raise errors.InvalidScheduleError(
                text,
                f"is neither a date (MM-DD, YYYY-MM-DD) nor a cron expression: {error.problem}",
                field=where,
            ) from None
        return cls(stripped, fields=fields)

    def matches(self, wall_time: datetime) -> bool:
        if self.fields is not None:
            return self.fields.matches(wall_time)
        assert self.month_day is not None
        return (wall_time.month, wall_time.day) == self.month_day and (
            self.year is None or wall_time.year == self.year
        )

    @property
    def span(self) -> timedelta:
        """The wall-clock stretch a match excludes as a whole, so the search skips it at once:
        a day (a date, or every minute of every hour), an hour (every minute), or a minute."""
        if self.fields is None or (self.fields.minutes, self.fields.hours) == _WHOLE_DAY:
            return timedelta(days=1)
        if self.fields.minutes == _WHOLE_DAY[0]:
            return timedelta(hours=1)
        return timedelta(minutes=1)


@dataclass(frozen=True)
class UnionSchedule:
    """The fire times of ``parts``, one per instant, less those an exclusion matches."""

    text: str
    parts: tuple[cron.Schedule, ...]
    exclusions: tuple[Exclusion, ...]
    time_zone: ZoneInfo

    def next_fire_after(self, after: datetime) -> datetime:
        require_aware(after, "after")
        moment = after.astimezone(UTC)
        for _ in range(MAX_EXCLUDED_IN_A_ROW):
            candidate = min(part.next_fire_after(moment) for part in self.parts)
            excluded = self._excluded_by(candidate)
            if excluded is None:
                return candidate
            # Past the last instant of the excluded day, hour or minute.
            moment = max(candidate, self._edge(candidate, excluded.span, forward=True))
        raise self._never("after", after)

    def previous_fire_at_or_before(self, at: datetime) -> datetime:
        require_aware(at, "at")
        moment = at.astimezone(UTC)
        for _ in range(MAX_EXCLUDED_IN_A_ROW):
            candidate = max(part.previous_fire_at_or_before(moment) for part in self.parts)
            excluded = self._excluded_by(candidate)
            if excluded is None:
                return candidate
            moment = min(
                candidate - timedelta(microseconds=1),
                self._edge(candidate, excluded.span, forward=False),
            )
        raise self._never("at or before", at)

    def _excluded_by(self, instant: datetime) -> Exclusion | None:
        wall_time = instant.astimezone(self.time_zone).replace(tzinfo=None)
        for exclusion in self.exclusions:
            if exclusion.matches(wall_time):
                return exclusion
        return None

    def _edge(self, instant: datetime, span: timedelta, *, forward: bool) -> datetime:
        """The last instant of the local day, hour or minute (``span``) that holds ``instant``
        (forward), or the last one before it began."""
        local = instant.astimezone(self.time_zone).replace(tzinfo=None)
        if span >= timedelta(days=1):
            start = datetime.combine(local.date(), datetime.min.time())
        elif span >= timedelta(hours=1):
            start = local.replace(minute=0, second=0, microsecond=0)
        else:
            start = local.replace(second=0, microsecond=0)
        if forward:
            start += span
        return cron.resolve_wall_time(start, self.time_zone) - timedelta(microseconds=1)

    def _never(self, where: str, instant: datetime) -> errors.SchedulingError:
        schedules = f"{len(self.parts)} schedule" + ("s" if len(self.parts) > 1 else "")
        return errors.InvalidScheduleError(
            [exclusion.text for exclusion in self.exclusions],
            f"leave the job's {schedules} no fire time {where} {instant.isoformat()} within"
            f" {MAX_EXCLUDED_IN_A_ROW} tries; narrow the exclusions",
            field="exclusions",
        )


def parse(
    schedule: str,
    additional: Sequence[str] = (),
    exclusions: Sequence[str] = (),
    time_zone: str | None = "UTC",
    dst_policy: cron.DstPolicy = cron.DEFAULT_DST_POLICY,
) -> cron.Schedule:
    """The schedule a ScheduledJob's ``schedule``, ``additionalSchedules`` and ``exclusions``
    fire on; errors name the field (``additionalSchedules[1]: ...``)."""
    first = cron.parse_schedule(schedule, time_zone, dst_policy)
    if not additional and not exclusions:
        return first
    parts = [first]
    for index, text in enumerate(additional):
        try:
            parts.append(cron.parse_schedule(text, time_zone, dst_policy))
        except errors.InvalidScheduleError as error:
            raise errors.InvalidScheduleError(
                error.value, error.problem, field=f"additionalSchedules[{index}]"
            ) from None
    excluded = tuple(
        Exclusion.parse(text, f"exclusions[{index}]") for index, text in enumerate(exclusions)
    )
    return UnionSchedule(
        text=stored_text(schedule, additional, exclusions),
        parts=tuple(parts),
        exclusions=excluded,
        time_zone=cron.parse_time_zone(time_zone),
    )


def parse_manifest(spec: Mapping[str, Any]) -> cron.Schedule:
    """``parse`` of a ScheduledJob's raw ``spec`` (a manifest, or an object read from the
    cluster), DST policy included: what ``kubectl sundial`` previews and backfills."""
    dst_policy = cron.DstPolicy.from_manifest(spec.get("dstPolicy"))
    return parse(
        str(spec.get("schedule")),
        [str(text) for text in spec.get("additionalSchedules") or ()],
        [str(text) for text in spec.get("exclusions") or ()],
        spec.get("timeZone"),
        dst_policy,
    )


def stored_text(
    schedule: str, additional: Sequence[str] = (), exclusions: Sequence[str] = ()
) -> str:
    """The one text PostgreSQL keeps for them (see the module docstring)."""
    lines = [schedule.strip(), *(text.strip() for text in additional)]
    lines += [EXCEPT + text.strip() for text in exclusions]
    return "\n".join(lines)


def parse_stored(
    text: str, time_zone: str | None = "UTC", dst_policy: cron.DstPolicy = cron.DEFAULT_DST_POLICY
) -> cron.Schedule:
    """``parse`` of what ``stored_text`` wrote; a plain one-line schedule is just that."""
    if "\n" not in text:
        return cron.parse_schedule(text, time_zone, dst_policy)
    lines = text.split("\n")
    schedules = [line for line in lines if not line.startswith(EXCEPT)]
    exclusions = [line[len(EXCEPT) :] for line in lines if line.startswith(EXCEPT)]
    if not schedules:
        raise errors.InvalidScheduleError(text, "names exclusions but no schedule")
    return parse(schedules[0], schedules[1:], exclusions, time_zone, dst_policy)
