"""The promotion wakes when the next waiting run is due, not only at its interval.

A spread fire, a delayed one-shot and a retry's backoff wait in ``scheduled``/``retry_wait``
until a promotion pass moves them to ``pending``. With passes only every ``promote_interval``
such a run starts up to a whole interval late, which is most of the lag of spread fires at
the seed's peak. The pass now asks the database when the next waiting run is due and the
task is due again then, bounded below by ``promote_min_interval``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from sundial.scheduler import maintainer, trigger
from sundial.scheduling import clock as clocks
from sundial.store import leases
from sundial.store import pool as store_pool
from support.maintainer import HOLDER, insert_run, states

INTERVAL = timedelta(seconds=30)
MIN_INTERVAL = timedelta(milliseconds=200)
SETTINGS = maintainer.MaintainerSettings(
    archive_retention=None, promote_interval=INTERVAL, promote_min_interval=MIN_INTERVAL
)


async def _lead(pool: store_pool.Pool) -> None:
    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=120) is not None


@pytest.mark.parametrize(
    ("run_at_in", "expected"),
    [
        (timedelta(seconds=5), timedelta(seconds=5)),  # sooner than the interval: then
        # Overdue but not promoted (another pass holds it): again, but not sooner than the
        # minimum, however overdue.
        (timedelta(seconds=-3), MIN_INTERVAL),
        (timedelta(hours=1), INTERVAL),  # later than the interval: the interval
        (None, INTERVAL),  # nothing waits: the interval
    ],
)
async def test_the_next_promotion_is_due_when_the_next_waiting_run_is(
    pool: store_pool.Pool,
    store_dsn: str,
    job: uuid.UUID,
    run_at_in: timedelta | None,
    expected: timedelta,
) -> None:
    if run_at_in is not None:
        waiting = insert_run(store_dsn, job, "retry_wait", run_at_in=run_at_in)
    clock = clocks.ManualClock(datetime(2026, 6, 1, 10, 0, tzinfo=UTC))
    keeper = maintainer.Maintainer(pool, holder=HOLDER, clock=clock, settings=SETTINGS)
    await _lead(pool)
    if run_at_in is not None and run_at_in < timedelta(0):
        # Another maintainer's pass holds the overdue run, so this pass skips it.
        with psycopg.connect(store_dsn) as other, other.transaction():
            other.execute("SELECT 1 FROM job_runs WHERE id = %s FOR UPDATE", (waiting,))
            report = await keeper.step()
        assert report.promoted == 0
    else:
        await keeper.step()

    # The other tasks' intervals are 1 s or more, so a sooner promotion shows in next_due.
    soonest = min(expected, SETTINGS.poll_interval)
    wake = keeper.next_due() - clock.now()
    assert soonest - timedelta(milliseconds=300) <= wake <= soonest


async def test_runs_due_in_two_and_four_seconds_are_promoted_then_not_at_the_interval(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    runs = [
        insert_run(store_dsn, job, "scheduled", run_at_in=timedelta(seconds=seconds))
        for seconds in (2, 4)
    ]
    keeper = maintainer.Maintainer(pool, holder=HOLDER, settings=SETTINGS)
    await _lead(pool)
    stop = asyncio.Event()
    started = time.monotonic()
    running = asyncio.create_task(keeper.run(stop))
    try:
        for run in runs:  # the pass that promotes the first learns when the second is due
            while states(store_dsn)[run] == "scheduled":
                assert time.monotonic() - started < INTERVAL.total_seconds() / 2, (
                    "a run was not promoted when it came due"
                )
                await asyncio.sleep(0.05)
        with psycopg.connect(store_dsn) as conn:
            late = conn.execute(
                "SELECT now() - run_at FROM job_runs WHERE id = %s", (runs[1],)
            ).fetchone()
        assert late is not None and timedelta(0) <= late[0] < INTERVAL / 2
    finally:
        stop.set()
        await running
