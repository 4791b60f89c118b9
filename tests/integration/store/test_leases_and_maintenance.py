"""Leader leases, archiving finished runs to month partitions, retention, monitoring queries."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import psycopg

from sundial.attempt import finishes
from sundial.store import claims, leases, maintenance, monitoring, runs
from sundial.store import pool as store_pool


async def test_one_leader_at_a_time_and_the_epoch_grows_on_takeover(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    first = await leases.acquire(pool, "trigger", "a", ttl_seconds=30)
    assert first is not None and first.epoch == 1
    assert await leases.acquire(pool, "trigger", "b", ttl_seconds=30) is None
    renewed = await leases.acquire(pool, "trigger", "a", ttl_seconds=30)
    assert renewed is not None and renewed.epoch == 1
    with psycopg.connect(store_dsn) as conn:  # time passes: a's lease runs out
        conn.execute("UPDATE leader_leases SET expires_at = now() - interval '1 second'")
    taken = await leases.acquire(pool, "trigger", "b", ttl_seconds=30)
    assert taken is not None and taken.epoch == 2
    assert await leases.resign(pool, first) is False  # a lost it; it cannot resign b's
    assert await leases.resign(pool, taken) is True
    back = await leases.acquire(pool, "trigger", "a", ttl_seconds=30)
    assert back is not None and back.epoch == 3


async def test_finished_runs_move_to_month_partitions_and_retention_drops_them(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    live = await runs.submit(pool, job)
    done = await runs.submit(pool, job, idempotency_key="kept")
    [run] = await claims.claim(pool, "w", limit=1)
    await claims.finish(pool, "w", [finishes.succeeded(run)])
    assert run.id == live.run_id
    # Pretend the other one finished two months ago and failed once before.
    with psycopg.connect(store_dsn) as conn:
        conn.execute(
            "UPDATE job_runs SET state = 'completed', finished_at = now() - interval '62 days' "
            "WHERE id = %s",
            (done.run_id,),
        )
    assert await maintenance.archive_finished(pool, older_than_seconds=3600) == 1
    assert await maintenance.archive_finished(pool, older_than_seconds=0) == 1
    with psycopg.connect(store_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM job_runs").fetchone() == (0,)
        partitions = conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'finished_runs'::regclass"
        ).fetchone()
    assert partitions is not None and partitions[0] >= 1
    dropped = await maintenance.drop_partitions_before(
        pool, datetime.now(UTC).replace(day=1) - timedelta(days=1)
    )
    assert any(name.startswith("finished_runs_") for name in dropped.dropped)
    assert dropped.busy == ()
    assert await runs.get(pool, done.run_id) is None  # its month is gone
    assert await runs.get(pool, live.run_id) is not None  # this month is kept
    again = await runs.submit(pool, job, idempotency_key="kept")
    assert (again.run_id, again.created) == (done.run_id, False)  # the key outlived the run


async def test_monitoring_queries_report_the_seed_metrics(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    await runs.submit(pool, job, priority=3)
    await runs.submit(pool, job, priority=3)
    await runs.submit(pool, job, priority=1, delay_seconds=600)
    depth = await monitoring.pending_depth(pool)
    assert depth == [
        monitoring.PendingDepth("default", 3, "pending", 2),
        monitoring.PendingDepth("default", 1, "scheduled", 1),
    ]
    batch = await claims.claim(pool, "w", limit=2)
    await claims.finish(pool, "w", [finishes.succeeded(batch[0]), finishes.cancelled(batch[1])])
    lag = await monitoring.schedule_lag(pool)
    assert lag.runs == 2 and lag.p50_seconds is not None and lag.p99_seconds is not None
    assert 0 <= lag.p50_seconds <= lag.p99_seconds < 60
    assert await monitoring.finished_runs_by_job(pool) == {
        (job, "cancelled"): 1,
        (job, "completed"): 1,
    }
    assert await monitoring.attempts_per_completed_run(pool) == {1: 1}
    assert await monitoring.lease_expiries(pool) == 0
