"""What does a run's whole trip through the store cost on PostgreSQL alone and with the Redis
hot queue, side by side, at 1, 2 and 4 claimers?

Not a test: it prints figures. For each mode and each number of claimers, on one throwaway
PostgreSQL and one throwaway Redis on this machine: ``--runs`` runs are submitted through the
store (``runs.submit_many``, batches of 1,000 over four namespaces); with the hot queue the
outbox is on and the relay moves them to Redis; then the claimers (separate processes, started
together) claim ``--batch`` runs at a time and finish them as succeeded until none is left:
``claims.claim`` + ``claims.finish`` on PostgreSQL alone, ``HotQueue.claim`` +
``finishes.finish`` (release in Redis, fenced write in PostgreSQL) with the hot queue.

Printed per row: the drain's runs/s; PostgreSQL's CPU µs and WAL bytes per run over the whole
trip (submit, relay, claim, finish) and over the drain alone (claim + finish: what the claimers
add, the part that grows with dispatch); Redis's CPU µs per run. Heartbeats are not sent (the
runs end at once), and no handler runs: this is the store's cost, the ceiling a runner meets.

    .venv/bin/python bench/hot_queue_path.py [--runs 20000] [--batch 100] [--claimers 1 2 4]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import time
import uuid
from typing import Any

import psycopg
import redis.asyncio as aioredis
import stack

from sundial.localdev.redis_server import throwaway_redis
from sundial.store import claims, runs
from sundial.store import pool as store_pool
from sundial.store.hot_queue import HotQueue, finishes, outbox

NAMESPACES = ("team-a", "team-b", "team-c", "team-d")
HANDLER = "bench.run"


def _wal_lsn(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(row[0])


async def _submit(dsn: str, jobs: list[uuid.UUID], count: int) -> None:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=1)
    try:
        for first in range(0, count, 1000):
            job = jobs[(first // 1000) % len(jobs)]
            size = min(1000, count - first)
            await runs.submit_many(pool, job, [runs.BatchItem() for _ in range(size)])
    finally:
        await pool.close()


async def _flush(url: str) -> None:
    client = aioredis.Redis.from_url(url)
    await client.flushall()
    await client.aclose()


async def _relay(dsn: str, url: str) -> None:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=1)
    client = aioredis.Redis.from_url(url)
    try:
        relay = outbox.Relay(pool, client)
        while (await relay.once(limit=2000)).runs:
            pass
        queue = HotQueue(client, "bench")
        if await queue.epoch() is None:
            await queue.renew_epoch(pool)
    finally:
        await client.aclose()
        await pool.close()


async def _drain(mode: str, dsn: str, url: str, batch: int, name: str) -> int:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=1)
    client = aioredis.Redis.from_url(url)
    done = 0
    try:
        if mode == "postgresql":
            while claimed := await claims.claim(pool, name, queues=["bench"], limit=batch):
                outcomes = [claims.Finish(run.id, run.attempt) for run in claimed]
                done += len((await claims.finish(pool, name, outcomes)).states)
            return done
        queue = HotQueue(client, "bench")
        epoch = await queue.epoch()
        assert epoch is not None
        pairs = [(HANDLER, "async")]
        while got := await queue.claim(epoch, lease_ms=30_000, limit=batch, handlers=pairs):
            ended = [finishes.HotFinish(claims.Finish(c.id, c.token.attempt), c) for c in got]
            done += len((await finishes.finish(pool, queue, name, ended)).states)
        return done
    finally:
        await client.aclose()
        await pool.close()


def _claimer(mode: str, dsn: str, url: str, batch: int, name: str, start: Any, out: Any) -> None:
    start.wait()
    out.put(asyncio.run(_drain(mode, dsn, url, batch, name)))


def measure(
    server: Any, redis_url: str, redis_pid: int, mode: str, claimers: int, count: int, batch: int
) -> list[object]:
    dsn = stack.create_database(server, f"path_{mode}_{claimers}")
    jobs = [
        stack.create_job(dsn, f"bench-{ns}", HANDLER, namespace=ns, queue="bench",
                         execution_model="async")
        for ns in NAMESPACES
    ]  # fmt: skip
    if mode == "redis":
        outbox.switch(dsn, on=True)
        asyncio.run(_flush(redis_url))  # run ids start again at 1 in this database
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    cpu0, redis0 = stack.postgres_cpu_seconds(server), stack.cpu_seconds(redis_pid)
    wal0 = _wal_lsn(dsn)

    asyncio.run(_submit(dsn, jobs, count))
    if mode == "redis":
        asyncio.run(_relay(dsn, redis_url))

    context = multiprocessing.get_context("fork")
    start, out = context.Event(), context.Queue()
    workers = [
        context.Process(target=_claimer, args=(mode, dsn, redis_url, batch, f"w{i}", start, out))
        for i in range(claimers)
    ]
    for worker in workers:
        worker.start()
    time.sleep(1.0)  # each has imported and waits at the gate
    cpu1 = stack.postgres_cpu_seconds(server)
    wal1 = _wal_lsn(dsn)
    began = time.perf_counter()
    start.set()
    done = sum(out.get(timeout=600) for _ in workers)
    seconds = time.perf_counter() - began
    for worker in workers:
        worker.join()
    cpu2, redis2 = stack.postgres_cpu_seconds(server), stack.cpu_seconds(redis_pid)
    wal2 = _wal_lsn(dsn)
    if done != count:
        raise SystemExit(f"{mode} with {claimers} claimers finished {done} of {count}")
    label = "PostgreSQL alone" if mode == "postgresql" else "Redis hot queue"
    return [
        label,
        claimers,
        f"{done / seconds:,.0f}",
        f"{(cpu2 - cpu0) / done * 1e6:.0f}",
        f"{(cpu2 - cpu1) / done * 1e6:.0f}",
        f"{(wal2 - wal0) / done:,.0f}",
        f"{(wal2 - wal1) / done:,.0f}",
        f"{(redis2 - redis0) / done * 1e6:.0f}" if mode == "redis" else "-",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--claimers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args(argv)
    rows = []
    with stack.throwaway() as server, throwaway_redis() as redis:
        assert redis.process is not None
        for claimers in args.claimers:
            for mode in ("postgresql", "redis"):
                rows.append(
                    measure(server, redis.url, redis.process.pid, mode, claimers, args.runs,
                            args.batch)
                )  # fmt: skip
    print(f"{args.runs:,} runs, claims of {args.batch}, one PostgreSQL and one Redis here")
    print(
        stack.table(
            [
                "store",
                "claimers",
                "drain runs/s",
                "PG CPU µs/run: trip",
                "PG CPU µs/run: drain",
                "PG WAL B/run: trip",
                "PG WAL B/run: drain",
                "Redis CPU µs/run",
            ],
            rows,
        )
    )
    print(f"load average {stack.load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
