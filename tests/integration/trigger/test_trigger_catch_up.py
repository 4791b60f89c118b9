"""A trigger outage: after it, startingDeadlineSeconds is the catch-up window.

Fires older than the window are dropped, and counted (the schedule's ``fires_skipped`` and the
``MissSchedule`` Event's message); within it ``missedFirePolicy`` decides and ``maxBackfill``
caps, through the trigger and PostgreSQL, with the trigger really not ticking meanwhile.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sundial.scheduler import trigger
from sundial.scheduling import clock
from sundial.store import pool, schedules
from support.trigger import UNPACED, add_schedule, fire_times


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def test_after_a_trigger_outage_only_the_catch_up_window_runs_and_the_rest_is_counted(
    pool: pool.Pool, store_dsn: str
) -> None:
    """The trigger stops for 40 minutes; back, it backfills only the fires inside
    startingDeadlineSeconds (10 minutes, capped by maxBackfill) and counts the others, in the
    schedule's row and in the MissSchedule Event's message."""
    begin = utc("2026-12-04 09:00")
    uid = await add_schedule(
        pool,
        begin,
        "*/5 * * * *",
        concurrency_policy="Allow",
        missed_fire_policy="Backfill",
        max_backfill=3,
        starting_deadline_seconds=600,
    )
    simulated = clock.ManualClock(begin)
    loop = trigger.TriggerLoop(pool, clock=simulated, settings=UNPACED)
    simulated.advance(timedelta(minutes=5, seconds=1))
    await loop.tick()  # 09:05 fires on time
    simulated.advance(timedelta(minutes=40))  # down from 09:05 to 09:45
    report = await loop.tick()
    assert fire_times(store_dsn, uid) == [
        utc(text) for text in ["2026-12-04 09:05", "2026-12-04 09:40", "2026-12-04 09:45"]
    ]  # 09:35 is 10 minutes and 1 s old: outside the window
    [outcome] = [o for o in report.outcomes if o.schedule_id == uid]
    assert outcome.missed_message == (
        "8 fires were due, 7 missed: 6 older than startingDeadlineSeconds (600 s) dropped, "
        "1 backfilled; the newest started"
    )
    stored = await schedules.get(pool, uid)
    assert stored is not None
    assert (stored.fires_total, stored.fires_skipped) == (3, 6)
