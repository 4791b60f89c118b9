"""The maintainer's archiving and retention against a real PostgreSQL.

Archiving moves exactly the finished runs older than the hot window (by the database clock) and
leaves active and recent ones, in batches no larger than asked. Retention, on an injected
clock, drops exactly the month partitions whose whole month ended before the retention cutoff
and creates the coming months' partitions; a row in a recent partition stays.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from prometheus_client import REGISTRY

from sundial.scheduler import maintainer, trigger
from sundial.scheduling import clock as clocks
from sundial.store import leases
from sundial.store import pool as store_pool
from support.maintainer import (
    ACTIVE,
    FINISHED,
    HOLDER,
    archived_ids,
    create_partition,
    hot_ids,
    insert_run,
    month_start,
    partition_months,
)

HOT_WINDOW = timedelta(hours=1)
#: Finished this long ago: well inside, or well past, the hot window.
RECENT = (timedelta(0), timedelta(seconds=5), timedelta(minutes=50))
OLD = (timedelta(minutes=70), timedelta(days=2), timedelta(days=40))


def _counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def _lead(pool: store_pool.Pool) -> None:
    lease = await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=300)
    assert lease is not None


@pytest.mark.parametrize("seed", range(4))
async def test_archiving_moves_finished_runs_past_the_hot_window_and_nothing_else(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID, seed: int
) -> None:
    rng = random.Random(seed)
    expected_hot: set[int] = set()
    expected_archived: set[int] = set()
    for _ in range(rng.randint(20, 60)):
        if rng.random() < 0.3:
            expected_hot.add(insert_run(store_dsn, job, rng.choice(ACTIVE)))
        elif rng.random() < 0.5:
            ago = rng.choice(RECENT)
            expected_hot.add(insert_run(store_dsn, job, rng.choice(FINISHED), finished_ago=ago))
        else:
            ago = rng.choice(OLD)
            run = insert_run(store_dsn, job, rng.choice(FINISHED), finished_ago=ago)
            expected_archived.add(run)
    batch, batches = rng.randint(1, 7), rng.randint(1, 3)
    # Retention off: a run archived into a month older than it would be dropped right away.
    settings = maintainer.MaintainerSettings(
        hot_window=HOT_WINDOW,
        archive_retention=None,
        archive_batch=batch,
        max_batches_per_pass=batches,
    )
    keeper = maintainer.Maintainer(pool, holder=HOLDER, settings=settings)
    await _lead(pool)
    archived_before = _counter("sundial_maintainer_runs_archived_total")

    moved = 0
    for _ in range(len(expected_archived) + 2):
        report = await keeper.step()
        assert report.leading
        assert report.archived <= batch * batches  # bounded per pass
        moved += report.archived
        if report.archived == 0:
            break
    assert moved == len(expected_archived)
    assert hot_ids(store_dsn) == expected_hot
    assert archived_ids(store_dsn) == expected_archived
    assert _counter("sundial_maintainer_runs_archived_total") - archived_before == moved


async def test_a_pass_that_hits_its_batch_bound_is_due_again_at_once(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    for _ in range(10):
        insert_run(store_dsn, job, "completed", finished_ago=timedelta(days=1))
    clock = clocks.ManualClock(datetime.now(UTC))
    settings = maintainer.MaintainerSettings(
        hot_window=HOT_WINDOW, archive_batch=3, max_batches_per_pass=2
    )
    keeper = maintainer.Maintainer(pool, holder=HOLDER, clock=clock, settings=settings)
    await _lead(pool)
    # The clock does not move: only a task with work left runs again.
    assert [(await keeper.step()).archived for _ in range(4)] == [6, 4, 0, 0]
    report = await keeper.step()
    assert "archive" not in report.ran and "retention" not in report.ran
    clock.advance(settings.archive_interval)
    assert "archive" in (await keeper.step()).ran


@pytest.mark.parametrize("seed", range(8))
async def test_retention_drops_old_month_partitions_and_keeps_recent_ones(
    pool: store_pool.Pool, store_dsn: str, seed: int
) -> None:
    rng = random.Random(seed)
    retention_days = rng.choice((1, 7, 30, 31, 45, 90, 365))
    base = datetime(2027, 1, 1, tzinfo=UTC) + timedelta(days=rng.randint(0, 700))
    existing = set()
    if seed % 2:
        # The cutoff a second before, at, or a second after the end of a month we have.
        boundary = month_start(base)
        now = boundary + timedelta(days=retention_days, seconds=rng.choice((-1, 0, 1)))
        existing.add(month_start(boundary, -1))
    else:
        now = base + timedelta(seconds=rng.randint(0, 86399))
    existing |= {month_start(now, -offset) for offset in rng.sample(range(0, 16), 8)}
    existing.add(month_start(now))
    for month in existing:
        create_partition(store_dsn, month)
    # A finished run in the oldest and in the current month's partition.
    oldest, current = min(existing), month_start(now)
    with psycopg.connect(store_dsn) as conn:
        for run_id, finished in ((1, oldest + timedelta(days=3)), (2, current)):
            conn.execute(
                "INSERT INTO finished_runs (id, job_id, queue, handler, execution_model, state,"
                " priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,"
                " args, created_at, finished_at) VALUES (%s, gen_random_uuid(), 'default',"
                " 'h', 'async', 'completed', 1, %s, 1, 0, 0, 0, '{}', %s, %s)",
                (run_id, finished, finished, finished),
            )
    clock = clocks.ManualClock(now)
    settings = maintainer.MaintainerSettings(
        hot_window=timedelta(0),
        archive_retention=timedelta(days=retention_days),
        max_batches_per_pass=rng.randint(1, 5),
    )
    keeper = maintainer.Maintainer(pool, holder=HOLDER, clock=clock, settings=settings)
    await _lead(pool)
    dropped_before = _counter("sundial_maintainer_partitions_dropped_total")

    dropped: list[str] = []
    for _ in range(40):  # the clock stands still: retention reruns only while work is left
        report = await keeper.step()
        if "retention" not in report.ran:
            break
        assert len(report.partitions_dropped) <= settings.max_batches_per_pass
        dropped += report.partitions_dropped
    cutoff = now - timedelta(days=retention_days)
    ahead = {month_start(now, months) for months in range(settings.months_ahead + 1)}
    kept = {month for month in existing | ahead if month_start(month, 1) > cutoff}
    assert partition_months(store_dsn) == {"finished_runs": kept, "job_run_attempts": kept}
    gone = {month for month in existing if month_start(month, 1) <= cutoff}
    assert len(dropped) == 2 * len(gone)  # both history tables, each month once
    assert _counter("sundial_maintainer_partitions_dropped_total") - dropped_before == len(dropped)
    assert archived_ids(store_dsn) == ({1} if oldest in kept else set()) | {2}


async def test_retention_zero_keeps_every_partition(pool: store_pool.Pool, store_dsn: str) -> None:
    now = datetime(2030, 6, 15, tzinfo=UTC)
    create_partition(store_dsn, datetime(2020, 1, 1, tzinfo=UTC))
    settings = maintainer.MaintainerSettings(archive_retention=None)
    keeper = maintainer.Maintainer(
        pool, holder=HOLDER, clock=clocks.ManualClock(now), settings=settings
    )
    await _lead(pool)
    report = await keeper.step()
    assert "retention" in report.ran and report.partitions_dropped == ()
    assert datetime(2020, 1, 1, tzinfo=UTC) in partition_months(store_dsn)["finished_runs"]
    assert month_start(now, 2) in partition_months(store_dsn)["finished_runs"]


def test_settings_refuse_a_retention_shorter_than_the_hot_window() -> None:
    with pytest.raises(ValueError, match="must be longer than hot_window"):
        maintainer.MaintainerSettings(
            hot_window=timedelta(days=40), archive_retention=timedelta(days=30)
        )
    with pytest.raises(ValueError, match="archive_batch must be at least 1"):
        maintainer.MaintainerSettings(archive_batch=0)
