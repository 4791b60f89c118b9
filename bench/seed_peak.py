"""The design peak: N dispatches/s of 2 s async jobs, then 2x and 4x, until lag p99 passes 1 s.

Not a test: it prints one table. Each stage uses a fresh database on one throwaway PostgreSQL
and the shipped processes: `sundial scheduler` (the trigger; fire budget raised to the stage's
rate so only the system limits it) and P `sundial runner` processes serving ``bench.sleep``
(``await asyncio.sleep(2)``), with enough async slots for 1.5x the in-flight count.

The load has the design workload's two sources, both measured by the same metric:
* schedules: S schedules (one job each, ``@every {stage}s`` - for a 60 s stage the grid of
  ``* * * * *`` - with spreadSeconds = the stage's length) all due at the same instant, as at
  the top of a minute; the trigger fires them and spreads their run_at over the stage (they
  are suspended just before their next fire);
* one-shots: the rest of the rate, submitted live by this process every 50 ms with
  ``runs.submit_many`` (idempotency keys on), run_at = now.

Per stage: schedule lag (``started_at - run_at``, stamped by the database: the SLO metric)
p50/p99/max over every run due in the stage, runs not started before the stage's end plus
10 s, the rate reached (runs started per second), peak in flight, peak connections, and CPU
from /proc over the stage: runner processes, PostgreSQL (postmaster and every child), the
scheduler and the submitter, per job and in cores. "What saturates first" is read off those:
a runner at ~1 core (one Python thread), PostgreSQL near the cores left, or connections.

``--max-unfinished F`` gives each runner ``--max-unfinished`` of F times its slots (the
runner's default is 2): how far claims may run ahead of committed finishes (ADR 0028).

``--breakdown`` says where PostgreSQL's share goes: its CPU per backend, grouped by the
client that opened it (each process sets its own ``application_name``) or by the background
process (autovacuum, WAL writer ...), and the statements' execution time from
pg_stat_statements (wall time inside the server, so lock waits count too; under a run queue
longer than the cores it overstates CPU, which is why the per-backend CPU is printed beside it).

    .venv/bin/python bench/seed_peak.py                  # 6,000/s for 60 s, then 2x, 4x
    .venv/bin/python bench/seed_peak.py --quick          # 300/s for 20 s, then 2x ... 16x
    .venv/bin/python bench/seed_peak.py --rate 1200 --seconds 25 --runners 2 \
        --multipliers 1 --breakdown                      # where the CPU per job goes
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
import stack

from sundial.store import pool as store_pool
from sundial.store import runs

JOB_SECONDS = 2.0


@dataclass
class Stage:
    rate: float
    seconds: float
    runners: int
    schedules: int
    submitted: int = 0
    due: int = 0
    started: int = 0
    not_started: int = 0
    lag_p50: float = math.nan
    lag_p99: float = math.nan
    lag_max: float = math.nan
    lag_p99_fires: float = math.nan
    lag_p99_one_shots: float = math.nan
    reached: float = 0.0
    peak_in_flight: int = 0
    peak_connections: int = 0
    cpu: dict[str, float] = field(default_factory=dict)
    load: str = ""
    runner_exits: list[int | None] = field(default_factory=list)
    backends: dict[str, float] = field(default_factory=dict)  # PostgreSQL CPU by client
    statements: list[tuple[str, int, int, float, int]] = field(default_factory=list)
    #: CPU seconds the whole machine was busy during the stage (/proc/stat).
    machine: float = 0.0
    #: job_runs at the stage's end: live and dead tuples, autovacuums and autoanalyzes.
    table: tuple[int, int, int, int] = (0, 0, 0, 0)

    @property
    def jobs(self) -> int:
        return max(1, self.started)

    def cores(self, name: str) -> float:
        return self.cpu.get(name, 0.0) / self.seconds

    def verdict(self, ceiling: float) -> str:
        cores_left = (os.cpu_count() or 1) - self.cores("submitter") - self.cores("scheduler")
        per_runner = self.cores("runners") / self.runners
        notes = []
        if per_runner >= 0.85:
            notes.append(f"runners at {per_runner:.2f} core each")
        if self.cores("postgres") + self.cores("runners") >= 0.85 * cores_left:
            notes.append("machine CPU")
        busy = self.machine / self.seconds
        if busy >= 0.9 * (os.cpu_count() or 1):
            notes.append(f"the machine busy {busy:.2f} of {os.cpu_count()} cores")
        if self.peak_connections >= 0.9 * 400:
            notes.append("connections")
        load = os.getloadavg()[0] if not self.load else float(self.load.split("/")[0])
        if load > (os.cpu_count() or 1):
            notes.append(f"the machine's run queue (load {load:.0f} on {os.cpu_count()} CPUs)")
        if self.lag_p99 <= ceiling and self.not_started == 0:
            return "holds" + (f" ({', '.join(notes)})" if notes else "")
        return "BREAKS: " + (", ".join(notes) or "lag without a saturated resource")


async def submitter(dsn: str, job: Any, rate: float, start: float, seconds: float) -> int:
    """Submit ``rate`` one-shots per second from ``start`` (monotonic) for ``seconds``."""
    pool = await store_pool.open_pool(dsn + "?application_name=submitter", min_size=4, max_size=4)
    submitted = 0
    pending: set[asyncio.Task[Any]] = set()
    try:
        await asyncio.sleep(max(0.0, start - time.monotonic()))
        while (elapsed := time.monotonic() - start) < seconds:
            target = int(rate * elapsed)
            batch = target - submitted
            if batch > 0:
                items = [
                    runs.BatchItem(idempotency_key=f"one-shot-{submitted + i}")
                    for i in range(batch)
                ]
                submitted += batch
                task = asyncio.create_task(runs.submit_many(pool, job, items))
                pending.add(task)
                task.add_done_callback(pending.discard)
                while len(pending) >= 4:
                    await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            await asyncio.sleep(0.05)
        if pending:
            await asyncio.gather(*pending)
    finally:
        await pool.close()
    return submitted


class BackendCpu:
    """PostgreSQL's CPU over a stage, per backend, summed by who the backend serves."""

    def __init__(self) -> None:
        self._start: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._label: dict[int, str] = {}

    def sample(self, server: Any, conn: psycopg.Connection[Any], *, first: bool = False) -> None:
        labels = dict(
            conn.execute(
                "SELECT pid, CASE WHEN backend_type = 'client backend'"
                " THEN 'client ' || coalesce(nullif(application_name, ''), '?')"
                " ELSE backend_type END FROM pg_stat_activity"
            ).fetchall()
        )
        pids = stack.postgres_pids(server)
        for pid in pids:
            spent = stack.cpu_seconds(pid)
            if first:
                self._start[pid] = spent
            else:
                self._start.setdefault(pid, 0.0)
            self._last[pid] = spent or self._last.get(pid, 0.0)
            fallback = "postmaster" if pid == pids[0] else "other"
            self._label.setdefault(pid, labels.get(pid, fallback))

    def spent(self) -> dict[str, float]:
        by_label: dict[str, float] = {}
        for pid, last in self._last.items():
            label = self._label[pid]
            by_label[label] = by_label.get(label, 0.0) + last - self._start.get(pid, 0.0)
        return by_label


def run_stage(server: Any, options: argparse.Namespace, rate: float, index: int) -> Stage:
    stage = Stage(rate=rate, seconds=options.seconds, runners=options.runners, schedules=0)
    dsn = stack.create_database(server, f"seed_peak_{index}")
    job = stack.create_job(dsn, "one-shot", "bench.sleep", max_retries=0)
    if options.breakdown:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    if options.job_runs_storage:
        with psycopg.connect(dsn, autocommit=True) as conn:  # a trusted operator's own text
            conn.execute(f"ALTER TABLE job_runs SET ({options.job_runs_storage})".encode())
    schedule_rate = min(rate, options.schedules / options.seconds)
    stage.schedules = int(schedule_rate * options.seconds)
    oneshot_rate = rate - schedule_rate
    lead = 8.0 + options.runners  # start-up of the processes before the stage begins
    # The trigger fires a schedule only on its own grid: `@every {seconds}s` (for 60 s, the
    # grid of `* * * * *`) and the first grid instant after the processes are up.
    period = int(options.seconds)
    first_fire = stack.grid_instant(period, lead)
    if stage.schedules:
        stack.create_schedules(
            dsn,
            stage.schedules,
            first_fire=first_fire,
            spread_seconds=period,
            handler="bench.sleep",
            cron_text=f"@every {period}s",
        )
    processes = stack.Processes(dsn)
    slots = math.ceil(rate * JOB_SECONDS * 1.5 / options.runners) + 50
    unfinished = []
    if options.max_unfinished is not None:  # times the slots; the runner's default is 2
        unfinished = ["--max-unfinished", str(math.ceil(slots * options.max_unfinished))]
    try:
        runners = [
            processes.runner(
                async_slots=slots,
                extra=unfinished,
                env={"PGAPPNAME": f"runner-{n}"},
            )
            for n in range(options.runners)
        ]
        scheduler = processes.scheduler(
            extra=["--poll-seconds", "0.2", "--fires-per-second", str(rate * 2)],
            env={"PGAPPNAME": "scheduler"},
        )  # fmt: skip
        start = time.monotonic() + (first_fire - datetime.now(UTC)).total_seconds()
        sampled = {"in_flight": 0, "connections": 0}

        async def watch() -> None:
            with psycopg.connect(dsn, autocommit=True, application_name="bench-watch") as conn:
                await asyncio.sleep(max(0.0, start - time.monotonic()))
                backends = BackendCpu()
                backends.sample(server, conn, first=True)
                if options.breakdown:
                    conn.execute("SELECT pg_stat_statements_reset()")
                groups = {
                    "runners": [r.pid for r in runners],
                    "scheduler": [scheduler.pid],
                    "postgres": stack.postgres_pids(server),
                    "submitter": [os.getpid()],
                }
                busy_before = stack.machine_busy_seconds()
                meters = {name: stack.CpuMeter() for name in groups}
                for name, pids in groups.items():
                    meters[name].start(pids)
                suspended = False
                while time.monotonic() < start + options.seconds:
                    if not suspended and time.monotonic() > start + options.seconds - 1.5:
                        # The next fire is at the stage's end: it belongs to no stage.
                        conn.execute("UPDATE schedules SET suspended = true")
                        suspended = True
                    await asyncio.sleep(1.0)
                    row = conn.execute(
                        "SELECT (SELECT count(*) FROM job_runs WHERE state = 'running'),"
                        " (SELECT count(*) FROM pg_stat_activity"
                        "  WHERE backend_type = 'client backend')"
                    ).fetchone()
                    assert row is not None
                    sampled["in_flight"] = max(sampled["in_flight"], row[0])
                    sampled["connections"] = max(sampled["connections"], row[1])
                    groups["postgres"] = stack.postgres_pids(server)
                    for name, pids in groups.items():
                        meters[name].sample(pids)
                    backends.sample(server, conn)
                stage.cpu = {name: m.spent() for name, m in meters.items()}
                stage.machine = stack.machine_busy_seconds() - busy_before
                stage.backends = backends.spent()
                if options.breakdown:
                    row = conn.execute(
                        "SELECT n_live_tup::int, n_dead_tup::int, autovacuum_count::int,"
                        " autoanalyze_count::int FROM pg_stat_user_tables"
                        " WHERE relname = 'job_runs'"
                    ).fetchone()
                    if row is not None:
                        stage.table = row
                    stage.statements = [
                        (query, calls, rows, total_ms, blocks)
                        for query, calls, rows, total_ms, blocks in conn.execute(
                            "SELECT regexp_replace(query, '\\s+', ' ', 'g'), calls::int,"
                            " rows::int, total_exec_time,"
                            " (shared_blks_hit + shared_blks_read)::bigint"
                            " FROM pg_stat_statements"
                            " WHERE dbid = (SELECT oid FROM pg_database"
                            "               WHERE datname = current_database())"
                            " ORDER BY total_exec_time DESC LIMIT 15"
                        ).fetchall()
                    ]

        async def drive() -> int:
            watcher = asyncio.create_task(watch())
            count = await submitter(dsn, job, oneshot_rate, start, options.seconds)
            await watcher
            return count

        stage.submitted = asyncio.run(drive()) + stage.schedules
        stage.load = stack.load_average()
        # Let the last runs start (and be counted late), then read the lags.
        deadline = time.monotonic() + 10 + JOB_SECONDS
        with psycopg.connect(dsn, autocommit=True) as conn:
            while time.monotonic() < deadline:
                row = conn.execute(
                    "SELECT count(*) FROM job_runs WHERE state IN ('pending', 'scheduled')"
                ).fetchone()
                if row is not None and row[0] == 0:
                    break
                time.sleep(0.5)
            measured = conn.execute(
                "SELECT extract(epoch FROM started_at - run_at)::float8, schedule_id IS NOT NULL"
                f" FROM {stack.ALL_RUNS} r WHERE started_at IS NOT NULL"
            ).fetchall()
            row = conn.execute(
                "SELECT count(*), extract(epoch FROM max(started_at) - min(started_at))::float8"
                f" FROM {stack.ALL_RUNS} r"
            ).fetchone()
            assert row is not None
            stage.due, span = int(row[0]), float(row[1] or options.seconds)
        lags = [lag for lag, _ in measured]
        stage.lag_p99_fires = stack.quantile(sorted(lag for lag, fired in measured if fired), 0.99)
        stage.lag_p99_one_shots = stack.quantile(
            sorted(lag for lag, fired in measured if not fired), 0.99
        )
        stage.started = len(lags)
        stage.not_started = stage.due - stage.started
        lags.sort()
        stage.lag_p50 = stack.quantile(lags, 0.50)
        stage.lag_p99 = stack.quantile(lags, 0.99)
        stage.lag_max = lags[-1] if lags else math.nan
        stage.reached = stage.started / max(span, 1.0)
        stage.peak_in_flight = sampled["in_flight"]
        stage.peak_connections = sampled["connections"]
        stage.runner_exits = [r.poll() for r in runners]
    finally:
        processes.stop_all()
    return stage


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=6000.0, help="first stage's dispatches/s")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each stage")
    parser.add_argument("--runners", type=int, default=4, help="runner processes")
    parser.add_argument(
        "--schedules", type=int, default=10_000, help="schedules due at once per stage"
    )
    parser.add_argument("--multipliers", default="1,2,4", help="rates to try, times --rate")
    parser.add_argument("--ceiling", type=float, default=1.0, help="lag p99 SLO (seconds)")
    parser.add_argument(
        "--pg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a PostgreSQL setting for the throwaway server (repeatable)",
    )
    parser.add_argument(
        "--job-runs-storage",
        metavar="PARAMS",
        help="storage parameters set on job_runs, e.g. 'autovacuum_vacuum_scale_factor = 0.01'",
    )
    parser.add_argument(
        "--max-unfinished",
        type=float,
        help="each runner's --max-unfinished, times its slots (unset: the runner's default, 2)",
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="print PostgreSQL's CPU by client and pg_stat_statements per stage",
    )
    parser.add_argument(
        "--quick", action="store_true", help="300/s x 1, 2, 4, 8, 16; 20 s stages; 2 runners"
    )
    options = parser.parse_args()
    if options.quick:
        options.rate, options.seconds, options.runners = 300.0, 20.0, 2
        options.schedules, options.multipliers = 1000, "1,2,4,8,16"
    stages: list[Stage] = []
    settings = {}
    if options.breakdown:
        settings = {
            "shared_preload_libraries": "pg_stat_statements",
            "pg_stat_statements.track": "top",
        }
    for setting in options.pg:
        name, _, value = setting.partition("=")
        settings[name] = value
    with stack.throwaway(max_connections=400, extra_settings=settings) as server:
        for index, multiplier in enumerate(float(m) for m in options.multipliers.split(",")):
            stage = run_stage(server, options, options.rate * multiplier, index)
            stages.append(stage)
            print(
                f"  {stage.rate:,.0f}/s: lag p99 {stage.lag_p99:.3f} s, reached "
                f"{stage.reached:,.0f}/s, load {stage.load}",
                flush=True,
            )
            if stage.lag_p99 > options.ceiling or stage.not_started:
                break
    print()
    print(report(stages, options))
    if options.breakdown:
        for stage in stages:
            print()
            print(breakdown(stage))
    return 0


def breakdown(stage: Stage) -> str:
    jobs = stage.jobs
    live, dead, vacuums, analyzes = stage.table
    lines = [
        f"{stage.rate:,.0f}/s: {jobs:,} runs started, load {stage.load}; job_runs at the end:"
        f" {live:,} live and {dead:,} dead tuples, {vacuums} autovacuums, {analyzes}"
        " autoanalyzes",
        "",
    ]
    rows = [
        [label, f"{spent / jobs * 1e6:.0f}", f"{spent / stage.seconds:.2f}"]
        for label, spent in sorted(stage.backends.items(), key=lambda item: -item[1])
        if spent > 0
    ]
    lines.append(stack.table(["PostgreSQL process", "µs/job", "cores"], rows))
    lines.append("")
    rows = [
        [query[:90], f"{calls:,}", f"{count:,}", f"{total_ms:,.0f}",
         f"{total_ms * 1000 / jobs:.0f}", f"{total_ms / max(calls, 1):.2f}",
         f"{blocks / max(count, 1):.1f}"]
        for query, calls, count, total_ms, blocks in stage.statements
    ]  # fmt: skip
    headers = ["statement", "calls", "rows", "total ms", "µs/job", "ms/call", "blocks/row"]
    lines.append(stack.table(headers, rows))
    return "\n".join(lines)


def report(stages: list[Stage], options: argparse.Namespace) -> str:
    rows = []
    for s in stages:
        cpu_total = sum(s.cpu.values())
        rows.append(
            [
                f"{s.rate:,.0f}", f"{s.reached:,.0f}", s.runners, f"{s.schedules:,}",
                f"{s.submitted:,}", f"{s.lag_p50 * 1000:.0f}", f"{s.lag_p99 * 1000:.0f}",
                f"{s.lag_p99_fires * 1000:.0f}/{s.lag_p99_one_shots * 1000:.0f}",
                f"{s.lag_max * 1000:.0f}",
                s.not_started, f"{s.peak_in_flight:,}", s.peak_connections,
                f"{s.cpu.get('runners', 0) / s.jobs * 1e6:.0f}",
                f"{s.cpu.get('postgres', 0) / s.jobs * 1e6:.0f}",
                f"{cpu_total / s.jobs * 1e6:.0f}",
                f"{s.cores('runners'):.2f}", f"{s.cores('postgres'):.2f}",
                f"{s.cores('scheduler'):.2f}", f"{s.cores('submitter'):.2f}",
                f"{s.machine / s.seconds:.2f}", s.load, s.verdict(options.ceiling),
            ]
        )  # fmt: skip
    headers = [
        "target/s", "reached/s", "runners", "schedules", "runs", "lag p50 ms", "lag p99 ms",
        "p99 fires/one-shots ms", "lag max ms", "not started", "peak in flight", "peak conns",
        "runner µs/job",
        "postgres µs/job", "all µs/job", "runner cores", "postgres cores", "scheduler cores",
        "submitter cores", "machine cores", "load 1/5/15", "verdict",
    ]  # fmt: skip
    command = (
        f".venv/bin/python bench/seed_peak.py --rate {options.rate:g} --seconds "
        f"{options.seconds:g} --runners {options.runners} --schedules {options.schedules} "
        f"--multipliers {options.multipliers}"
        + (
            ""
            if options.max_unfinished is None
            else f" --max-unfinished {options.max_unfinished:g}"
        )
        + "".join(f" --pg {setting}" for setting in options.pg)
        + (
            ""
            if not options.job_runs_storage
            else f" --job-runs-storage '{options.job_runs_storage}'"
        )
    )
    return (
        f"design peak: {JOB_SECONDS:g} s async jobs, {os.cpu_count()} CPUs\n"
        + stack.table(headers, rows)
        + f"\nreproduce: {command}"
    )


if __name__ == "__main__":
    sys.exit(main())
