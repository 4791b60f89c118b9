"""What the keys cost and how fast the maintainer's key retention deletes them.

Not a test: prints figures. One throwaway PostgreSQL: ``--keys`` runs submitted with
idempotency keys (``runs.submit_many``, batches of 1,000) and ``--fires`` fire keys (rows of
``schedule_fires`` as the trigger writes them, for one schedule), then every run archived and
the keys aged past the key retention; then ``maintenance.expire_keys`` in the maintainer's
batches until nothing is left. Reports bytes per key (heap and every index, migration 0170's
``created_at`` index included), keys deleted per second, the PostgreSQL CPU per deleted key,
and what the tables weigh after autovacuum had a pass.

    .venv/bin/python bench/key_retention.py [--keys 200000] [--fires 200000] [--batch 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Callable

import psycopg
import stack

from sundial.store import maintenance, runs
from sundial.store import pool as store_pool

SIZES = """
SELECT pg_total_relation_size('idempotency_keys')::float8
         / greatest(1, (SELECT count(*) FROM idempotency_keys)),
       pg_total_relation_size('schedule_fires')::float8
         / greatest(1, (SELECT count(*) FROM schedule_fires)),
       pg_total_relation_size('idempotency_keys'), pg_total_relation_size('schedule_fires'),
       pg_relation_size('idempotency_keys_created_idx')::float8
         / greatest(1, (SELECT count(*) FROM idempotency_keys)),
       pg_relation_size('schedule_fires_created_idx')::float8
         / greatest(1, (SELECT count(*) FROM schedule_fires))
"""


async def fill(dsn: str, job: uuid.UUID, keys: int) -> None:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=2)
    try:
        for first in range(0, keys, 1000):
            items = [
                runs.BatchItem(idempotency_key=f"bench-key-{n:09d}")
                for n in range(first, min(keys, first + 1000))
            ]
            await runs.submit_many(pool, job, items)
    finally:
        await pool.close()


async def expire(dsn: str, batch: int, sample: Callable[[], None]) -> tuple[int, int, int]:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=1)
    try:
        keys = fires = calls = 0
        sample()  # the pool's backend counts from here
        while True:
            done = await maintenance.expire_keys(pool, older_than_seconds=86400, batch_size=batch)
            sample()
            keys, fires, calls = (
                keys + done.idempotency_keys,
                fires + done.schedule_fires,
                calls + 1,
            )
            if max(done.idempotency_keys, done.schedule_fires) < batch:
                return keys, fires, calls
    finally:
        await pool.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--fires", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=5000)
    options = parser.parse_args()
    with stack.throwaway() as server:
        dsn = stack.create_database(server, "keys")
        job = stack.create_job(dsn, "keys", "bench.noop")
        asyncio.run(fill(dsn, job, options.keys))
        schedule = uuid.uuid4()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO schedules (id, job_id, cron, timezone, next_fire_time, suspended)"
                " VALUES (%s, %s, '* * * * *', 'UTC', now(), true)",
                (schedule, job),
            )
            conn.execute(
                "INSERT INTO schedule_fires (schedule_id, fire_time, run_id)"
                " SELECT %s, timestamptz '2026-01-01' + n * interval '1 minute', -n"
                " FROM generate_series(1, %s) n",
                (schedule, options.fires),
            )
            # Every run finished and gone from the hot table, every key older than a day, each
            # written at its own instant (equal instants would shrink the created_at index:
            # B-tree deduplication; submissions of one batch do share theirs).
            conn.execute("DELETE FROM job_runs")
            aged = "now() - interval '8 days' - random() * interval '1 day'"
            conn.execute(f"UPDATE idempotency_keys SET created_at = {aged}")
            conn.execute(f"UPDATE schedule_fires SET created_at = {aged}")
            conn.execute("VACUUM FULL ANALYZE idempotency_keys")
            conn.execute("VACUUM FULL ANALYZE schedule_fires")
            before = conn.execute(SIZES).fetchone()
        assert before is not None
        meter = stack.CpuMeter()
        meter.start(stack.postgres_pids(server))
        started = time.perf_counter()
        keys, fires, calls = asyncio.run(
            expire(dsn, options.batch, lambda: meter.sample(stack.postgres_pids(server)))
        )
        seconds = time.perf_counter() - started
        postgres_cpu = meter.spent()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM idempotency_keys, schedule_fires")
            after = conn.execute(SIZES).fetchone()
        assert after is not None
    deleted = keys + fires
    print(
        f"idempotency key:   {before[0]:.0f} B per key (heap + primary key + created_at index;"
        f" the created_at index alone {before[4]:.0f} B)"
    )
    print(
        f"schedule fire key: {before[1]:.0f} B per fire (heap + primary key + created_at index;"
        f" the created_at index alone {before[5]:.0f} B)"
    )
    print(
        f"expired {keys:,} keys and {fires:,} fire keys in {calls} calls of batch {options.batch}:"
        f" {seconds:.1f} s, {deleted / seconds:,.0f} keys/s,"
        f" PostgreSQL {postgres_cpu / max(1, deleted) * 1e6:.0f} µs CPU per key"
    )
    print(
        f"tables after the expiry and a VACUUM: idempotency_keys {after[2] / 2**20:.1f} MB"
        f" (was {before[2] / 2**20:.1f}), schedule_fires {after[3] / 2**20:.1f} MB"
        f" (was {before[3] / 2**20:.1f}): the space is reused by new keys, not returned"
    )
    print(f"load {stack.load_average()}")
    print(
        f"reproduce: .venv/bin/python bench/key_retention.py --keys {options.keys}"
        f" --fires {options.fires} --batch {options.batch}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
