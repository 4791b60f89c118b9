"""The attempt's heartbeats, as the runner and the pod launcher both use them: only leases due
for an extension are extended, and what the store says about the others comes back to the
holder (lost to another attempt, cancel requested), never acted on behind its back."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sundial.attempt import heartbeats
from sundial.store import claims, reaper, runs
from sundial.store import pool as store_pool
from support.store import create_job


@dataclass
class Held:
    run: claims.ClaimedRun
    extended_at: float

    @property
    def key(self) -> tuple[int, int]:
        return self.run.id, self.run.attempt


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def lease_until(pool: store_pool.Pool, run_id: int) -> object:
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT lease_until FROM job_runs WHERE id = %s", (run_id,))
        row = await cursor.fetchone()
    assert row is not None
    return row[0]


async def hold(pool: store_pool.Pool, dsn: str, count: int, clock: Clock, lease: float) -> dict:
    job = create_job(dsn)
    for _ in range(count):
        await runs.submit(pool, job)
    claimed = await claims.claim(pool, "holder", limit=count, lease_seconds=lease)
    assert len(claimed) == count
    return {run.id: Held(run, clock()) for run in claimed}


async def test_only_attempts_due_for_an_extension_are_extended(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    clock = Clock()
    held = await hold(pool, store_dsn, 2, clock, lease=30.0)
    older, newer = held.values()
    beats = heartbeats.Heartbeats(lambda: pool, "holder", held, lease_seconds=30.0, clock=clock)
    assert beats.interval_seconds == 10.0
    before = {run_id: await lease_until(pool, run_id) for run_id in held}

    clock.now += 5.0  # half an interval: nothing is due
    assert await beats.beat() == heartbeats.Beat()

    newer.extended_at = clock.now  # as if the newer one was claimed now
    clock.now += 4.5  # the older one is due (one tick early), the newer one is not
    beat = await beats.beat()
    assert (beat.extended, beat.lost, beat.cancel_requested) == (1, [], [])
    assert older.extended_at == clock.now
    assert newer.extended_at == clock.now - 4.5
    assert await lease_until(pool, older.run.id) > before[older.run.id]
    assert await lease_until(pool, newer.run.id) == before[newer.run.id]


async def test_a_lost_lease_and_a_cancel_request_come_back_to_the_holder(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    clock = Clock()
    held = await hold(pool, store_dsn, 3, clock, lease=0.3)
    lost, cancelled, kept = held.values()
    await asyncio.sleep(0.4)
    async with pool.connection() as conn:  # the others' leases stay valid
        await conn.execute(
            "UPDATE job_runs SET lease_until = now() + interval '1 minute' WHERE id <> %s",
            (lost.run.id,),
        )
    assert (await reaper.reap(pool)).requeued == {lost.run.id}
    await runs.cancel(pool, cancelled.run.id)

    beats = heartbeats.Heartbeats(
        lambda: pool, "holder", held, lease_seconds=30.0, clock=clock, beats=lambda a: a is not kept
    )
    clock.now += 60.0
    beat = await beats.beat()
    assert beat.lost == [lost]
    assert beat.cancel_requested == [cancelled]
    assert beat.extended == 1
    assert lost.extended_at == 1000.0  # not extended: another attempt may own it now
    assert cancelled.extended_at == clock.now
    assert kept.extended_at == 1000.0  # the holder no longer extends it
