"""Bursts of no-op runs drained by one runner over a big hot table (docs/adr/0028).

Not a test: prints figures. Starts a throwaway PostgreSQL, fills ``job_runs`` with
``--hot`` completed runs (as a soak leaves them when no operator archives), VACUUM ANALYZE,
starts one real ``sundial runner`` (async=500) and then, ``--bursts`` times in a row, inserts
``--burst`` pending runs and waits until none is pending or running. Per burst it prints

* jobs/s: the burst's runs / (last finished_at - first started_at), both database time;
* PostgreSQL µs per job: CPU time of the server's processes over the burst (from /proc:
  backends, autovacuum, WAL writer; a process that exits during the burst is not counted);
* the peak of rows in state ``running``, sampled every 0.1 s through the running index;
* how many of the burst's runs were executed more than once (a lease lapsed: the first
  attempt's finish was fenced out and the reaper handed the run out again);
* the load averages, as the machine may be shared.

``--statements`` also loads ``pg_stat_statements`` and prints, after each burst, the server's
CPU split by process kind (backends, autovacuum, the rest) and the statements that took the
most time in the burst, in µs per job: which one grows with the table.

It runs whatever ``sundial`` is importable, so the same file measures another checkout:
``PYTHONPATH=/path/to/other/src:bench .venv/bin/python bench/finish_backlog.py``.

    .venv/bin/python bench/finish_backlog.py [--quick] [--hot 1500000] [--burst 100000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

import sundial
from sundial.localdev import postgres
from sundial.store import migrate

BENCH_DIR = Path(__file__).resolve().parent
_TICKS = os.sysconf("SC_CLK_TCK")


def server_cpu_seconds(postmaster: int) -> dict[int, float]:
    """CPU seconds of the postmaster and of each of its children, by pid."""
    found: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry.name), int(fields[1])
        if pid == postmaster or parent == postmaster:
            found[pid] = (int(fields[11]) + int(fields[12])) / _TICKS
    return found


def server_cpu_by_kind(postmaster: int, pids: dict[int, float]) -> dict[str, float]:
    """CPU seconds of ``pids`` summed by process kind (from the process title)."""
    kinds: dict[str, float] = {}
    for pid, seconds in pids.items():
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            title = "gone"
        if pid == postmaster:
            kind = "postmaster"
        elif "autovacuum" in title:
            kind = "autovacuum"
        elif any(word in title for word in ("writer", "checkpointer", "walwriter", "launcher")):
            kind = "background"
        else:
            kind = "backends"
        kinds[kind] = kinds.get(kind, 0.0) + seconds
    return kinds


def vacuum_counts(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    row = conn.execute(
        "SELECT autovacuum_count, autoanalyze_count FROM pg_stat_user_tables"
        " WHERE relname = 'job_runs'"
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def top_statements(conn: psycopg.Connection[Any], jobs: int) -> list[str]:
    """The statements that took most time since the last reset, µs per job."""
    rows = conn.execute(
        "SELECT total_exec_time, calls, shared_blks_hit + shared_blks_read, query"
        " FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat_statements%%'"
        " ORDER BY total_exec_time DESC LIMIT 6"
    ).fetchall()
    conn.execute("SELECT pg_stat_statements_reset()")
    return [
        f"        {total * 1000 / jobs:8.1f} µs/job {calls:>7} calls "
        f"{blocks / max(calls, 1):>9.1f} blocks/call  {' '.join(query.split())[:110]}"
        for total, calls, blocks, query in rows
    ]


def insert_runs(conn: psycopg.Connection[Any], job: uuid.UUID, count: int, state: str) -> None:
    finished = "now()" if state == "completed" else "NULL"
    conn.execute(
        f"""
        INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                              max_retries, backoff_base_seconds, backoff_cap_seconds, state,
                              priority, run_at, dispatch_key, args, attempt, started_at,
                              finished_at)
        SELECT %s, 'default', 'bench.noop', 'async', 60, 3, 1, 60, %s, 1, now(),
               sundial_dispatch_key(now(), 1::smallint), '{{}}', %s, {finished}, {finished}
        FROM generate_series(1, %s)
        """,
        (job, state, 1 if state == "completed" else 0, count),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="--hot 200000 --burst 20000")
    parser.add_argument("--hot", type=int, default=1_500_000)
    parser.add_argument("--burst", type=int, default=100_000)
    parser.add_argument("--bursts", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--statements", action="store_true", help="pg_stat_statements per burst")
    options = parser.parse_args()
    if options.quick:
        options.hot, options.burst = 200_000, 20_000

    print(f"sundial from {Path(sundial.__file__).parent}")
    extra = (
        {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all"}
        if options.statements
        else {}
    )
    with postgres.throwaway_postgres(extra_settings=extra) as server:
        dsn = server.dsn
        migrate.migrate(dsn)
        postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        job = uuid.uuid4()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO job_definitions (id, namespace, name, handler) "
                "VALUES (%s, 'bench', 'noop', 'bench.noop')",
                (job,),
            )
            started = time.monotonic()
            for first in range(0, options.hot, 500_000):
                insert_runs(conn, job, min(500_000, options.hot - first), "completed")
            conn.execute("VACUUM ANALYZE job_runs")
            if options.statements:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                conn.execute("SELECT pg_stat_statements_reset()")
            print(f"hot table: {options.hot} completed runs in {time.monotonic() - started:.0f} s")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([*sys.path[1:], str(BENCH_DIR)]))
            command = [
                sys.executable, "-m", "sundial", "runner",
                "--dsn", dsn, "--handlers", "bench_handlers",
                "--concurrency", f"async={options.concurrency}",
                "--metrics-port", "-1", "--log-level", "ERROR",
            ]  # fmt: skip
            runner = subprocess.Popen(command, env=env)
            try:
                print(
                    f"{'burst':>5} {'jobs/s':>8} {'PG µs/job':>10} {'peak running':>13} "
                    f"{'seconds':>8} {'run again':>9}  load"
                )
                for burst in range(1, options.bursts + 1):
                    row = conn.execute("SELECT coalesce(max(id), 0) FROM job_runs").fetchone()
                    first_id = int(row[0]) + 1 if row else 1
                    before = server_cpu_seconds(postmaster)
                    vacuums_before = vacuum_counts(conn)
                    began = time.monotonic()
                    insert_runs(conn, job, options.burst, "pending")
                    peak = 0
                    while True:
                        row = conn.execute(
                            "SELECT (SELECT count(*) FROM job_runs WHERE state = 'running'),"
                            " EXISTS (SELECT 1 FROM job_runs WHERE state = 'pending')"
                        ).fetchone()
                        assert row is not None
                        peak = max(peak, int(row[0]))
                        if row[0] == 0 and not row[1]:
                            break
                        if runner.poll() is not None:
                            sys.exit(f"the runner exited with {runner.returncode}")
                        time.sleep(0.1)
                    wall = time.monotonic() - began
                    after = server_cpu_seconds(postmaster)
                    cpu = sum(after[pid] - before.get(pid, 0.0) for pid in after)
                    row = conn.execute(
                        "SELECT count(*) FILTER (WHERE state = 'completed'),"
                        " count(*) FILTER (WHERE attempt > 1),"
                        " extract(epoch FROM max(finished_at) - min(started_at))"
                        " FROM job_runs WHERE id >= %s",
                        (first_id,),
                    ).fetchone()
                    assert row is not None and row[0] == options.burst, f"burst: {row}"
                    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
                    print(
                        f"{burst:>5} {options.burst / float(row[2]):>8.0f} "
                        f"{cpu / options.burst * 1e6:>10.1f} {peak:>13} {wall:>8.1f} "
                        f"{row[1]:>9}  {load}",
                        flush=True,
                    )
                    if options.statements:
                        spent = {pid: after[pid] - before.get(pid, 0.0) for pid in after}
                        kinds = server_cpu_by_kind(postmaster, spent)
                        vacuums = [
                            b - a for a, b in zip(vacuums_before, vacuum_counts(conn), strict=True)
                        ]
                        print(
                            f"        autovacuums {vacuums[0]}, autoanalyzes {vacuums[1]} of"
                            " job_runs (workers that exited are not in the CPU); CPU µs/job: "
                            + ", ".join(
                                f"{kind} {seconds / options.burst * 1e6:.1f}"
                                for kind, seconds in sorted(kinds.items())
                            ),
                            flush=True,
                        )
                        print("\n".join(top_statements(conn, options.burst)), flush=True)
            finally:
                runner.terminate()
                runner.wait(60)
    print(
        "reproduce: .venv/bin/python bench/finish_backlog.py "
        + ("--quick" if options.quick else f"--hot {options.hot} --burst {options.burst}")
        + (" --statements" if options.statements else "")
    )


if __name__ == "__main__":
    main()
