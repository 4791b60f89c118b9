"""What the maintainer's monitor pass costs over a large run store (ADR 0036).

Not a test: prints figures. Starts a throwaway PostgreSQL, creates ``--jobs`` job definitions
and fills the store as an installation a few weeks old looks: ``--hot`` runs finished within
the last hour in ``job_runs`` (the hot window), ``--archived`` runs finished one to ten days
ago in ``finished_runs`` (this month's and last month's partitions), one attempt row per run
(a tenth of them failed, with one of four reasons), and ``--pending`` waiting runs; then
VACUUM ANALYZE. It times each query of the pass (``store.monitoring``) and the whole
``Maintainer._monitor`` pass ``--repeat`` times and prints the median and the worst, the
series each gauge got, and the load averages, as the machine may be shared.

    .venv/bin/python bench/monitor_pass.py [--quick] [--hot 200000] [--archived 2000000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from prometheus_client import REGISTRY

from sundial.localdev import postgres
from sundial.observability import maintainer_metrics
from sundial.scheduler import maintainer
from sundial.store import maintenance, migrate, monitoring
from sundial.store import pool as store_pool

STATES = ("completed", "completed", "completed", "completed", "failed", "dead_lettered")


def fill(dsn: str, *, jobs: int, hot: int, archived: int, pending: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        ids = [uuid.uuid4() for _ in range(jobs)]
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO job_definitions (id, namespace, name, handler)"
                " VALUES (%s, %s, %s, 'bench.noop')",
                [(job, f"team-{i % 10}", f"job-{i}") for i, job in enumerate(ids)],
            )
        conn.execute("CREATE TEMP TABLE bench_jobs (n int, id uuid)")
        with conn.cursor() as cursor:
            cursor.executemany("INSERT INTO bench_jobs VALUES (%s, %s)", list(enumerate(ids)))
        conn.execute(
            "SELECT sundial_ensure_month_partition(now() - make_interval(days => d))"
            " FROM generate_series(0, 10) d"
        )
        conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds, state,
                                  priority, run_at, dispatch_key, attempt, started_at,
                                  finished_at)
            SELECT j.id, 'default', 'bench.noop', 'async', 60, 3, 1, 60,
                   (%(states)s::text[])[1 + g %% 6], 1, f - interval '2 seconds',
                   sundial_dispatch_key(f - interval '2 seconds', 1::smallint),
                   1 + g %% 3, f - interval '1 second', f
            FROM generate_series(1, %(count)s) g
            JOIN bench_jobs j ON j.n = g %% %(jobs)s,
            LATERAL (SELECT now() - interval '1 second' * (g %% 3500) AS f) t
            """,
            {"states": list(STATES), "count": hot, "jobs": jobs},
        )
        conn.execute(
            """
            INSERT INTO finished_runs (id, job_id, queue, handler, state, priority, run_at,
                                       attempt, retries_used, infra_retries_used,
                                       lease_expiries, args, created_at, started_at,
                                       finished_at)
            SELECT nextval('job_runs_id_seq'), j.id, 'default', 'bench.noop',
                   (%(states)s::text[])[1 + g %% 6], 1, f - interval '2 seconds', 1 + g %% 3, 0,
                   0, 0, '{}', f - interval '2 seconds', f - interval '1 second', f
            FROM generate_series(1, %(count)s) g
            JOIN bench_jobs j ON j.n = g %% %(jobs)s,
            LATERAL (SELECT now() - interval '1 day' - interval '1 second' * (g %% 777600) AS f) t
            """,
            {"states": list(STATES), "count": archived, "jobs": jobs},
        )
        conn.execute(
            """
            INSERT INTO job_run_attempts (run_id, attempt, worker, started_at, ended_at, outcome,
                                          failure_reason)
            SELECT id, attempt, 'bench', started_at, finished_at,
                   CASE WHEN state = 'completed' THEN 'completed' ELSE 'failed' END,
                   CASE WHEN state = 'completed' THEN NULL
                        ELSE (ARRAY['exception','timeout','lease_expired','oom_killed'])[1 + id % 4]
                   END
            FROM all_runs
            """
        )
        conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds, state,
                                  priority, run_at, dispatch_key)
            SELECT j.id, 'q' || (g %% 4), 'bench.noop', 'async', 60, 3, 1, 60, 'pending', g %% 3,
                   now(), sundial_dispatch_key(now(), (g %% 3)::smallint)
            FROM generate_series(1, %(count)s) g JOIN bench_jobs j ON j.n = g %% %(jobs)s
            """,
            {"count": pending, "jobs": jobs},
        )
        conn.execute("VACUUM ANALYZE")


async def timed(name: str, call: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        await call()
        seconds.append(time.perf_counter() - started)
    print(
        f"{name:<34} median {statistics.median(seconds) * 1000:8.1f} ms"
        f"   worst {max(seconds) * 1000:8.1f} ms"
    )
    return seconds


async def measure(dsn: str, repeat: int) -> None:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=2, name="bench-monitor")
    try:
        await maintenance.ensure_partitions(pool, months_ahead=1)
        window = 3600.0
        for name, call in (
            ("pending_depth", lambda: monitoring.pending_depth(pool)),
            (
                "terminal_runs_by_job_name",
                lambda: monitoring.terminal_runs_by_job_name(pool, window_seconds=window),
            ),
            (
                "failed_attempts_by_reason",
                lambda: monitoring.failed_attempts_by_reason(pool, window_seconds=window),
            ),
            (
                "attempts_per_completed_run",
                lambda: monitoring.attempts_per_completed_run(pool, window_seconds=window),
            ),
            ("lease_expiries", lambda: monitoring.lease_expiries(pool, window_seconds=window)),
            ("schedule_lag (5 min)", lambda: monitoring.schedule_lag(pool)),
        ):
            await timed(name, call, repeat)
        keeper = maintainer.Maintainer(pool, holder="bench")
        await timed(
            "the whole monitor pass", lambda: keeper._monitor(maintainer.PassReport()), repeat
        )
        for gauge in (
            maintainer_metrics.FINISHED_RUNS,
            maintainer_metrics.FAILED_ATTEMPTS,
            maintainer_metrics.RUNS_BY_ATTEMPTS,
        ):
            series = next(m for m in REGISTRY.collect() if m.name == gauge.name).samples
            print(f"{gauge.name:<44} {len(series):5d} series")
    finally:
        await pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="--hot 20000 --archived 200000")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--hot", type=int, default=200_000)
    parser.add_argument("--archived", type=int, default=2_000_000)
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.hot, arguments.archived = 20_000, 200_000
    with postgres.throwaway_postgres() as server:
        migrate.migrate(server.dsn)
        started = time.perf_counter()
        fill(
            server.dsn,
            jobs=arguments.jobs,
            hot=arguments.hot,
            archived=arguments.archived,
            pending=arguments.pending,
        )
        print(
            f"filled: {arguments.jobs} jobs, {arguments.hot} hot finished runs, "
            f"{arguments.archived} archived, {arguments.pending} pending "
            f"in {time.perf_counter() - started:.0f} s"
        )
        asyncio.run(measure(server.dsn, arguments.repeat))
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
