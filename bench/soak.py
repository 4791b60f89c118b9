"""A steady rate for N minutes with `sundial scheduler` running: is the hot table bounded?

Not a test: it prints one table, a row per interval. One throwaway PostgreSQL; this process
submits ``--rate`` runs/s (``runs.submit_many`` every 100 ms, idempotency keys on) of
``bench.noop``, 1% of them of ``bench.poison`` (max_retries 2, so the attempt history grows
too); ``--runners`` `sundial runner`s execute them and `sundial scheduler` runs beside them,
whatever its maintainer does in this version (archive finished runs, drop old partitions):
the benchmark does not archive anything itself, it reports what the product did.

Every interval: claim latency p50/p99 (a probe claims one run of its own queue with
``claims.claim`` 20 times, so the statement works against the same table and index as the
runners' claims), the hot table's heap and index size, live and dead tuples, autovacuum and
autoanalyze counts, and the rows in ``finished_runs`` and ``job_run_attempts``. At the end:
bytes per run in the hot table, in ``finished_runs`` and per row of ``job_run_attempts``
(docs/operations.md sizes disk from these), and whether the hot table stayed bounded: its
live rows and size in the last third of the run within 20% of the first third's peak.

    .venv/bin/python bench/soak.py                # 60 minutes at 2,000/s
    .venv/bin/python bench/soak.py --quick        # 3 minutes at 300/s, a row every 30 s
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import psycopg
import stack

from sundial.store import claims, runs
from sundial.store import pool as store_pool

STATS = """
SELECT pg_relation_size('job_runs'), pg_indexes_size('job_runs'),
       s.n_live_tup, s.n_dead_tup, s.autovacuum_count, s.autoanalyze_count,
       (SELECT count(*) FROM finished_runs),
       (SELECT count(*) FROM job_run_attempts),
       (SELECT count(*) FROM job_runs)
FROM pg_stat_user_tables s WHERE s.relname = 'job_runs'
"""


@dataclass
class Sample:
    minute: float
    claim_p50_ms: float
    claim_p99_ms: float
    heap_bytes: int
    index_bytes: int
    live: int
    dead: int
    autovacuums: int
    autoanalyzes: int
    archived: int
    attempts: int
    hot_rows: int
    submitted: int
    load: str


async def probe(pool: store_pool.Pool, job: Any) -> list[float]:
    timings = []
    for _ in range(20):
        await runs.submit(pool, job)
        started = time.perf_counter()
        claimed = await claims.claim(pool, "soak-probe", queues=["probe"], limit=1)
        timings.append((time.perf_counter() - started) * 1000)
        if claimed:
            await claims.finish(pool, "soak-probe", [claims.Outcome.succeeded(claimed[0])])
    return sorted(timings)


async def soak(dsn: str, options: argparse.Namespace) -> list[Sample]:
    job = stack.create_job(dsn, "soak", "bench.noop")
    bad = stack.create_job(
        dsn, "soak-poison", "bench.poison", max_retries=2, backoff_base_seconds=0.1
    )
    probe_job = stack.create_job(dsn, "soak-probe", "bench.probe", queue="probe")
    pool = await store_pool.open_pool(dsn, min_size=2, max_size=4)
    samples: list[Sample] = []
    submitted = 0
    try:
        started = time.monotonic()
        end = started + options.minutes * 60
        next_sample = started + options.interval
        while (now := time.monotonic()) < end:
            target = int(options.rate * (now - started))
            if target > submitted:
                numbers = range(submitted, target)
                # Every hundredth run is poison, counted over the whole soak.
                good = [runs.BatchItem(idempotency_key=f"soak-{n}") for n in numbers if n % 100]
                poison = [
                    runs.BatchItem(idempotency_key=f"soak-{n}") for n in numbers if not n % 100
                ]
                await runs.submit_many(pool, job, good)
                if poison:
                    await runs.submit_many(pool, bad, poison)
                submitted = target
            if now >= next_sample:
                next_sample += options.interval
                timings = await probe(pool, probe_job)
                async with pool.connection() as conn:
                    cursor = await conn.execute(STATS)
                    row = await cursor.fetchone()
                assert row is not None
                samples.append(
                    Sample(
                        (now - started) / 60, stack.quantile(timings, 0.5),
                        stack.quantile(timings, 0.99), *row, submitted, stack.load_average(),
                    )
                )  # fmt: skip
                s = samples[-1]
                print(
                    f"  {s.minute:5.1f} min: claim p50 {s.claim_p50_ms:.1f} ms, hot rows "
                    f"{s.hot_rows:,}, heap {s.heap_bytes / 2**20:.0f} MB, dead {s.dead:,}",
                    flush=True,
                )
            await asyncio.sleep(0.1)
    finally:
        await pool.close()
    return samples


async def archive_sample(dsn: str) -> int:
    """Archive up to 20,000 finished runs, only to measure bytes per archived run."""
    from sundial.store import maintenance

    pool = await store_pool.open_pool(dsn, min_size=1, max_size=1)
    try:
        moved = 0
        for _ in range(4):
            moved += await maintenance.archive_finished(pool, older_than_seconds=0)
        return moved
    finally:
        await pool.close()


def bytes_per_row(dsn: str) -> dict[str, float]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        # The hot table first: archiving a sample below leaves its space behind.
        hot = conn.execute(
            "SELECT pg_total_relation_size('job_runs')::float8"
            " / greatest(1, (SELECT count(*) FROM job_runs))"
        ).fetchone()
        row = conn.execute("SELECT count(*) FROM finished_runs").fetchone()
    sampled = 0
    if row is not None and row[0] == 0:
        # Nothing was archived during the soak: archive a sample after it, for the figure.
        sampled = asyncio.run(archive_sample(dsn))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE")
        row = conn.execute(
            """
            SELECT pg_total_relation_size('job_runs')::float8
                     / greatest(1, (SELECT count(*) FROM job_runs)),
                   (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_inherits i
                      JOIN pg_class c ON c.oid = i.inhrelid
                     WHERE i.inhparent = 'finished_runs'::regclass)::float8
                     / greatest(1, (SELECT count(*) FROM finished_runs)),
                   (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_inherits i
                      JOIN pg_class c ON c.oid = i.inhrelid
                     WHERE i.inhparent = 'job_run_attempts'::regclass)::float8
                     / greatest(1, (SELECT count(*) FROM job_run_attempts)),
                   (SELECT count(*) FROM finished_runs), (SELECT count(*) FROM job_run_attempts),
                   pg_total_relation_size('idempotency_keys')::float8
                     / greatest(1, (SELECT count(*) FROM idempotency_keys))
            """
        ).fetchone()
    assert row is not None and hot is not None
    return {
        "hot": hot[0], "finished": row[1] or 0.0, "attempt": row[2] or 0.0,
        "finished_rows": row[3], "attempt_rows": row[4], "key": row[5], "sampled": sampled,
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--runners", type=int, default=1)
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between rows")
    parser.add_argument("--quick", action="store_true", help="3 minutes at 300/s")
    options = parser.parse_args()
    if options.quick:
        options.minutes, options.rate, options.interval = 3.0, 300.0, 30.0
    with stack.throwaway() as server:
        dsn = stack.create_database(server, "soak")
        processes = stack.Processes(dsn)
        try:
            for _ in range(options.runners):
                processes.runner(async_slots=1000)
            # A scheduler with a maintainer archives after its hot window (default an hour):
            # a minute here, so a soak of minutes sees archiving at work.
            help_text = subprocess.run(
                [sys.executable, "-m", "sundial", "scheduler", "--help"],
                capture_output=True, text=True, check=False,
            ).stdout  # fmt: skip
            window = ["--hot-window", "60s"] if "--hot-window" in help_text else []
            print(f"  sundial scheduler {' '.join(window) or '(no --hot-window option)'}")
            processes.scheduler(extra=window)
            samples = asyncio.run(soak(dsn, options))
            sizes = bytes_per_row(dsn)
        finally:
            processes.stop_all()
    headers = ["minute", "submitted", "claim p50 ms", "claim p99 ms", "hot rows", "heap MB",
               "index MB", "dead tuples", "autovacuum", "autoanalyze", "archived rows",
               "attempt rows", "load"]  # fmt: skip
    rows = [
        [f"{s.minute:.1f}", f"{s.submitted:,}", f"{s.claim_p50_ms:.1f}", f"{s.claim_p99_ms:.1f}",
         f"{s.hot_rows:,}", f"{s.heap_bytes / 2**20:.1f}", f"{s.index_bytes / 2**20:.1f}",
         f"{s.dead:,}", s.autovacuums, s.autoanalyzes, f"{s.archived:,}", f"{s.attempts:,}",
         s.load]
        for s in samples
    ]  # fmt: skip
    print()
    print(stack.table(headers, rows))
    third = max(1, len(samples) // 3)
    early, late = samples[:third], samples[-third:]
    peak_rows = max(s.hot_rows for s in early)
    peak_bytes = max(s.heap_bytes + s.index_bytes for s in early)
    bounded = all(
        s.hot_rows <= 1.2 * peak_rows and s.heap_bytes + s.index_bytes <= 1.2 * peak_bytes
        for s in late
    )
    growth = (
        (samples[-1].heap_bytes - samples[0].heap_bytes)
        / 2**20
        / max(1e-9, samples[-1].minute - samples[0].minute)
    )
    print(
        "hot table: "
        + ("BOUNDED" if bounded else f"GROWING ({growth:+.1f} MB of heap per minute)")
        + f"; bytes per run: hot table {sizes['hot']:.0f}, finished_runs {sizes['finished']:.0f}"
        f" ({sizes['finished_rows']:,} rows"
        + (", archived by the bench after the soak" if sizes["sampled"] else "")
        + f"), job_run_attempts row {sizes['attempt']:.0f}"
        f" ({sizes['attempt_rows']:,} rows), idempotency key {sizes['key']:.0f}"
    )
    print(
        f"reproduce: .venv/bin/python bench/soak.py --minutes {options.minutes:g} --rate "
        f"{options.rate:g} --runners {options.runners} --interval {options.interval:g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
