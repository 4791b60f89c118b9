"""Upserting schedules and firing them through the database: the basic path and bad input."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import psycopg

from sundial.api import scheduled_job
from sundial.scheduler import trigger
from sundial.scheduling import clock
from sundial.store import claims, pool, reaper, schedules
from support.trigger import START, UNPACED, add_schedule, fire_times, spec


async def test_a_due_schedule_creates_its_run_with_the_fire_time_and_advances(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "*/5 * * * *")
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)

    assert (await loop.tick()).created == 0  # nothing is due at 10:00:00 (next is 10:05)
    manual_clock.set(START + timedelta(minutes=5, seconds=2))
    report = await loop.tick()

    assert report.created == 1 and report.ran == 1
    assert fire_times(store_dsn, uid) == [START + timedelta(minutes=5)]
    info = await schedules.get(pool, uid)
    assert info is not None
    assert info.next_fire_time == START + timedelta(minutes=10)
    assert info.last_fire_time == START + timedelta(minutes=5)
    assert info.fires_total == 1
    # The runner gets the logical fire time with the claim.
    # The namespace too, so only a runner that serves it claims the run.
    assert await claims.claim(pool, "worker-1", limit=5, namespaces=["elsewhere"]) == []
    [claimed] = await claims.claim(pool, "worker-1", limit=5, namespaces=["default"])
    assert claimed.fire_time == START + timedelta(minutes=5)
    assert claimed.schedule_id == uid
    assert claimed.namespace == "default"


async def test_upsert_keeps_next_fire_time_unless_the_schedule_changes(pool: pool.Pool) -> None:
    uid = await add_schedule(pool, START, "0 * * * *")
    later = START + timedelta(hours=3, minutes=20)  # 13:20 UTC, 18:50 in Kolkata

    async def upsert(schedule: str, time_zone: str | None, generation: int) -> datetime | None:
        result = await schedules.upsert(
            pool,
            uid=uid,
            namespace="default",
            name="hourly",
            generation=generation,
            spec=spec(schedule, time_zone=time_zone, priority=5),
            now=later,
        )
        assert result.applied
        return result.next_fire_time

    # Same text and zone: the stored instant stays, so the 11:00..13:00 fires are still owed.
    assert await upsert("0 * * * *", None, 2) == START + timedelta(hours=1)
    # A new zone changes when it fires: start over from `later`.
    assert await upsert("0 * * * *", "Asia/Kolkata", 3) == datetime(2026, 6, 1, 13, 30, tzinfo=UTC)
    # A new expression too.
    assert await upsert("15 * * * *", "Asia/Kolkata", 4) == datetime(2026, 6, 1, 13, 45, tzinfo=UTC)


async def test_an_older_generation_arriving_late_changes_nothing(pool: pool.Pool) -> None:
    uid = await add_schedule(pool, START, "0 * * * *")
    for generation, schedule in ((5, "30 * * * *"), (4, "45 * * * *")):
        result = await schedules.upsert(
            pool,
            uid=uid,
            namespace="default",
            name="hourly",
            generation=generation,
            spec=spec(schedule),
            now=START,
        )
    assert not result.applied
    info = await schedules.get(pool, uid)
    assert info is not None and info.schedule == "30 * * * *"


async def test_an_invalid_spec_stalls_the_schedule_naming_the_field(pool: pool.Pool) -> None:
    uid = await add_schedule(pool, START, "* * * * *")
    result = await schedules.upsert(
        pool,
        uid=uid,
        namespace="default",
        name="bad",
        generation=2,
        spec=spec("61 * * * *"),
        now=START,
    )
    assert result.stalled is not None and result.stalled.field == "schedule"
    info = await schedules.get(pool, uid)
    assert info is not None and info.stalled_reason == "InvalidSchedule"
    assert info.last_error is not None and "minute" in info.last_error
    # Fixing it clears the stall and starts from the fix.
    fixed = await schedules.upsert(
        pool,
        uid=uid,
        namespace="default",
        name="bad",
        generation=3,
        spec=spec("@hourly"),
        now=START + timedelta(minutes=1),
    )
    assert fixed.stalled is None and fixed.next_fire_time == START + timedelta(hours=1)


async def test_a_schedule_that_never_fires_stalls_instead_of_raising(pool: pool.Pool) -> None:
    uid = await add_schedule(pool, START, "0 0 * * *")
    result = await schedules.upsert(
        pool,
        uid=uid,
        namespace="default",
        name="february-30",
        generation=2,
        spec=spec("0 0 30 2 *"),
        now=START,
    )
    assert result.stalled is not None and result.stalled.field == "schedule"
    info = await schedules.get(pool, uid)
    assert info is not None and info.stalled_reason == "InvalidSchedule"
    assert info.last_error == (
        "schedule: '0 0 30 2 *' never fires: February has no day 30; "
        "change the day-of-month or the month field"
    )


async def test_a_stored_schedule_that_never_fires_stalls_without_stopping_others(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    every_minute = {"schedule": "* * * * *", "concurrency_policy": "Allow"}
    good = await add_schedule(pool, START, **every_minute)
    never = await add_schedule(pool, START, **every_minute)
    with psycopg.connect(store_dsn) as conn:  # stored before parsing refused such schedules
        conn.execute("UPDATE schedules SET cron = '0 0 31 4,6,9,11 *' WHERE id = %s", (never,))
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)

    for minute in (1, 2):
        manual_clock.set(START + timedelta(minutes=minute))
        await loop.tick()

    assert len(fire_times(store_dsn, good)) == 2
    assert fire_times(store_dsn, never) == []
    info = await schedules.get(pool, never)
    assert info is not None and info.stalled_reason == "InvalidSchedule"
    assert info.last_error is not None and "never fires" in info.last_error


async def test_bad_cron_and_zone_rows_do_not_stop_other_schedules(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    every_minute = {"schedule": "* * * * *", "concurrency_policy": "Allow"}
    good = [await add_schedule(pool, START, **every_minute) for _ in range(3)]
    bad_cron = await add_schedule(pool, START, **every_minute)
    bad_zone = await add_schedule(pool, START, **every_minute)
    with psycopg.connect(store_dsn) as conn:  # written behind the operator's back
        conn.execute("UPDATE schedules SET cron = 'every tuesday' WHERE id = %s", (bad_cron,))
        conn.execute("UPDATE schedules SET timezone = 'Mars/Olympus' WHERE id = %s", (bad_zone,))
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)

    for minute in (1, 2, 3):
        manual_clock.set(START + timedelta(minutes=minute))
        await loop.tick()

    for uid in good:
        assert len(fire_times(store_dsn, uid)) == 3
    assert fire_times(store_dsn, bad_cron) == fire_times(store_dsn, bad_zone) == []
    cron_info = await schedules.get(pool, bad_cron)
    zone_info = await schedules.get(pool, bad_zone)
    assert cron_info is not None and cron_info.stalled_reason == "InvalidSchedule"
    assert cron_info.last_error is not None and cron_info.last_error.startswith("schedule:")
    assert zone_info is not None and zone_info.stalled_reason == "UnknownTimeZone"
    assert zone_info.last_error is not None and zone_info.last_error.startswith("timeZone:")


async def test_a_deactivated_schedule_no_longer_fires(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "* * * * *")
    assert await schedules.deactivate(pool, uid)
    manual_clock.set(START + timedelta(minutes=5))
    await trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED).tick()
    assert fire_times(store_dsn, uid) == []


async def test_pod_jobs_are_upserted_with_their_template(pool: pool.Pool, store_dsn: str) -> None:
    uid = uuid.uuid4()
    template = {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}
    pod_spec = scheduled_job.ScheduledJobSpec.model_validate(
        {"schedule": "@daily", "template": template, "timeZone": "Europe/Berlin"}
    )
    result = await schedules.upsert(
        pool, uid=uid, namespace="batch", name="nightly", generation=1, spec=pod_spec, now=START
    )
    assert result.created and result.next_fire_time == datetime(2026, 6, 1, 22, tzinfo=UTC)
    with psycopg.connect(store_dsn) as conn:
        row = conn.execute(
            "SELECT execution_model, pod_template, handler FROM job_definitions WHERE id = %s",
            (uid,),
        ).fetchone()
    assert row is not None and row[0] == "pod" and row[1] == template


async def test_a_run_due_later_waits_as_scheduled_until_promoted(pool: pool.Pool) -> None:
    # By the database clock the spread run_at lies in the future: the run is inserted
    # 'scheduled', out of the dispatch index, and promote_due leaves it there until it is due.
    now = datetime.now(UTC)
    uid = await add_schedule(pool, now, "* * * * *", spread_seconds=3600)
    info = await schedules.get(pool, uid)
    assert info is not None
    simulated = clock.ManualClock(info.next_fire_time)
    [run] = (await trigger.TriggerLoop(pool, clock=simulated, settings=UNPACED).tick()).runs
    assert run.state == "scheduled" and run.run_at > datetime.now(UTC)
    assert await reaper.promote_due(pool) == 0
    assert await claims.claim(pool, "worker-1") == []
