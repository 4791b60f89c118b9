"""Exactly one claim: worker processes racing over 10,000 runs complete each exactly once."""

from __future__ import annotations

import asyncio
import multiprocessing
import uuid

import psycopg

from sundial.attempt import finishes
from sundial.store import claims
from sundial.store import pool as store_pool

RUNS = 10_000
WORKERS = 3
BATCH = 100


def insert_runs(dsn: str, job: uuid.UUID, count: int) -> None:
    """Bulk-insert pending runs (submit() one by one would dominate the test's time)."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds,
                                  state, priority, run_at, dispatch_key, args)
            SELECT %s, 'default', 'handlers.job', 'async', 60, 3, 0, 0, 'pending',
                   (n %% 10)::smallint, now(),
                   sundial_dispatch_key(now(), (n %% 10)::smallint), jsonb_build_object('n', n)
            FROM generate_series(1, %s) AS n
            """,
            (job, count),
        )


async def _work(dsn: str, worker: str) -> list[tuple[int, int]]:
    pool = await store_pool.open_pool(dsn, max_size=1)
    finished: list[tuple[int, int]] = []
    try:
        while True:
            batch = await claims.claim(pool, worker, limit=BATCH)
            if not batch:
                return finished
            result = await claims.finish(pool, worker, [finishes.succeeded(r) for r in batch])
            assert not result.lost
            finished.extend((run_id, next(r.attempt for r in batch if r.id == run_id))
                            for run_id in result.states)  # fmt: skip
    finally:
        await pool.close()


def worker_process(dsn: str, worker: str) -> list[tuple[int, int]]:
    return asyncio.run(_work(dsn, worker))


def test_concurrent_claimers_complete_every_run_exactly_once(
    store_dsn: str, job: uuid.UUID
) -> None:
    insert_runs(store_dsn, job, RUNS)
    context = multiprocessing.get_context("spawn")
    with context.Pool(WORKERS) as processes:
        results = processes.starmap(
            worker_process, [(store_dsn, f"worker-{i}") for i in range(WORKERS)]
        )
    finished = [run_id for per_worker in results for run_id, _ in per_worker]
    assert len(finished) == RUNS, "a run was lost or completed twice"
    assert len(set(finished)) == RUNS
    assert {attempt for per_worker in results for _, attempt in per_worker} == {1}
    with psycopg.connect(store_dsn) as conn:
        rows = conn.execute(
            "SELECT state, attempt, count(*) FROM job_runs GROUP BY 1, 2"
        ).fetchall()
    assert rows == [("completed", 1, RUNS)]
