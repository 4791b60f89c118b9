"""Missed fires, suspend, concurrency and quarantine, through the database and the loop."""

from __future__ import annotations

import uuid
from datetime import timedelta

import prometheus_client
import pytest

from sundial.attempt import finishes
from sundial.scheduler import trigger
from sundial.scheduling import clock
from sundial.store import claims, pool, runs, schedules
from support import trigger as trigger_testing
from support.trigger import START, UNPACED, add_schedule, fire_times


async def test_two_hours_of_downtime_coalesce_one_backfill_five_skip_none(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    coalesce = await add_schedule(pool, START, "*/5 * * * *")
    backfill = await add_schedule(
        pool,
        START,
        "*/5 * * * *",
        missed_fire_policy="Backfill",
        max_backfill=5,
        concurrency_policy="Allow",
    )
    skip = await add_schedule(pool, START, "*/5 * * * *", missed_fire_policy="Skip")
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)

    # The trigger was down from 10:00 to 12:02:30: 24 fires (10:05 .. 12:00) came due unseen,
    # and the newest, 12:00, is 150 s late, past the 60 s on-time tolerance.
    manual_clock.set(START + timedelta(hours=2, minutes=2, seconds=30))
    report = await loop.tick()

    noon = START + timedelta(hours=2)
    assert fire_times(store_dsn, coalesce) == [noon]
    assert fire_times(store_dsn, backfill) == [
        noon - timedelta(minutes=5 * k) for k in range(4, -1, -1)
    ]
    assert fire_times(store_dsn, skip) == []
    assert (report.ran, report.backfilled, report.coalesced, report.skipped) == (2, 4, 23, 24 + 19)
    for uid in (coalesce, backfill, skip):
        info = await schedules.get(pool, uid)
        assert info is not None and info.next_fire_time == noon + timedelta(minutes=5)
    info = await schedules.get(pool, coalesce)
    assert info is not None and (info.fires_total, info.fires_coalesced) == (1, 23)
    info = await schedules.get(pool, skip)
    assert info is not None and (info.fires_total, info.fires_skipped) == (0, 24)


async def test_suspended_schedules_do_not_fire_and_resume_through_the_missed_fire_policy(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "* * * * *", concurrency_policy="Allow")
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)
    assert await schedules.set_suspended(pool, uid, True)

    for minute in range(1, 31):
        manual_clock.set(START + timedelta(minutes=minute, seconds=1))
        await loop.tick()
    assert fire_times(store_dsn, uid) == []

    assert await schedules.set_suspended(pool, uid, False)
    await loop.tick()  # 10:30:01: 30 fires owed; Coalesce makes one run, for 10:30
    assert fire_times(store_dsn, uid) == [START + timedelta(minutes=30)]
    info = await schedules.get(pool, uid)
    assert info is not None and info.fires_coalesced == 29


async def _running_run(pool: pool.Pool, uid: uuid.UUID, loop: trigger.TriggerLoop) -> int:
    """Fire once and claim the run: a long-running job the next fire will meet."""
    await loop.tick()
    [claimed] = await claims.claim(pool, "worker-1", limit=10, lease_seconds=3600)
    assert claimed.schedule_id == uid
    return claimed.id


@pytest.mark.parametrize(
    ("policy", "created", "skipped", "cancelled", "fire_minutes"),
    [
        # Forbid: the fire is skipped (JobAlreadyActive); the running run is left alone.
        ("Forbid", 0, 1, 0, [1]),
        # Allow: a second run starts beside the running one.
        ("Allow", 1, 0, 0, [1, 2]),
        # Replace: the running run is cancelled the way runs.cancel does it (its worker is
        # told, on its next heartbeat), then the new one starts.
        ("Replace", 1, 0, 1, [1, 2]),
    ],
)
async def test_a_fire_that_meets_a_running_run_follows_the_concurrency_policy(
    pool: pool.Pool,
    store_dsn: str,
    manual_clock: clock.ManualClock,
    policy: str,
    created: int,
    skipped: int,
    cancelled: int,
    fire_minutes: list[int],
) -> None:
    uid = await add_schedule(pool, START, "* * * * *", concurrency_policy=policy)
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)
    manual_clock.set(START + timedelta(minutes=1))
    running = await _running_run(pool, uid, loop)

    manual_clock.set(START + timedelta(minutes=2))
    report = await loop.tick()

    assert (report.created, report.skipped, report.cancelled) == (created, skipped, cancelled)
    assert any("JobAlreadyActive" in outcome.events for outcome in report.outcomes) == (
        policy == "Forbid"
    )
    assert fire_times(store_dsn, uid) == [START + timedelta(minutes=k) for k in fire_minutes]
    info = await runs.get(pool, running)
    assert info is not None and info.state == "running"
    assert info.cancel_requested == bool(cancelled)
    beat = await claims.heartbeat(pool, "worker-1", [(running, 1)])
    assert (running in beat.cancel_requested) == bool(cancelled)


async def test_replace_ends_a_run_that_has_not_started(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "* * * * *", concurrency_policy="Replace")
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)
    manual_clock.set(START + timedelta(minutes=1))
    [first] = (await loop.tick()).runs
    manual_clock.set(START + timedelta(minutes=2))
    await loop.tick()
    info = await runs.get(pool, first.run_id)
    assert info is not None and info.state == "cancelled"
    assert fire_times(store_dsn, uid) == [START + timedelta(minutes=k) for k in (1, 2)]


async def _fail_everything(pool: pool.Pool) -> int:
    claimed = await claims.claim(pool, "worker-1", limit=100)
    await claims.finish(pool, "worker-1", [finishes.failed(run, "boom") for run in claimed])
    return len(claimed)


async def test_quarantine_after_n_failed_runs_until_cleared(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "* * * * *", quarantine_after=3, retry={"maxRetries": 0})
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)
    for minute in (1, 2, 3):
        manual_clock.set(START + timedelta(minutes=minute))
        await loop.tick()
        assert await _fail_everything(pool) == 1

    manual_clock.set(START + timedelta(minutes=4))
    report = await loop.tick()
    assert report.created == 0 and report.quarantined == 1
    info = await schedules.get(pool, uid)
    assert info is not None and info.quarantined and info.consecutive_failures == 3
    assert info.quarantine_message is not None and "quarantineAfter: 3" in info.quarantine_message

    for minute in range(5, 10):  # quarantined: no fires
        manual_clock.set(START + timedelta(minutes=minute))
        await loop.tick()
    assert len(fire_times(store_dsn, uid)) == 3

    assert await schedules.clear_quarantine(pool, uid)
    report = await loop.tick()  # the streak is forgotten; the missed fires coalesce into one
    assert report.created == 1 and report.quarantined == 0
    info = await schedules.get(pool, uid)
    assert info is not None and not info.quarantined and info.consecutive_failures == 0


async def test_a_new_generation_lifts_a_quarantine_and_the_same_one_does_not(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "* * * * *", quarantine_after=2, retry={"maxRetries": 0})
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)
    for minute in (1, 2):
        manual_clock.set(START + timedelta(minutes=minute))
        await loop.tick()
        assert await _fail_everything(pool) == 1
    manual_clock.set(START + timedelta(minutes=3))
    assert (await loop.tick()).quarantined == 1

    async def apply(generation: int) -> None:
        await schedules.upsert(
            pool,
            uid=uid,
            namespace="default",
            name=(await _job_name(pool, uid)),
            generation=generation,
            spec=trigger_testing.spec("* * * * *", quarantine_after=2, retry={"maxRetries": 1}),
            now=START + timedelta(minutes=3),
        )

    await apply(1)  # the operator's resync of the same generation: still quarantined
    info = await schedules.get(pool, uid)
    assert info is not None and info.quarantined

    await apply(2)  # a spec change: the person fixed the job
    info = await schedules.get(pool, uid)
    assert info is not None and not info.quarantined and info.consecutive_failures == 0
    assert info.quarantine_message is None
    manual_clock.set(START + timedelta(minutes=4))
    report = await loop.tick()
    assert report.created == 1 and report.quarantined == 0


async def _job_name(pool: pool.Pool, uid: uuid.UUID) -> str:
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT name FROM job_definitions WHERE id = %s", (uid,))
        row = await cursor.fetchone()
    assert row is not None
    return str(row[0])


async def test_a_success_breaks_the_failure_streak(
    pool: pool.Pool, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "* * * * *", quarantine_after=2, retry={"maxRetries": 0})
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)
    outcomes = ["failed", "succeeded", "failed", "succeeded", "failed"]
    for minute, outcome in enumerate(outcomes, start=1):
        manual_clock.set(START + timedelta(minutes=minute))
        assert (await loop.tick()).created == 1
        [run] = await claims.claim(pool, "worker-1")
        done = finishes.failed(run, "boom") if outcome == "failed" else finishes.succeeded(run)
        await claims.finish(pool, "worker-1", [done])
    manual_clock.set(START + timedelta(minutes=6))
    assert (await loop.tick()).created == 1
    info = await schedules.get(pool, uid)
    assert info is not None and not info.quarantined and info.consecutive_failures == 1


def _fires(outcome: str) -> float:
    return (
        prometheus_client.REGISTRY.get_sample_value("sundial_fires_total", {"outcome": outcome})
        or 0.0
    )


async def test_fires_are_counted_by_outcome_in_metrics(
    pool: pool.Pool, manual_clock: clock.ManualClock
) -> None:
    await add_schedule(pool, START, "*/5 * * * *")
    await add_schedule(pool, START, "*/5 * * * *", missed_fire_policy="Skip")
    before = {outcome: _fires(outcome) for outcome in ("ran", "coalesced", "skipped")}
    lag_before = prometheus_client.REGISTRY.get_sample_value(
        "sundial_fire_creation_lag_seconds_count"
    )
    manual_clock.set(START + timedelta(minutes=32))  # 10:05 .. 10:30 due, 10:30 is 2 min late
    await trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED).tick()
    assert _fires("ran") - before["ran"] == 1
    assert _fires("coalesced") - before["coalesced"] == 5
    assert _fires("skipped") - before["skipped"] == 6
    lag_after = prometheus_client.REGISTRY.get_sample_value(
        "sundial_fire_creation_lag_seconds_count"
    )
    assert lag_after is not None and lag_after - (lag_before or 0.0) == 1


async def test_buffer_one_keeps_one_fire_waiting_and_starts_it_when_the_run_ends(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "* * * * *", concurrency_policy="BufferOne")
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)
    manual_clock.set(START + timedelta(minutes=1))
    running = await _running_run(pool, uid, loop)

    # 10:02 meets the running run: it waits. 10:03 finds one waiting: skipped.
    manual_clock.set(START + timedelta(minutes=2))
    report = await loop.tick()
    assert (report.created, report.buffered, report.skipped) == (0, 1, 0)
    assert [outcome.events for outcome in report.outcomes] == [("FireBuffered",)]
    manual_clock.set(START + timedelta(minutes=3))
    report = await loop.tick()
    assert (report.created, report.buffered, report.skipped) == (0, 0, 1)
    assert [outcome.events for outcome in report.outcomes] == [("BufferFull",)]
    manual_clock.set(START + timedelta(minutes=3, seconds=20))
    assert (await loop.tick()).created == 0  # still running: nothing starts
    assert fire_times(store_dsn, uid) == [START + timedelta(minutes=1)]

    # The run ends: the next pass, between two fire times, starts the waiting 10:02, due now.
    await claims.finish(pool, "worker-1", [claims.Finish(running, 1)])
    ended = START + timedelta(minutes=3, seconds=30)
    manual_clock.set(ended)
    report = await loop.tick()
    assert (report.created, report.released) == (1, 1)
    [released] = report.runs
    assert released.fire_time == START + timedelta(minutes=2)
    assert (released.run_at, released.state) == (ended, "pending")
    info = await schedules.get(pool, uid)
    assert info is not None
    assert (info.fires_total, info.fires_skipped) == (2, 1)
    assert (await loop.tick()).created == 0  # started once

    # 10:04 meets the released run (pending, not yet claimed): it waits in turn.
    manual_clock.set(START + timedelta(minutes=4))
    report = await loop.tick()
    assert (report.created, report.buffered) == (0, 1)
    assert fire_times(store_dsn, uid) == [START + timedelta(minutes=k) for k in (1, 2)]


async def test_a_waiting_fire_is_forgotten_when_the_policy_changes(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "* * * * *", concurrency_policy="BufferOne")
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=UNPACED)
    manual_clock.set(START + timedelta(minutes=1))
    running = await _running_run(pool, uid, loop)
    manual_clock.set(START + timedelta(minutes=2))
    assert (await loop.tick()).buffered == 1

    await schedules.upsert(
        pool,
        uid=uid,
        namespace="default",
        name=await _job_name(pool, uid),
        generation=2,
        spec=trigger_testing.spec("* * * * *", concurrency_policy="Forbid"),
        now=START + timedelta(minutes=2),
    )
    await claims.finish(pool, "worker-1", [claims.Finish(running, 1)])
    manual_clock.set(START + timedelta(minutes=2, seconds=30))
    report = await loop.tick()
    assert (report.created, report.released) == (0, 0)
    assert fire_times(store_dsn, uid) == [START + timedelta(minutes=1)]
