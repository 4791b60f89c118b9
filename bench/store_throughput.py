"""Claim + heartbeat + finish throughput of the run store, beside the raw SQL it is built on.

Not a test: it prints figures. One worker, one connection, batches of ``--batch`` runs:

* store: ``claims.claim`` -> ``claims.heartbeat`` -> ``claims.finish`` (the full protocol:
  lease, fenced batch heartbeat, fenced batch finish with dependency and history handling);
* raw: the seed's claim statement (seed-design section 3) on the seed's own ``job_runs``
  table and index (section 5), then a batched finish of the claimed rows conditional on
  ``(id, attempt)`` — the ceiling the store is measured against. No heartbeat.
* for reference, the seed's loop exactly as written: its claim, then its finish statement
  once per run.

Both run in the same process against the same PostgreSQL, one after the other, each over
freshly inserted pending runs. Target: store >= 60% of raw.

    .venv/bin/python bench/store_throughput.py [--runs 20000] [--batch 100] [--rounds 3] [--dsn URL]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid

import psycopg

from sundial.localdev import postgres
from sundial.store import claims, migrate
from sundial.store import pool as store_pool

SEED_SCHEMA = """
CREATE SCHEMA seed;
CREATE TABLE seed.job_runs (
    id               BIGSERIAL PRIMARY KEY,
    job_id           UUID NOT NULL,
    schedule_id      UUID,
    fire_time        TIMESTAMPTZ,
    idempotency_key  TEXT,
    status           TEXT NOT NULL,
    priority         SMALLINT NOT NULL,
    run_at           TIMESTAMPTZ NOT NULL,
    attempt          INT NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_until      TIMESTAMPTZ,
    started_at       TIMESTAMPTZ,
    finished_at      TIMESTAMPTZ,
    last_error       TEXT,
    UNIQUE (schedule_id, fire_time),
    UNIQUE (idempotency_key)
);
CREATE INDEX idx_runs_dispatch ON seed.job_runs (priority DESC, run_at) WHERE status = 'PENDING';
CREATE INDEX idx_runs_lease ON seed.job_runs (lease_until) WHERE status = 'RUNNING';
"""

SEED_CLAIM = """
WITH picked AS (
    SELECT id FROM seed.job_runs
    WHERE status = 'PENDING' AND run_at <= now()
    ORDER BY priority DESC, run_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE seed.job_runs r
SET status = 'RUNNING', lease_owner = %(worker)s, lease_until = now() + interval '30 seconds',
    attempt = attempt + 1, started_at = now()
FROM picked WHERE r.id = picked.id
RETURNING r.id, r.attempt
"""

# The seed's finish statement as written: one conditional UPDATE per run.
SEED_FINISH_ONE = """
UPDATE seed.job_runs SET status = 'COMPLETED', finished_at = now()
WHERE id = %(id)s AND attempt = %(attempt)s
"""

# The same, batched over unnest() as DESIGN.md section 5 asks: the ceiling we compare against.
SEED_FINISH = """
UPDATE seed.job_runs r SET status = 'COMPLETED', finished_at = now()
FROM unnest(%(ids)s::bigint[], %(attempts)s::int[]) AS f(id, attempt)
WHERE r.id = f.id AND r.attempt = f.attempt
"""


def prepare(dsn: str) -> uuid.UUID:
    migrate.migrate(dsn)
    job = uuid.uuid4()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SEED_SCHEMA)
        conn.execute(
            "INSERT INTO job_definitions (id, namespace, name, handler) "
            "VALUES (%s, 'bench', 'noop', 'bench.noop')",
            (job,),
        )
    return job


def fill(dsn: str, job: uuid.UUID, runs: int) -> None:
    """Fresh pending runs in both tables; finished ones from the last round are removed."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM job_runs")
        conn.execute("DELETE FROM seed.job_runs")
        conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds,
                                  state, priority, run_at, dispatch_key, args)
            SELECT %s, 'default', 'bench.noop', 'async', 60, 3, 1, 60, 'pending',
                   (n %% 10)::smallint, now(),
                   sundial_dispatch_key(now(), (n %% 10)::smallint), '{}'
            FROM generate_series(1, %s) AS n
            """,
            (job, runs),
        )
        conn.execute(
            """
            INSERT INTO seed.job_runs (job_id, status, priority, run_at)
            SELECT %s, 'PENDING', (n %% 10)::smallint, now() FROM generate_series(1, %s) AS n
            """,
            (job, runs),
        )
        conn.execute("VACUUM ANALYZE job_runs")
        conn.execute("VACUUM ANALYZE seed.job_runs")


async def store_loop(dsn: str, batch: int) -> tuple[int, float]:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=1)
    done = 0
    try:
        started = time.perf_counter()
        while True:
            claimed = await claims.claim(pool, "bench", limit=batch)
            if not claimed:
                break
            beat = await claims.heartbeat(pool, "bench", [(r.id, r.attempt) for r in claimed])
            assert not beat.lost
            result = await claims.finish(
                pool, "bench", [claims.Outcome.succeeded(r) for r in claimed]
            )
            assert not result.lost
            done += len(result.states)
        return done, time.perf_counter() - started
    finally:
        await pool.close()


async def raw_loop(dsn: str, batch: int, *, batched_finish: bool = True) -> tuple[int, float]:
    done = 0
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        started = time.perf_counter()
        while True:
            cursor = await conn.execute(SEED_CLAIM, {"limit": batch, "worker": "bench"})
            rows = await cursor.fetchall()
            if not rows:
                break
            if batched_finish:
                await conn.execute(
                    SEED_FINISH, {"ids": [r[0] for r in rows], "attempts": [r[1] for r in rows]}
                )
            else:
                for run_id, attempt in rows:
                    await conn.execute(SEED_FINISH_ONE, {"id": run_id, "attempt": attempt})
            done += len(rows)
        return done, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dsn", help="an empty database to use (default: a throwaway server)")
    options = parser.parse_args()

    def run(dsn: str) -> tuple[float, float, float]:
        # The machine is shared: alternate raw and store rounds over fresh runs and keep each
        # side's best round, so a burst of someone else's load does not decide the ratio.
        job = prepare(dsn)
        store_best = raw_best = per_row_best = 0.0
        for _ in range(options.rounds):
            fill(dsn, job, options.runs)
            raw_done, raw_seconds = asyncio.run(raw_loop(dsn, options.batch))
            store_done, store_seconds = asyncio.run(store_loop(dsn, options.batch))
            assert raw_done == store_done == options.runs, (raw_done, store_done)
            fill(dsn, job, options.runs)
            per_row_done, per_row_seconds = asyncio.run(
                raw_loop(dsn, options.batch, batched_finish=False)
            )
            assert per_row_done == options.runs
            per_row_best = max(per_row_best, options.runs / per_row_seconds)
            raw_best = max(raw_best, options.runs / raw_seconds)
            store_best = max(store_best, options.runs / store_seconds)
            print(f"  round: store {options.runs / store_seconds:8,.0f} jobs/s   "
                  f"raw {options.runs / raw_seconds:8,.0f} jobs/s")  # fmt: skip
        return store_best, raw_best, per_row_best

    if options.dsn:
        store_rate, raw_rate, per_row_rate = run(options.dsn)
    else:
        with postgres.throwaway_postgres() as server:
            store_rate, raw_rate, per_row_rate = run(server.dsn)
    print(
        f"runs={options.runs} batch={options.batch} rounds={options.rounds} "
        "workers=1 (one connection each); best round per side"
    )
    print(f"store  claim + heartbeat + finish      : {store_rate:10,.0f} jobs/s")
    print(f"raw    seed claim + batched finish SQL : {raw_rate:10,.0f} jobs/s")
    print(
        f"ratio  store / raw                     : {store_rate / raw_rate:10.0%}  (target >= 60%)"
    )
    print(f"(seed claim + one finish per run, as written in the seed: {per_row_rate:,.0f} jobs/s;")
    print(f" store / that = {store_rate / per_row_rate:.0%})")
    print(f"reproduce: .venv/bin/python bench/store_throughput.py --runs {options.runs} "
          f"--batch {options.batch} --rounds {options.rounds}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
