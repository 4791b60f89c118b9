"""Overload: a fixed-rate producer past the runner's peak, step by step, then the drain.

Not a test: it prints figures. One throwaway PostgreSQL (or ``--dsn``), one job of 1 ms
(``bench.sleep``), a producer that submits at a fixed rate with ``runs.submit_many`` in
batches of 128, and ``sundial runner`` processes with ``--concurrency async=SLOTS
--maintenance`` (or ``--maintainer``: a ``sundial scheduler`` does the store's housekeeping
instead). After ``--warmup`` seconds at the first rate, each step offers one rate for
``--step-seconds`` and prints:

* submitted/s (what the producer managed: it shares the machine, and past a point it cannot
  offer the rate asked), completed/s over the step, and the backlog (pending runs) at its end;
* start lag p50 / p99 of the runs that started in the step (``started_at - run_at``, both
  stamped by the database: how long a due run waited for a claim);
* cores: the runners' CPU and PostgreSQL's (every process of the server, autovacuum too)
  over the step, and CPU per completed job.

Then the producer stops and the drain is timed: the backlog left and how fast it went. A
healthy queue completes at least 90% of its peak at every step past the peak, and drains at
that rate. A step whose producer submitted less than the peak (it shares the machine) is
also measured against what it submitted, in a second verdict. ``--statements`` also loads
``pg_stat_statements`` and prints each step's costliest statements (milliseconds per call,
blocks per call), ``job_runs``' dead tuples and its autovacuum and autoanalyze counts.

    .venv/bin/python bench/overload.py [--rates 2000,4000,8000] [--slots 256] [--runners 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from sundial.localdev import postgres
from sundial.store import migrate, runs
from sundial.store import pool as store_pool

BENCH_DIR = Path(__file__).resolve().parent
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


class Cores:
    """CPU seconds of the runner processes and of the whole PostgreSQL server."""

    def __init__(self, runners: list[int], postmaster: int | None, conn: Any) -> None:
        self.runners = runners
        self.postmaster = postmaster
        self.conn = conn
        self.seen: dict[int, float] = {}

    def _server_pids(self) -> list[int]:
        if self.postmaster is not None:
            return [self.postmaster, *_children(self.postmaster)]
        rows = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
        ).fetchall()
        return [pid for (pid,) in rows]

    def sample(self) -> tuple[float, float]:
        """(runner, PostgreSQL) CPU seconds since the last sample."""
        runner = server = 0.0
        for pid in self.runners:
            now = _cpu(pid)
            runner += now - self.seen.get(pid, now)
            self.seen[pid] = now
        for pid in self._server_pids():
            now = _cpu(pid)
            server += now - self.seen.get(pid, 0.0 if pid in self.seen else now)
            self.seen[pid] = now
        return runner, server


async def _produce(
    pool: store_pool.Pool,
    job: uuid.UUID,
    rate: list[float],
    submitted: list[int],
    stop: asyncio.Event,
) -> None:
    """Submit ``rate[0]`` runs/s (read every batch, so the caller can change it) until stop;
    count what went in in ``submitted[0]``. A producer that cannot keep up (it shares the
    machine) falls behind the rate, and the step shows what it did submit."""
    item = runs.BatchItem(args={"seconds": 0.001})
    owed = 0.0
    last = time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        owed = min(owed + rate[0] * (now - last), rate[0])  # at most a second behind
        last = now
        while owed >= 128:
            await runs.submit_many(pool, job, [item] * 128)
            submitted[0] += 128
            owed -= 128
        await asyncio.sleep(0.005)


def _statements(conn: Any) -> list[str]:
    """The costliest statements since the last call, and the hot table's vacuum state."""
    rows = conn.execute(
        "SELECT total_exec_time, calls, shared_blks_hit + shared_blks_read,"
        " regexp_replace(query, '\\s+', ' ', 'g')"
        " FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat_statements%%'"
        " ORDER BY total_exec_time DESC LIMIT 5"
    ).fetchall()
    table = conn.execute(
        "SELECT n_dead_tup, autovacuum_count, autoanalyze_count FROM pg_stat_user_tables"
        " WHERE relname = 'job_runs'"
    ).fetchone()
    conn.execute("SELECT pg_stat_statements_reset()")
    lines = [
        f"    {total / max(1, calls):9.2f} ms/call {calls:>7} calls {blocks / max(1, calls):9.0f}"
        f" blocks/call  {query[:110]}"
        for total, calls, blocks, query in rows
    ]
    if table is not None:
        lines.append(
            f"    job_runs: {table[0]:,} dead tuples, {table[1]} autovacuums, "
            f"{table[2]} autoanalyzes so far"
        )
    return lines


def _step_figures(conn: Any, since: float, until: float) -> dict[str, Any]:
    row = conn.execute(
        """
        SELECT (SELECT count(*) FROM job_runs
                WHERE finished_at >= to_timestamp(%(since)s)
                  AND finished_at < to_timestamp(%(until)s)),
               (SELECT count(*) FROM job_runs WHERE state = 'pending'),
               (SELECT percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (
                    ORDER BY extract(epoch FROM started_at - run_at))
                FROM job_runs
                WHERE started_at >= to_timestamp(%(since)s)
                  AND started_at < to_timestamp(%(until)s))
        """,
        {"since": since, "until": until},
    ).fetchone()
    completed, backlog, lags = row
    return {
        "completed": int(completed),
        "backlog": int(backlog),
        "lag_p50": None if lags is None else round(float(lags[0]), 3),
        "lag_p99": None if lags is None else round(float(lags[1]), 3),
    }


def _start(
    dsn: str, options: argparse.Namespace
) -> tuple[uuid.UUID, list[subprocess.Popen[bytes]]]:
    """The schema, the job and the processes that drain its runs."""
    migrate.migrate(dsn)
    job = uuid.uuid4()
    with psycopg.connect(dsn, autocommit=True) as conn:
        if options.statements:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute(
            "INSERT INTO job_definitions (id, namespace, name, handler) "
            "VALUES (%s, 'bench', 'overload', 'bench.sleep')",
            (job,),
        )
    env = dict(os.environ, PYTHONPATH=str(BENCH_DIR))
    processes = []
    for _ in range(options.runners):
        command = [
            sys.executable, "-m", "sundial", "runner", "--dsn", dsn,
            "--handlers", "bench_handlers", "--concurrency", f"async={options.slots}",
            "--metrics-port", "-1", "--log-level", "WARNING",
        ]  # fmt: skip
        if not options.maintainer:
            command.append("--maintenance")
        processes.append(subprocess.Popen(command, env=env))
    if options.maintainer:
        command = [
            sys.executable, "-m", "sundial", "scheduler", "--dsn", dsn,
            "--log-level", "warning", "--metrics-port", "0", "--metrics-host", "127.0.0.1",
        ]  # fmt: skip
        processes.append(subprocess.Popen(command, env=env))
    return job, processes


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


async def _measure(
    dsn: str,
    options: argparse.Namespace,
    job: uuid.UUID,
    pids: list[int],
    postmaster: int | None,
) -> dict[str, Any]:
    rates = [float(rate) for rate in options.rates.split(",")]
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=2, name="overload-producer")
    stop = asyncio.Event()
    rate, submitted = [rates[0]], [0]
    steps: list[dict[str, Any]] = []
    try:
        await asyncio.sleep(3)  # the runners' imports
        producer = asyncio.create_task(_produce(pool, job, rate, submitted, stop))
        with psycopg.connect(dsn, autocommit=True) as conn:
            cores = Cores(pids, postmaster, conn)
            await asyncio.sleep(options.warmup)
            for offered in rates:
                rate[0] = offered
                cores.sample()
                if options.statements:
                    _statements(conn)
                since, before = time.time(), submitted[0]
                await asyncio.sleep(options.step_seconds)
                until = time.time()
                runner_cpu, server_cpu = cores.sample()
                figures = _step_figures(conn, since, until)
                seconds = until - since
                completed = figures["completed"]
                steps.append(
                    {
                        "offered": offered,
                        "submitted_per_second": round((submitted[0] - before) / seconds),
                        "completed_per_second": round(completed / seconds),
                        **figures,
                        "runner_cores": round(runner_cpu / seconds, 2),
                        "postgres_cores": round(server_cpu / seconds, 2),
                        "cpu_us_per_job": round(
                            (runner_cpu + server_cpu) / max(1, completed) * 1e6
                        ),
                    }
                )
                print(_line(steps[-1]), flush=True)
                if options.statements:
                    print("\n".join(_statements(conn)), flush=True)
            stop.set()
            await producer
            left = _step_figures(conn, time.time(), time.time())["backlog"]
            started = time.monotonic()
            deadline = started + options.drain_seconds
            pending = left
            while pending and time.monotonic() < deadline:
                await asyncio.sleep(1)
                pending = _step_figures(conn, time.time(), time.time())["backlog"]
            took = time.monotonic() - started
            drain = {
                "backlog": left,
                "seconds": round(took, 1),
                "left": pending,
                "per_second": round((left - pending) / took) if took else None,
            }
            print(
                f"drain: {left:,} pending when the producer stopped; {left - pending:,} run "
                f"in {took:.0f} s ({drain['per_second']:,}/s), {pending:,} left",
                flush=True,
            )
    finally:
        stop.set()
        await pool.close()
    return {"steps": steps, "drain": drain}


def run(dsn: str, options: argparse.Namespace, postmaster: int | None) -> dict[str, Any]:
    job, processes = _start(dsn, options)
    try:
        pids = [process.pid for process in processes]
        return asyncio.run(_measure(dsn, options, job, pids, postmaster))
    finally:
        _stop(processes)


def _line(step: dict[str, Any]) -> str:
    return (
        f"offered {step['offered']:>6,.0f}/s  submitted {step['submitted_per_second']:>6,}/s  "
        f"completed {step['completed_per_second']:>6,}/s  "
        f"backlog {step['backlog']:>8,}  start lag p50 {step['lag_p50']}s p99 {step['lag_p99']}s  "
        f"cores runner {step['runner_cores']} postgres {step['postgres_cores']}  "
        f"{step['cpu_us_per_job']} us/job"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="2000,4000,8000", help="offered runs/s, per step")
    parser.add_argument("--step-seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds at the first rate")
    parser.add_argument("--slots", type=int, default=256, help="async slots per runner")
    parser.add_argument("--runners", type=int, default=1)
    parser.add_argument(
        "--maintainer", action="store_true", help="a `sundial scheduler`, not --maintenance"
    )
    parser.add_argument("--drain-seconds", type=float, default=300.0)
    parser.add_argument(
        "--statements", action="store_true", help="print pg_stat_statements per step"
    )
    parser.add_argument(
        "--pg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a PostgreSQL setting for the throwaway server (repeatable), e.g. "
        "autovacuum_naptime=60 for PostgreSQL's default",
    )
    parser.add_argument("--dsn", help="a superuser URL of an empty database (default: throwaway)")
    options = parser.parse_args()
    print(
        f"{options.runners} runner(s) x {options.slots} async slots, 1 ms jobs, batches of 128; "
        f"{'a scheduler maintains' if options.maintainer else '--maintenance'}; "
        f"warm-up {options.warmup:.0f} s, steps of {options.step_seconds:.0f} s"
        + "".join(f"; {setting}" for setting in options.pg),
        flush=True,
    )
    if options.dsn:
        result = run(options.dsn, options, None)
    else:
        settings = (
            {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "top"}
            if options.statements
            else {}
        )
        for setting in options.pg:
            name, _, value = setting.partition("=")
            if not name or not value:
                parser.error(f"--pg {setting!r}: give NAME=VALUE")
            settings[name] = value
        with postgres.throwaway_postgres(extra_settings=settings) as server:
            postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
            result = run(server.dsn, options, postmaster)
    peak = max(step["completed_per_second"] for step in result["steps"])
    worst = (
        min(
            step["completed_per_second"] / peak
            for step in result["steps"]
            if step["offered"] >= peak
        )
        if any(step["offered"] >= peak for step in result["steps"])
        else None
    )
    if worst is not None:
        print(f"past the peak ({peak:,}/s), the worst step completed {worst:.0%} of it")
        last = max(result["steps"], key=lambda step: step["offered"])
        if last["completed_per_second"] == peak:
            # Completions still rose at the highest rate offered: no step was past the peak,
            # and 100% says only that none fell. Offer more (--rates) to find the peak.
            print(
                f"the peak is the last step ({last['offered']:,}/s offered): completions "
                "still rose, so no step was past it; offer more to find where they stop"
            )
        # A step whose producer, sharing the machine, submitted less than the peak offered no
        # overload: what it could complete is what was submitted.
        offered = [
            step["completed_per_second"] / min(peak, step["submitted_per_second"])
            for step in result["steps"]
            if step["offered"] >= peak and step["submitted_per_second"] > 0
        ]
        print(
            f"past the peak, the worst step completed {min(offered):.0%} of the peak or of what "
            "its producer submitted, whichever was less"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
