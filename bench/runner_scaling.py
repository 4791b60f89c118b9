"""No-op async jobs through 1, 2 and 4 `sundial runner` processes on one PostgreSQL.

Not a test: it prints one table. bench/runner_throughput.py compares ONE runner with pgqueuer,
procrastinate and the raw SQL loop; this one asks how the same protocol scales with processes
on one database. For each process count: a fresh database with ``--jobs`` pending runs of
``bench.noop``, N runners started together; jobs/s is runs / (last finished_at - first
started_at), both stamped by the database. The runs are inserted (one statement) only once
every runner is connected and idle, so start-up is not counted; CPU per job is the runners'
and PostgreSQL's (the postmaster and every child: backends, autovacuum, WAL writer) utime +
stime from /proc from the insert's commit to the drain, divided by the runs. The raw
claim-and-finish SQL loop (bench/store_throughput.py, array claim) is the ceiling per job: its
client and its backend, from its first claim, over runs inserted before it started. Neither
side counts the insert; the runners' side also counts PostgreSQL's background processes, which
the raw side does not, so "vs raw loop" is an upper bound.

With ``--hot-queue`` each process count runs twice in the same run, on PostgreSQL alone and
with the Redis hot queue (a throwaway redis-server; the database's hot queue switched on, the
runners given ``--hot-queue-url``): the runs' insert writes their outbox entries (not counted,
as the insert is not), the runners' relays move them to Redis, and Redis's own CPU and the
primary's WAL per job are printed beside PostgreSQL's CPU.

With ``--statements`` PostgreSQL loads pg_stat_statements, and each leg also prints where its
time went: the statements that took most of it (top-level and nested, so a function's own
statements show inside its call), with calls, rows and execution time per job. Execution time
is not CPU (it counts waits), but it says which step to look at.

    .venv/bin/python bench/runner_scaling.py [--jobs 40000] [--processes 1,2,4] [--quick]
        [--hot-queue] [--statements]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time

import psycopg
import redis
import stack
import store_throughput

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.store.hot_queue import outbox


def _wal_lsn(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    row = conn.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint").fetchone()
    assert row is not None
    return int(row[0])  # type: ignore[call-overload]


def leg(
    server: object,
    jobs: int,
    processes: int,
    concurrency: int,
    hot: ThrowawayRedis | None = None,
    statements: bool = False,
) -> dict[str, float]:
    name = f"scaling_{processes}" + ("_hot" if hot is not None else "")
    dsn = stack.create_database(server, name)  # type: ignore[arg-type]
    if statements:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute("SELECT pg_stat_statements_reset()")
    job = stack.create_job(dsn, "noop", "bench.noop")
    extra: list[str] = []
    redis_cpu = 0.0
    if hot is not None:
        with redis.Redis.from_url(hot.url) as connection:
            connection.flushall()  # run ids start again at 1 in this database
        outbox.switch(dsn, on=True)
        extra = ["--hot-queue-url", hot.url]
        assert hot.process is not None
        redis_cpu = stack.cpu_seconds(hot.process.pid)
    group = stack.Processes(dsn)
    try:
        runners = [group.runner(async_slots=concurrency, extra=extra) for _ in range(processes)]
        with psycopg.connect(dsn, autocommit=True) as conn:
            # Work appears only once every runner is connected and idle, so no runner's
            # start-up (imports, pool) is counted and none starts late.
            deadline = time.monotonic() + 120
            seen, steady_since = -1, time.monotonic()
            while True:
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchone()
                count = 0 if row is None else int(row[0])
                if count != seen:
                    seen, steady_since = count, time.monotonic()
                # Each runner holds a pool and a LISTEN connection (3 today); a count that
                # stopped moving for 3 s means they are all up, whatever that number becomes.
                if count >= 3 * processes or (
                    count >= processes and time.monotonic() - steady_since > 3
                ):
                    break
                if time.monotonic() > deadline or any(r.poll() is not None for r in runners):
                    raise RuntimeError("the runners did not connect")
                time.sleep(0.1)
            time.sleep(1.0)
            conn.execute(
                """
                INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                      max_retries, backoff_base_seconds, backoff_cap_seconds,
                                      state, priority, run_at, dispatch_key, args)
                SELECT %s, 'default', 'bench.noop', 'async', 60, 3, 1, 60, 'pending', 1, now(),
                       sundial_dispatch_key(now(), 1::smallint), '{}'
                FROM generate_series(1, %s)
                """,
                (job, jobs),
            )
            # From the commit on: the raw loop's figure does not count its runs' insert either.
            # The commit's NOTIFY wakes the runners; what they spend before the meter starts,
            # a millisecond later, is not counted.
            meter = stack.CpuMeter()
            meter.start([r.pid for r in runners] + stack.postgres_pids(server))  # type: ignore[arg-type]
            wal = _wal_lsn(conn)
            if hot is not None:
                assert hot.process is not None
                redis_cpu = stack.cpu_seconds(hot.process.pid)
            deadline = time.monotonic() + 600
            while True:
                row = conn.execute(
                    "SELECT NOT EXISTS (SELECT 1 FROM job_runs WHERE state = 'pending')"
                    " AND NOT EXISTS (SELECT 1 FROM job_runs WHERE state = 'running')"
                ).fetchone()
                meter.sample([r.pid for r in runners] + stack.postgres_pids(server))  # type: ignore[arg-type]
                if row is not None and row[0]:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("the runners stalled")
                time.sleep(0.1)
            wal = _wal_lsn(conn) - wal
            if hot is not None:
                assert hot.process is not None
                redis_cpu = stack.cpu_seconds(hot.process.pid) - redis_cpu
            runner_pids = {r.pid for r in runners}
            runner_cpu = sum(
                meter._last[p] - meter._start.get(p, 0.0) for p in meter._last if p in runner_pids
            )
            total_cpu = meter.spent()
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE state = 'completed'), max(attempt),"
                " extract(epoch FROM max(finished_at) - min(started_at))::float8 FROM job_runs"
            ).fetchone()
            assert row is not None and row[0] == jobs and row[1] == 1, row
            if statements:
                _print_statements(conn, name, jobs)
    finally:
        group.stop_all()
    return {
        "jobs_per_second": jobs / float(row[2]),
        "runner_us": runner_cpu / jobs * 1e6,
        "postgres_us": (total_cpu - runner_cpu) / jobs * 1e6,
        "redis_us": redis_cpu / jobs * 1e6,
        "wal_bytes": wal / jobs,
    }


def _print_statements(
    conn: psycopg.Connection[tuple[object, ...]], name: str, jobs: int, top: int = 8
) -> None:
    """The statements of this leg's database that took the most execution time."""
    rows = conn.execute(
        r"""
        SELECT calls, rows, total_exec_time,
               left(regexp_replace(regexp_replace(query, '--[^\n]*', '', 'g'), '\s+', ' ', 'g'),
                    90)
        FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND query NOT ILIKE '%%pg_stat_statements%%'
        ORDER BY total_exec_time DESC
        LIMIT %s
        """,
        (top,),
    ).fetchall()
    print(f"  {name}: the statements that took most of PostgreSQL's execution time")
    for calls, returned, total_ms, query in rows:
        per_job = float(total_ms) * 1000 / jobs  # type: ignore[arg-type]
        print(
            f"    {per_job:6.1f} µs/job {calls:>7} calls {returned:>7} rows  {str(query).strip()}"
        )


def raw_ceiling(server: object, jobs: int, batch: int) -> float | None:
    dsn = stack.create_database(server, "scaling_raw")  # type: ignore[arg-type]
    job = store_throughput.prepare(dsn)
    store_throughput.fill(dsn, job, jobs)
    measured = asyncio.run(store_throughput.raw_loop(dsn, batch, array_claim=True))
    return None if measured.cpu_seconds is None else measured.cpu_seconds / jobs * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40_000)
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--concurrency", type=int, default=1000, help="async slots per runner")
    parser.add_argument("--quick", action="store_true", help="20,000 jobs")
    parser.add_argument(
        "--hot-queue",
        action="store_true",
        help="each process count on PostgreSQL alone and with the Redis hot queue",
    )
    parser.add_argument(
        "--statements",
        action="store_true",
        help="print each leg's costliest statements (pg_stat_statements)",
    )
    options = parser.parse_args()
    if options.quick:
        options.jobs = 20_000
    rows = []
    load_before = stack.load_average()
    modes = ["postgresql", "hot queue"] if options.hot_queue else ["postgresql"]
    settings = (
        {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all"}
        if options.statements
        else None
    )
    with stack.throwaway(extra_settings=settings) as server, contextlib.ExitStack() as stop:
        hot = stop.enter_context(throwaway_redis()) if options.hot_queue else None
        raw = raw_ceiling(server, options.jobs, 500)
        for processes in (int(p) for p in options.processes.split(",")):
            for mode in modes:
                figures = leg(
                    server,
                    options.jobs,
                    processes,
                    options.concurrency,
                    hot if mode == "hot queue" else None,
                    options.statements,
                )
                total = figures["runner_us"] + figures["postgres_us"] + figures["redis_us"]
                rows.append(
                    [
                        processes, mode, f"{figures['jobs_per_second']:,.0f}",
                        f"{figures['runner_us']:.1f}", f"{figures['postgres_us']:.1f}",
                        f"{figures['redis_us']:.1f}", f"{figures['wal_bytes']:,.0f}",
                        f"{total:.1f}", "n/a" if raw is None else f"{total / raw:.2f}x",
                        stack.load_average(),
                    ]
                )  # fmt: skip
                print(
                    f"  {processes} runner(s), {mode}: {figures['jobs_per_second']:,.0f} jobs/s",
                    flush=True,
                )
    headers = ["runners", "mode", "jobs/s", "runner µs/job", "postgres µs/job", "redis µs/job",
               "postgres WAL B/job", "total µs/job", "vs raw loop", "load after"]  # fmt: skip
    print()
    print(f"no-op async jobs, {options.jobs:,} per leg; raw claim+finish loop: "
          f"{raw if raw is None else round(raw, 1)} µs/job; load before {load_before}")  # fmt: skip
    print(stack.table(headers, rows))
    print(
        f"reproduce: .venv/bin/python bench/runner_scaling.py --jobs {options.jobs} "
        f"--processes {options.processes} --concurrency {options.concurrency}"
        + (" --hot-queue" if options.hot_queue else "")
        + (" --statements" if options.statements else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
