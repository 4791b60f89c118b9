"""The next fire times of a schedule, each with what moved it: ``kubectl sundial next``.

The fire times are the trigger loop's own (``cron.Schedule.next_fire_after``), so a preview
never disagrees with what will fire. What this module adds is the why, for a reader planning
around a DST change or a spread:

- a wall-clock time skipped by spring-forward fires at the transition (``cron``'s default
  rule): the note names the skipped wall time(s) that fire there. Under ``dstPolicy``
  ``skippedTime: Skip`` they do not fire, and the next fire's note names them;
- a wall-clock time repeated by fall-back fires once, at its first occurrence (or, as
  ``repeatedTime`` says, at its second or at both): the note says which occurrence fires and
  which does not;
- ``exclusions`` drop fire times of the schedules: the next fire's note names them;
- ``spreadSeconds`` moves each run's start past its fire time by the job's own offset
  (``spread``), the same for every fire of the job.

The wall times a fire came from are read on the "wall-clock timeline" (the same expression
evaluated in UTC, which has no DST), and only for a fire at a spring-forward transition:
elsewhere a fire's wall time is its own local reading. Pure: no clock; the caller gives
``after``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from sundial.scheduling import cron, spread, union
from sundial.scheduling.clock import require_aware

__all__ = ["PreviewedFire", "preview"]

#: Wider than any DST shift in the tz database (two hours, Antarctica/Troll).
_NEAR_TRANSITION = timedelta(hours=3)
MAX_COUNT = 1000
#: Excluded fire times a note names before it says "and more".
_MAX_DROPPED_NAMED = 3


@dataclass(frozen=True)
class PreviewedFire:
    """One fire: its instant (UTC), when its run may start (``run_at``: the fire plus the
    job's spread offset; ``None`` when the offset is not known, as for a manifest never
    applied), and a note when DST moved or merged it."""

    fire_time: datetime
    run_at: datetime | None
    note: str | None = None


def preview(
    schedule: cron.Schedule,
    after: datetime,
    count: int,
    *,
    spread_seconds: int = 0,
    identity: str | None = None,
) -> list[PreviewedFire]:
    """The first ``count`` fires strictly after ``after``. ``identity`` (the ScheduledJob's
    uid) fixes the spread offset; without it ``run_at`` is ``None`` when there is a spread."""
    require_aware(after, "after")
    if not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be from 1 to {MAX_COUNT}, not {count}")
    offset: timedelta | None = timedelta(0)
    if spread_seconds:
        offset = None if identity is None else spread.offset_for(identity, spread_seconds)
    fires: list[PreviewedFire] = []
    moment = after
    while len(fires) < count:
        previous, moment = moment, schedule.next_fire_after(moment)
        notes: list[str | None] = []
        if isinstance(schedule, union.UnionSchedule):
            notes.append(_excluded_note(schedule, previous, moment))
            parts = [p for p in schedule.parts if p.next_fire_after(previous) == moment]
        else:
            parts = [schedule]
        for part in parts:
            if isinstance(part, cron.CronSchedule):
                notes += [_skipped_note(part, previous, moment), _dst_note(part, moment)]
        note = "; ".join(text for text in notes if text) or None
        fires.append(PreviewedFire(moment, None if offset is None else moment + offset, note))
    return fires


def _excluded_note(schedule: union.UnionSchedule, previous: datetime, fire: datetime) -> str | None:
    """The fire times of the schedules in ``(previous, fire)`` that an exclusion dropped."""
    everything = union.UnionSchedule(schedule.text, schedule.parts, (), schedule.time_zone)
    dropped: list[datetime] = []
    moment = everything.next_fire_after(previous)
    while moment < fire and len(dropped) <= _MAX_DROPPED_NAMED:
        dropped.append(moment)
        moment = everything.next_fire_after(moment)
    if not dropped:
        return None
    named = [
        f"{instant.astimezone(schedule.time_zone):%Y-%m-%d %H:%M}"
        for instant in dropped[:_MAX_DROPPED_NAMED]
    ]
    more = " and more" if len(dropped) > _MAX_DROPPED_NAMED else ""
    return f"after {', '.join(named)}{more}: not fired (exclusions)"


def _skipped_note(schedule: cron.CronSchedule, previous: datetime, fire: datetime) -> str | None:
    """Under ``skippedTime: Skip``, the wall times in a spring-forward gap in
    ``(previous, fire]`` that did not fire: the default rule would have fired them at the
    transition."""
    if schedule.dst_policy.skipped_time != "Skip":
        return None
    at_transition = dataclasses.replace(
        schedule, dst_policy=cron.DstPolicy("AtTransition", schedule.dst_policy.repeated_time)
    )
    dropped: list[datetime] = []
    moment = at_transition.next_fire_after(previous)
    while moment <= fire:
        local = moment.astimezone(schedule.time_zone).replace(tzinfo=None, fold=0)
        dropped += [wall for wall in _walls_firing_at(at_transition, moment) if wall != local]
        moment = at_transition.next_fire_after(moment)
    if not dropped:
        return None
    names = ", ".join(f"{wall:%H:%M}" for wall in dropped)
    what = "does" if len(dropped) == 1 else "do"
    return (
        f"{names} {what} not exist on {dropped[0]:%Y-%m-%d} (clocks spring forward): "
        "not fired (skippedTime Skip)"
    )


def _dst_note(schedule: cron.CronSchedule, fire: datetime) -> str | None:
    zone = schedule.time_zone
    reading = fire.astimezone(zone)
    local = reading.replace(tzinfo=None, fold=0)
    offset = reading.utcoffset()
    just_before = (fire - timedelta(seconds=1)).astimezone(zone).utcoffset()
    spring_forward = offset is not None and just_before is not None and offset > just_before
    if spring_forward and schedule.dst_policy.skipped_time == "AtTransition":
        # The fire is a spring-forward transition: wall times in the gap fire here.
        skipped = [wall for wall in _walls_firing_at(schedule, fire) if wall != local]
        if skipped:
            names = ", ".join(f"{wall:%H:%M}" for wall in skipped)
            what = "does" if len(skipped) == 1 else "do"
            return (
                f"{names} {what} not exist on {skipped[0]:%Y-%m-%d} (clocks spring forward): "
                f"fires at the transition, {local:%H:%M}"
            )
    if _repeated(local, zone):
        twice = f"{local:%H:%M} happens twice on {local:%Y-%m-%d} (clocks fall back): "
        which = "second" if reading.fold else "first"
        if schedule.dst_policy.repeated_time == "Both":
            return twice + f"fires at both; this is the {which}"
        other = "first" if reading.fold else "second"
        return twice + f"fires once, at the {which}; the {other} does not fire"
    return None


def _walls_firing_at(schedule: cron.CronSchedule, fire: datetime) -> list[datetime]:
    """The naive local wall times the expression matches that resolve to ``fire``."""
    wall_timeline = cron.parse_schedule(schedule.text, "UTC")
    local = fire.astimezone(schedule.time_zone).replace(tzinfo=None)
    start = (local - _NEAR_TRANSITION).replace(tzinfo=UTC)
    end = (local + _NEAR_TRANSITION).replace(tzinfo=UTC)
    found = []
    wall = wall_timeline.next_fire_after(start)
    while wall <= end:
        naive = wall.replace(tzinfo=None)
        if cron.resolve_wall_time(naive, schedule.time_zone) == fire:
            found.append(naive)
        wall = wall_timeline.next_fire_after(wall)
    return found


def _repeated(wall: datetime, zone: ZoneInfo) -> bool:
    first = wall.replace(tzinfo=zone, fold=0).utcoffset()
    second = wall.replace(tzinfo=zone, fold=1).utcoffset()
    return first is not None and second is not None and first > second
