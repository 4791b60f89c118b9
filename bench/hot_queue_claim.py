"""What does dispatch cost on PostgreSQL and on the Redis hot queue, side by side?

Not a test: it prints figures. The same backlog of ``--runs`` due runs over four namespaces is
drained by claims of ``--batch`` runs, one claimer, on a throwaway PostgreSQL (``claims.claim``,
then ``claims.finish`` of what it claimed: the claim's and the finish's row versions) and on a
throwaway Redis (``HotQueue.claim``, then ``HotQueue.release``: the Redis half alone; the
PostgreSQL finish that follows it in the hot-queue design is the same write either way and is
not counted). For each: runs per second, and CPU seconds of the server's processes per run,
read from /proc (PostgreSQL's backends and background processes; redis-server), the
PostgreSQL claim's apart from its finish: the claim's is what the hot queue moves to Redis.

What it does not measure: submissions, the relay that moves runs to Redis, heartbeats, and
the PostgreSQL finish in the hot-queue mode, which writes a `pending` row once instead of a
`running` one; the hot queue is not wired into the runner yet (docs/adr/0024-hot-queue-move.md).

    .venv/bin/python bench/hot_queue_claim.py [--runs 20000] [--batch 1 100 500]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid

import psycopg
import redis.asyncio as aioredis
import stack

from sundial.attempt import finishes
from sundial.localdev import postgres
from sundial.localdev.redis_server import throwaway_redis
from sundial.store import claims
from sundial.store import pool as store_pool
from sundial.store.hot_queue import DueRun, HotQueue

NAMESPACES = ("team-a", "team-b", "team-c", "team-d")


def fill(dsn: str, job: uuid.UUID, count: int) -> None:
    """``count`` pending runs of ``job`` spread over the namespaces, then VACUUM ANALYZE."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                max_retries, backoff_base_seconds, backoff_cap_seconds, max_lost_leases, state,
                priority, run_at, dispatch_key, args, namespace)
            SELECT j.id, j.queue, j.handler, j.execution_model, j.timeout_seconds,
                j.max_retries, j.backoff_base_seconds, j.backoff_cap_seconds,
                j.max_lost_leases, 'pending', j.priority, now(),
                sundial_dispatch_key(now(), j.priority), '{}', (%s::text[])[1 + i %% 4]
            FROM job_definitions j, generate_series(1, %s) i WHERE j.id = %s
            """,
            (list(NAMESPACES), count, job),
        )
        conn.execute("VACUUM ANALYZE job_runs")


def _cpu(pids: list[int]) -> float:
    return sum(stack.cpu_seconds(pid) for pid in pids)


async def drain_postgres(
    dsn: str, server: postgres.ThrowawayPostgres, batch: int
) -> tuple[int, float, float, float]:
    """Runs drained, seconds, and PostgreSQL's CPU seconds in the claims and in the finishes
    (the finish stays in PostgreSQL with the hot queue; the claim is what moves)."""
    pool = await store_pool.open_pool(dsn, min_size=2, max_size=2)
    try:
        await pool.wait()  # its backends exist now, so their CPU is counted
        pids = stack.postgres_pids(server)
        done, in_claims, in_finishes, started = 0, 0.0, 0.0, time.perf_counter()
        while True:
            before = _cpu(pids)
            claimed = await claims.claim(pool, "bench", queues=["bench"], limit=batch)
            between = _cpu(pids)
            in_claims += between - before
            if not claimed:
                break
            await claims.finish(pool, "bench", [finishes.succeeded(run) for run in claimed])
            in_finishes += _cpu(pids) - between
            done += len(claimed)
        return done, time.perf_counter() - started, in_claims, in_finishes
    finally:
        await pool.close()


async def drain_redis(url: str, pid: int, runs: int, batch: int) -> tuple[int, float, float, float]:
    client = aioredis.Redis.from_url(url)
    try:
        await client.flushall()
        queue = HotQueue(client, "bench")
        epoch = await queue.set_epoch(1)
        now_ms = int(time.time() * 1000)
        for first in range(0, runs, 5000):
            await queue.enqueue(
                DueRun(i, now_ms - runs + i, NAMESPACES[i % 4], "bench.run", "async")
                for i in range(first + 1, min(first + 5000, runs) + 1)
            )
        handlers = [("bench.run", "async")]
        done, cpu, started = 0, _cpu([pid]), time.perf_counter()
        while claimed := await queue.claim(epoch, lease_ms=30_000, limit=batch, handlers=handlers):
            released = await queue.release(claimed)
            if not all(released):
                raise SystemExit("a fresh claim's release was refused")
            done += len(claimed)
        return done, time.perf_counter() - started, _cpu([pid]) - cpu, 0.0
    finally:
        await client.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20000)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 100, 500])
    args = parser.parse_args(argv)
    rows: list[list[object]] = []
    with stack.throwaway() as server, throwaway_redis() as redis:
        assert redis.process is not None
        for batch in args.batch:
            runs = args.runs if batch > 1 else min(args.runs, 3000)
            dsn = stack.create_database(server, f"claim_{batch}")
            job = stack.create_job(
                dsn, "bench", "bench.run", queue="bench", execution_model="async"
            )
            fill(dsn, job, runs)
            postgres_alone = asyncio.run(drain_postgres(dsn, server, batch))
            on_redis = asyncio.run(drain_redis(redis.url, redis.process.pid, runs, batch))
            for store, (done, seconds, claiming, finishing) in (
                ("PostgreSQL: claim + finish", postgres_alone),
                ("Redis: claim + release", on_redis),
            ):
                if done != runs:
                    raise SystemExit(f"{store}: drained {done} of {runs}")
                rows.append(
                    [batch, store, f"{runs:,}", f"{done / seconds:,.0f}",
                     f"{claiming / done * 1e6:.1f}",
                     f"{finishing / done * 1e6:.1f}" if finishing else "-"]
                )  # fmt: skip
    print(
        stack.table(
            [
                "batch",
                "dispatch on",
                "runs",
                "runs/s (one claimer)",
                "server CPU µs/run: claim (+ release)",
                "PostgreSQL CPU µs/run: finish",
            ],
            rows,
        )
    )
    print(f"load average {stack.load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
