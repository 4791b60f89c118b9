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
autoanalyze counts, the rows in ``finished_runs`` and ``job_run_attempts``, the rows and size
of ``idempotency_keys``, the rows of ``schedule_fires`` (``--schedules`` ``* * * * *``
schedules fire through the trigger) and the month partitions of ``finished_runs``. At the end:
bytes per run in the hot table, in ``finished_runs`` and per row of ``job_run_attempts``
(docs/operations.md sizes disk from these), and whether the hot table stayed bounded: its
live rows and size in the last third of the run within 20% of the first third's peak.

Both of the maintainer's removals happen inside the hour: the scheduler runs with
``--hot-window 60s`` (finished runs archived after a minute) and ``--retention-interval 5m``,
and every ``--age-every`` minutes the bench writes a month partition of history three or more
months old (copies of archived runs: a month cannot age inside an hour), which the
maintainer's retention must drop on its next pass; the partitions column shows it come and go.

    .venv/bin/python bench/soak.py                # 60 minutes at 2,000/s
    .venv/bin/python bench/soak.py --rate 500     # what a shared 2-CPU machine holds
    .venv/bin/python bench/soak.py --quick        # 3 minutes at 300/s, a row every 30 s
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass
from typing import Any

import psycopg
import stack

from sundial.attempt import finishes
from sundial.store import claims, runs
from sundial.store import pool as store_pool

STATS = """
SELECT pg_relation_size('job_runs'), pg_indexes_size('job_runs'),
       s.n_live_tup, s.n_dead_tup, s.autovacuum_count, s.autoanalyze_count,
       (SELECT count(*) FROM finished_runs),
       (SELECT count(*) FROM job_run_attempts),
       (SELECT count(*) FROM job_runs),
       (SELECT count(*) FROM idempotency_keys),
       pg_total_relation_size('idempotency_keys'),
       (SELECT count(*) FROM schedule_fires),
       (SELECT count(*) FROM pg_inherits WHERE inhparent = 'finished_runs'::regclass),
       (SELECT jsonb_object_agg(i.indexrelid::regclass::text, pg_relation_size(i.indexrelid))
          FROM pg_index i WHERE i.indrelid = 'job_runs'::regclass)
FROM pg_stat_user_tables s WHERE s.relname = 'job_runs'
"""

# A B-tree's file never shrinks: a page emptied by vacuum is marked deleted and reused by a
# later split, but stays in the file. So the file is the high-water mark of the index, and
# whether the index grows is told by the pages that hold entries: pgstattuple's count of
# internal and leaf pages (it reads the whole index: about 1,300 pages here, once a minute).
# Only where the extension can be created; else the column is left out.
INDEX_IN_USE = """
SELECT jsonb_object_agg(c.relname, (s.internal_pages + s.leaf_pages + 1) * 8192)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid, LATERAL pgstatindex(c.oid) s
WHERE i.indrelid = 'job_runs'::regclass
"""

# History a month can not age inside an hour: a partition of a month long past, filled with
# copies of archived runs, as it would be after a month. The maintainer's retention must drop
# it on its next pass; the bench only writes it, it never drops anything itself.
AGED_HISTORY = """
INSERT INTO finished_runs
SELECT id + %(shift)s, job_id, schedule_id, fire_time, NULL, queue, handler, execution_model,
       state, priority, run_at, attempt, retries_used, infra_retries_used, lease_expiries,
       lease_owner, args, failure_reason, last_error, created_at, started_at,
       %(month)s::timestamptz + interval '1 day', pod_name, pod_exit_code, pod_reason,
       oom_max_retries, oom_retries_used, failure_detail
FROM finished_runs WHERE finished_at > now() - interval '1 day' LIMIT %(rows)s
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
    keys: int
    keys_bytes: int
    fires: int
    partitions: int
    #: Each of the hot table's indexes: name -> bytes (which one grows, if the sum does).
    index_sizes: dict[str, int]
    aged_written: int
    #: Of each index, the bytes of the pages that hold entries (None: no pgstattuple).
    index_in_use: dict[str, int] | None
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
            await claims.finish(pool, "soak-probe", [finishes.succeeded(claimed[0])])
    return sorted(timings)


async def index_in_use(conn: Any) -> dict[str, int] | None:
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        cursor = await conn.execute(INDEX_IN_USE)
    except psycopg.Error:
        await conn.rollback()
        return None
    row = await cursor.fetchone()
    return None if row is None else row[0]


async def write_aged_history(pool: store_pool.Pool, months_ago: int, rows: int) -> None:
    """One partition of a month ``months_ago`` months back, with ``rows`` copies of runs."""
    from datetime import UTC, datetime

    today = datetime.now(UTC)
    index = today.year * 12 + today.month - 1 - months_ago
    month = datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)
    async with pool.connection() as conn:
        await conn.execute("SELECT sundial_ensure_month_partition(%(month)s)", {"month": month})
        await conn.execute(
            AGED_HISTORY, {"month": month, "shift": 10**12 * months_ago, "rows": rows}
        )


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
        next_aging = started + options.age_every * 60
        aged = 0
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
            if options.age_every and now >= next_aging:
                next_aging += options.age_every * 60
                aged += 1
                # Three months back and further: past any retention of 30 days.
                await write_aged_history(pool, 2 + aged, 10_000)
            if now >= next_sample:
                next_sample += options.interval
                timings = await probe(pool, probe_job)
                async with pool.connection() as conn:
                    cursor = await conn.execute(STATS)
                    row = await cursor.fetchone()
                    in_use = await index_in_use(conn)
                assert row is not None
                samples.append(
                    Sample(
                        (now - started) / 60, stack.quantile(timings, 0.5),
                        stack.quantile(timings, 0.99), *row, aged, in_use, submitted,
                        stack.load_average(),
                    )
                )  # fmt: skip
                s = samples[-1]
                print(
                    f"  {s.minute:5.1f} min: claim p50 {s.claim_p50_ms:.1f} ms, hot rows "
                    f"{s.hot_rows:,}, heap {s.heap_bytes / 2**20:.0f} MB, dead {s.dead:,}, "
                    f"keys {s.keys:,}, fires {s.fires:,}, partitions {s.partitions}"
                    f" (aged written {s.aged_written})",
                    flush=True,
                )
            await asyncio.sleep(0.1)
    finally:
        await pool.close()
    return samples


#: Fewer archived runs than this after a soak, and a sample is archived for the byte figures.
_SAMPLE_AT_LEAST = 1000


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
    if row is not None and row[0] < _SAMPLE_AT_LEAST:
        # Too few were archived during the soak for a per-row figure (a few pages divided by
        # a few dozen rows): archive a sample after it.
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


def index_table(samples: list[Sample]) -> str:
    """Each index of the hot table: its file at the first and last row and its peak, and (with
    pgstattuple) the pages that hold entries, the same way."""
    names = sorted({name for s in samples for name in s.index_sizes})
    counted = all(s.index_in_use is not None for s in samples)
    rows = []
    for name in names:
        columns = [name]
        series: list[list[dict[str, int]]] = [[s.index_sizes for s in samples]]
        if counted:
            series.append([s.index_in_use or {} for s in samples])
        for by_name in series:
            values = [(b.get(name, 0), s.minute) for b, s in zip(by_name, samples, strict=True)]
            peak, peak_minute = max(values)
            columns += [
                f"{values[0][0] / 2**20:.1f}", f"{peak / 2**20:.1f} (min {peak_minute:.0f})",
                f"{values[-1][0] / 2**20:.1f}",
            ]  # fmt: skip
        rows.append(columns)
    headers = ["index", "file MB first", "file MB peak", "file MB last"]
    if counted:
        headers += ["in use MB first", "in use MB peak", "in use MB last"]
    return stack.table(headers, rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--runners", type=int, default=1)
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between rows")
    parser.add_argument(
        "--hot-window", default="60s", help="the scheduler's --hot-window (short: archive soon)"
    )
    parser.add_argument(
        "--retention-interval", default="5m", help="the scheduler's --retention-interval"
    )
    parser.add_argument(
        "--age-every", type=float, default=10.0,
        help="minutes between two aged month partitions the bench writes (0: none)",
    )  # fmt: skip
    parser.add_argument(
        "--schedules", type=int, default=100, help="`* * * * *` schedules the trigger fires"
    )
    parser.add_argument("--quick", action="store_true", help="3 minutes at 300/s")
    options = parser.parse_args()
    if options.quick:
        options.minutes, options.rate, options.interval = 3.0, 300.0, 30.0
        options.retention_interval, options.age_every = "30s", 1.0
    with stack.throwaway() as server:
        dsn = stack.create_database(server, "soak")
        processes = stack.Processes(dsn)
        try:
            for _ in range(options.runners):
                processes.runner(async_slots=1000)
            if options.schedules:
                stack.create_schedules(
                    dsn, options.schedules, first_fire=stack.grid_instant(60, 5),
                    spread_seconds=30, handler="bench.noop",
                )  # fmt: skip
            # The maintainer archives after its hot window (default an hour) and drops expired
            # month partitions every retention interval (default an hour): both short here, so
            # a soak of minutes sees both at work.
            window = [
                "--hot-window", options.hot_window,
                "--retention-interval", options.retention_interval,
            ]  # fmt: skip
            print(f"  sundial scheduler {' '.join(window)}")
            processes.scheduler(extra=window)
            samples = asyncio.run(soak(dsn, options))
            sizes = bytes_per_row(dsn)
        finally:
            processes.stop_all()
    headers = ["minute", "submitted", "claim p50 ms", "claim p99 ms", "hot rows", "heap MB",
               "index MB", "dead tuples", "autovacuum", "autoanalyze", "archived rows",
               "attempt rows", "idempotency keys", "keys MB", "schedule fires",
               "partitions (aged written)", "load"]  # fmt: skip
    rows = [
        [f"{s.minute:.1f}", f"{s.submitted:,}", f"{s.claim_p50_ms:.1f}", f"{s.claim_p99_ms:.1f}",
         f"{s.hot_rows:,}", f"{s.heap_bytes / 2**20:.1f}", f"{s.index_bytes / 2**20:.1f}",
         f"{s.dead:,}", s.autovacuums, s.autoanalyzes, f"{s.archived:,}", f"{s.attempts:,}",
         f"{s.keys:,}", f"{s.keys_bytes / 2**20:.1f}", f"{s.fires:,}",
         f"{s.partitions} ({s.aged_written})", s.load]
        for s in samples
    ]  # fmt: skip
    print()
    print("The hot table's indexes (a file never shrinks; in use: the pages holding entries):")
    print(index_table(samples))
    print()
    print(stack.table(headers, rows))  # last: bench/all.py reads the last table
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
    if all(s.index_in_use is not None for s in samples):
        in_use = [sum((s.index_in_use or {}).values()) for s in samples]
        early_peak, late_peak = max(in_use[:third]), max(in_use[-third:])
        print(
            "indexes in use: "
            + ("BOUNDED" if late_peak <= 1.2 * early_peak else "GROWING")
            + f" (first third's peak {early_peak / 2**20:.1f} MB, last third's"
            f" {late_peak / 2**20:.1f} MB); their files {samples[0].index_bytes / 2**20:.1f}"
            f" -> {samples[-1].index_bytes / 2**20:.1f} MB"
        )
    print(
        f"reproduce: .venv/bin/python bench/soak.py --minutes {options.minutes:g} --rate "
        f"{options.rate:g} --runners {options.runners} --interval {options.interval:g}"
        f" --hot-window {options.hot_window} --retention-interval {options.retention_interval}"
        f" --age-every {options.age_every:g} --schedules {options.schedules}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
