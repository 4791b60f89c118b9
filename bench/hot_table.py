"""Does the hot table stay bounded? A steady load through `sundial scheduler` and a runner.

Not a test: it prints figures. It starts a throwaway PostgreSQL (or uses ``--dsn``), a real
``sundial scheduler`` (with its maintainer, or ``--no-maintainer``) and a real ``sundial
runner`` serving a no-op handler, then submits ``--rate`` runs a second for ``--minutes``
minutes, in one INSERT every 100 ms. Every 30 s it prints the hot table (``job_runs``): its
rows, its total size with indexes and TOAST, its dead tuples, and the archive's rows
(``finished_runs``) and partitions.

With the maintainer the hot table levels off at about ``rate * (hot window + archive
interval)`` finished rows plus what is in flight; without it, it keeps every run it was ever
given. ``--compare`` runs both, one after the other, on fresh databases.

    .venv/bin/python bench/hot_table.py [--minutes 5] [--rate 500] [--hot-window 60s] [--compare]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import psycopg
from psycopg import sql

from sundial.localdev import postgres
from sundial.store import migrate

BENCH_DIR = Path(__file__).resolve().parent
HANDLER = "bench.noop"
REPORT_EVERY = 30.0
TICK = 0.1


def prepare(dsn: str) -> uuid.UUID:
    migrate.migrate(dsn)
    job = uuid.uuid4()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO job_definitions (id, namespace, name, handler) VALUES (%s, 'bench',"
            " 'hot-table', %s)",
            (job, HANDLER),
        )
    return job


def submit(conn: psycopg.Connection[tuple[object, ...]], job: uuid.UUID, count: int) -> None:
    """``count`` pending runs in one statement, as the trigger's batch insert writes them."""
    conn.execute(
        """
        INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                              max_retries, backoff_base_seconds, backoff_cap_seconds, state,
                              priority, run_at, dispatch_key)
        SELECT j.id, j.queue, j.handler, j.execution_model, j.timeout_seconds, j.max_retries,
               j.backoff_base_seconds, j.backoff_cap_seconds, 'pending', j.priority, now(),
               sundial_dispatch_key(now(), j.priority)
        FROM job_definitions j, generate_series(1, %s) WHERE j.id = %s
        """,
        (count, job),
    )


def sample(conn: psycopg.Connection[tuple[object, ...]]) -> tuple[int, int, int, int, int, int]:
    """(hot rows, hot finished rows, hot bytes, hot dead tuples, archived rows, partitions)."""
    row = conn.execute(
        """
        SELECT (SELECT count(*) FROM job_runs),
               (SELECT count(*) FROM job_runs WHERE finished_at IS NOT NULL),
               pg_total_relation_size('job_runs'),
               coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'job_runs'), 0),
               (SELECT count(*) FROM finished_runs),
               (SELECT count(*) FROM pg_inherits WHERE inhparent = 'finished_runs'::regclass)
        """
    ).fetchone()
    assert row is not None
    return tuple(int(value) for value in row)  # type: ignore[return-value]


def spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(BENCH_DIR))
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "sundial", *args], stdout=out, stderr=out, env=env
        )


def run(dsn: str, *, minutes: float, rate: int, hot_window: str, maintainer: bool) -> None:
    job = prepare(dsn)
    logs = Path(tempfile.mkdtemp(prefix="sundial-hot-table-"))
    label = f"maintainer on, hot window {hot_window}" if maintainer else "maintainer off"
    print(f"\n## {label}: {rate} runs/s for {minutes:g} min (logs in {logs})", flush=True)
    print(
        f"{'t (s)':>6} {'submitted':>10} {'hot rows':>9} {'hot done':>9} {'hot MB':>7}"
        f" {'dead tup':>9} {'archived':>9} {'parts':>5}",
        flush=True,
    )
    scheduler_args = ["scheduler", "--dsn", dsn, "--hot-window", hot_window]
    children = [
        spawn(scheduler_args + ([] if maintainer else ["--no-maintainer"]), logs / "scheduler.log"),
        spawn(
            ["runner", "--dsn", dsn, "--handlers", "bench_handlers", "--metrics-port", "-1"],
            logs / "runner.log",
        ),
    ]
    per_tick = max(1, round(rate * TICK))
    submitted = 0
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            started = time.monotonic()
            next_tick = started
            next_report = started
            while True:
                now = time.monotonic()
                if now >= next_report:
                    hot, done, size, dead, archived, parts = sample(conn)
                    print(
                        f"{now - started:6.0f} {submitted:10d} {hot:9d} {done:9d}"
                        f" {size / 2**20:7.1f} {dead:9d} {archived:9d} {parts:5d}",
                        flush=True,
                    )
                    next_report += REPORT_EVERY
                if now - started >= minutes * 60:
                    break
                if now >= next_tick:
                    submit(conn, job, per_tick)
                    submitted += per_tick
                    next_tick += TICK
                time.sleep(max(0.0, min(next_tick, next_report) - time.monotonic()))
    finally:
        for child in children:
            child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(60)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--rate", type=int, default=500, help="runs submitted per second")
    parser.add_argument("--hot-window", default="60s", help="the scheduler's --hot-window")
    parser.add_argument("--no-maintainer", action="store_true", help="run the scheduler without it")
    parser.add_argument("--compare", action="store_true", help="with, then without the maintainer")
    parser.add_argument("--dsn", default=None, help="an empty database (default: a throwaway one)")
    options = parser.parse_args()
    variants = [True, False] if options.compare else [not options.no_maintainer]
    with ExitStack() as stack:
        server = None
        if options.dsn is None:
            server = stack.enter_context(postgres.throwaway_postgres())
        for index, maintainer in enumerate(variants):
            if options.dsn is not None:
                dsn = options.dsn
            else:
                assert server is not None
                name = f"hot_table_{index}"
                with psycopg.connect(server.dsn, autocommit=True) as admin:
                    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                dsn = server.dsn_for(name)
            run(
                dsn,
                minutes=options.minutes,
                rate=options.rate,
                hot_window=options.hot_window,
                maintainer=maintainer,
            )


if __name__ == "__main__":
    main()
