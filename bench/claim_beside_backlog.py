"""What does a claim cost beside a backlog it cannot take? Claims of a quiet queue while
another queue of the same namespace holds N pending runs.

Not a test: it prints figures. A throwaway PostgreSQL, one namespace, a ``bulk`` queue filled
with ``--backlog`` pending runs (each size in turn, on a fresh database) that nobody claims,
and a ``quiet`` queue. It times ``claims.claim`` of the quiet queue: one run just submitted,
claimed with one slot and with 64; and a claim of a queue with nothing in it. Each figure is
the median and the 90th percentile of ``--claims`` claims, after 10 to warm up.

A claim should cost about the same whatever the other queue holds: a runner of one queue
that pays for another queue's backlog on every claim slows down exactly when the system is
busiest.

    .venv/bin/python bench/claim_beside_backlog.py [--backlog 2000 50000] [--claims 60]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid

import psycopg
import stack

from sundial.attempt import finishes
from sundial.store import claims, runs
from sundial.store import pool as store_pool


def fill(dsn: str, job: uuid.UUID, count: int) -> None:
    """``count`` pending runs of ``job`` in one INSERT, then VACUUM ANALYZE (a settled table)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                max_retries, backoff_base_seconds, backoff_cap_seconds, max_lost_leases, state,
                priority, run_at, dispatch_key, args, namespace)
            SELECT j.id, j.queue, j.handler, j.execution_model, j.timeout_seconds,
                j.max_retries, j.backoff_base_seconds, j.backoff_cap_seconds,
                j.max_lost_leases, 'pending', j.priority, now(),
                sundial_dispatch_key(now(), j.priority), '{}', j.namespace
            FROM job_definitions j, generate_series(1, %s) WHERE j.id = %s
            """,
            (count, job),
        )
        conn.execute("VACUUM ANALYZE job_runs")


async def timed_claims(
    pool: store_pool.Pool, job: uuid.UUID | None, count: int, **kwargs: object
) -> list[float]:
    """Milliseconds per claim; with ``job``, a run of it is submitted before each claim."""
    timings = []
    for _ in range(count + 10):
        if job is not None:
            await runs.submit(pool, job)
        started = time.perf_counter()
        claimed = await claims.claim(pool, "bench", **kwargs)  # type: ignore[arg-type]
        timings.append((time.perf_counter() - started) * 1000)
        if job is not None and len(claimed) != 1:
            raise SystemExit(f"expected to claim the quiet run, claimed {len(claimed)}")
        if claimed:
            await claims.finish(pool, "bench", [finishes.succeeded(run) for run in claimed])
    return timings[10:]


async def measure(dsn: str, backlog: int, count: int) -> list[list[object]]:
    bulk = stack.create_job(dsn, "bulk", "bench.bulk", queue="bulk", execution_model="async")
    quiet = stack.create_job(dsn, "quiet", "bench.quiet", queue="quiet", execution_model="async")
    fill(dsn, bulk, backlog)
    pool = await store_pool.open_pool(dsn, max_size=2)
    rows: list[list[object]] = []
    try:
        for what, job, kwargs in (
            ("quiet queue, 1 slot", quiet, {"queues": ["quiet"], "limit": 1}),
            ("quiet queue, 64 slots", quiet, {"queues": ["quiet"], "limit": 64}),
            ("empty queue, 64 slots", None, {"queues": ["empty"], "limit": 64}),
        ):
            timings = await timed_claims(pool, job, count, **kwargs)
            rows.append(
                [
                    f"{backlog:,}",
                    what,
                    f"{stack.quantile(timings, 0.5):.2f}",
                    f"{stack.quantile(timings, 0.9):.2f}",
                ]
            )
    finally:
        await pool.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=int, nargs="+", default=[2000, 50000])
    parser.add_argument("--claims", type=int, default=60)
    args = parser.parse_args(argv)
    rows: list[list[object]] = []
    with stack.throwaway() as server:
        for backlog in args.backlog:
            dsn = stack.create_database(server, f"beside_{backlog}")
            rows += asyncio.run(measure(dsn, backlog, args.claims))
    print(
        stack.table(
            ["other queue's backlog", "claim", "median ms", "p90 ms"],
            rows,
        )
    )
    print(f"load average {stack.load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
