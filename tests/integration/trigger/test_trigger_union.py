"""Several schedules and exclusions through the database path: the trigger fires the union of
a ScheduledJob's schedules once per instant and none of the excluded fire times; an
exclusion that leaves no fire time stalls the schedule with a message naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sundial.scheduler import trigger
from sundial.scheduling import clock
from sundial.store import pool, schedules
from support.trigger import UNPACED, add_schedule, fire_times, spec


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def test_the_trigger_fires_the_union_less_the_exclusions(
    pool: pool.Pool, store_dsn: str
) -> None:
    begin = utc("2026-12-23 00:00")  # a Wednesday, in Paris (UTC+1)
    uid = await add_schedule(
        pool,
        begin,
        "0 9 * * 1-5",  # weekdays 09:00
        time_zone="Europe/Paris",
        additional_schedules=["0 12 * * 6,0", "0 9 * * *"],  # weekends 12:00; daily 09:00
        exclusions=["12-25", "* * * * 0"],  # not on Christmas, never on Sunday
        concurrency_policy="Allow",
    )
    simulated = clock.ManualClock(begin)
    loop = trigger.TriggerLoop(pool, clock=simulated, settings=UNPACED)
    while simulated.now() < begin + timedelta(days=5):
        simulated.advance(timedelta(minutes=30))
        await loop.tick()

    assert fire_times(store_dsn, uid) == [
        utc("2026-12-23 08:00"),  # Wed 09:00: two schedules name it, one run
        utc("2026-12-24 08:00"),  # Thu
        # Fri 12-25 excluded
        utc("2026-12-26 08:00"),  # Sat 09:00 (daily)
        utc("2026-12-26 11:00"),  # Sat 12:00 (weekends)
        # Sun 12-27 excluded, both fires
    ]


async def test_exclusions_that_leave_no_fire_stall_the_schedule(pool: pool.Pool) -> None:
    now = utc("2026-12-23 00:00")
    result = await schedules.upsert(
        pool,
        uid="00000000-0000-0000-0000-0000000000e1",
        namespace="default",
        name="never",
        generation=1,
        spec=spec("15 1-3 * * *", exclusions=["* 0-6 * * *"]),
        now=now,
    )
    assert result.stalled is not None
    assert result.stalled.reason == "InvalidSchedule"
    assert str(result.stalled).startswith("exclusions: ")
    assert "narrow the exclusions" in str(result.stalled)
