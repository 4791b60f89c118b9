"""The next fire times of a schedule, each with what moved it: ``kubectl sundial next``.

The fire times are the trigger loop's own (``cron.Schedule.next_fire_after``), so a preview
never disagrees with what will fire. What this module adds is the why, for a reader planning
around a DST change or a spread:

- a wall-clock time skipped by spring-forward fires at the transition (``cron``'s rule): the
  note names the skipped wall time(s) that fire there;
- a wall-clock time repeated by fall-back fires once, at its first occurrence: the note says
  so, and that the second occurrence does not fire;
- ``spreadSeconds`` moves each run's start past its fire time by the job's own offset
  (``spread``), the same for every fire of the job.

The wall times a fire came from are read on the "wall-clock timeline" (the same expression
evaluated in UTC, which has no DST), and only for a fire at a spring-forward transition:
elsewhere a fire's wall time is its own local reading. Pure: no clock; the caller gives
``after``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from sundial.scheduling import cron, spread
from sundial.scheduling.clock import require_aware

__all__ = ["PreviewedFire", "preview"]

#: Wider than any DST shift in the tz database (two hours, Antarctica/Troll).
_NEAR_TRANSITION = timedelta(hours=3)
MAX_COUNT = 1000


@dataclass(frozen=True)
class PreviewedFire:
    """One fire: its instant (UTC), when its run may start (``run_at``: the fire plus the
    job's spread offset; ``None`` when the offset is not known, as for a manifest never
    applied), and a note when DST moved or merged it."""

    fire_time: datetime
    run_at: datetime | None
    note: str | None = None


def preview(
    schedule: cron.CronSchedule | cron.IntervalSchedule,
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
        moment = schedule.next_fire_after(moment)
        note = _dst_note(schedule, moment) if isinstance(schedule, cron.CronSchedule) else None
        fires.append(PreviewedFire(moment, None if offset is None else moment + offset, note))
    return fires


def _dst_note(schedule: cron.CronSchedule, fire: datetime) -> str | None:
    zone = schedule.time_zone
    local = fire.astimezone(zone).replace(tzinfo=None, fold=0)
    offset = fire.astimezone(zone).utcoffset()
    just_before = (fire - timedelta(seconds=1)).astimezone(zone).utcoffset()
    if offset is not None and just_before is not None and offset > just_before:
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
        return (
            f"{local:%H:%M} happens twice on {local:%Y-%m-%d} (clocks fall back): fires once, "
            "at the first; the second does not fire"
        )
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
