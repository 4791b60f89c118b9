"""The real processes the benchmarks drive, and what they read from /proc and PostgreSQL.

Not a test helper: benchmarks import it (bench/ is on their sys.path). Each process is the
shipped command (`sundial runner`, `sundial scheduler`) started as a child, so a benchmark
measures the product, whatever its internals become. CPU is read from /proc (utime + stime),
so only a local server's backends are counted; every process started here is stopped by
``Processes.stop_all`` (SIGTERM, then SIGKILL), so nothing outlives a benchmark.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from sundial.localdev import postgres
from sundial.store import migrate

BENCH_DIR = Path(__file__).resolve().parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (every CPU, not idle or waiting for I/O) since
    boot, from /proc/stat: what a stage cost in all, whoever spent it, including processes
    too short-lived for a ``CpuMeter`` (autovacuum workers)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(value) for value in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / CLOCK_TICKS


def postgres_pids(server: postgres.ThrowawayPostgres) -> list[int]:
    """The postmaster and every process it forked (backends, autovacuum, WAL writer ...)."""
    try:
        postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    pids = [postmaster]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == postmaster:
            pids.append(int(stat.parent.name))
    return pids


def postgres_cpu_seconds(server: postgres.ThrowawayPostgres) -> float:
    """CPU seconds every process of ``server`` has spent since it started, those that exited
    included: the postmaster's own and its reaped children's (cutime, cstime), plus each live
    child's. Cumulative, so the difference of two reads is exact whatever connected between."""
    pids = postgres_pids(server)
    if not pids:
        return 0.0
    try:
        fields = Path(f"/proc/{pids[0]}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    reaped = (int(fields[13]) + int(fields[14])) / CLOCK_TICKS
    return reaped + sum(cpu_seconds(pid) for pid in pids)


class CpuMeter:
    """CPU seconds spent by a set of processes since the meter started.

    Processes are re-listed at each read, so backends opened later count from their birth;
    a process that exits between two reads loses what it spent after the previous read.
    """

    def __init__(self) -> None:
        self._start: dict[int, float] = {}
        self._last: dict[int, float] = {}

    def sample(self, pids: Sequence[int]) -> None:
        """Read the processes now; one not seen at start counts from its birth (0)."""
        for pid in pids:
            self._start.setdefault(pid, 0.0)
            self._last[pid] = cpu_seconds(pid) or self._last.get(pid, 0.0)

    def start(self, pids: Sequence[int]) -> None:
        self._start = {pid: cpu_seconds(pid) for pid in pids}
        self._last = dict(self._start)

    def spent(self) -> float:
        return sum(self._last[pid] - self._start.get(pid, 0.0) for pid in self._last)


def quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[round(q * 1000) - 1]


def load_average() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def create_database(server: postgres.ThrowawayPostgres, name: str) -> str:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = server.dsn_for(name)
    migrate.migrate(dsn)
    return dsn


def create_job(dsn: str, name: str, handler: str, **columns: Any) -> uuid.UUID:
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "namespace": "bench",
        "name": name,
        "handler": handler,
        "timeout_seconds": 60,
        "max_retries": 5,
        "backoff_base_seconds": 0.5,
        "backoff_cap_seconds": 2.0,
        **columns,
    }
    names = sql.SQL(", ").join(sql.Identifier(key) for key in values)
    marks = sql.SQL(", ").join(sql.Placeholder(key) for key in values)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("INSERT INTO job_definitions ({}) VALUES ({})").format(names, marks), values
        )
    return values["id"]  # type: ignore[no-any-return]


@contextlib.contextmanager
def throwaway(
    max_connections: int = 400, extra_settings: dict[str, str] | None = None
) -> Iterator[postgres.ThrowawayPostgres]:
    with postgres.throwaway_postgres(
        max_connections=max_connections, extra_settings=extra_settings
    ) as server:
        yield server


class Processes:
    """`sundial` child processes, all stopped by :meth:`stop_all`."""

    def __init__(self, dsn: str, *, env: dict[str, str] | None = None, label: str = "") -> None:
        """``label`` goes into each child's log name (``sundial-bench-LABEL-runner-1.log``),
        so that a benchmark of several rounds keeps every round's logs."""
        self.dsn = dsn
        self.env = dict(os.environ, PYTHONPATH=str(BENCH_DIR), **(env or {}))
        self.children: list[subprocess.Popen[bytes]] = []
        self.log_dir = Path(os.environ.get("SUNDIAL_BENCH_LOGS", "/tmp"))
        self.label = f"{label}-" if label else ""

    def start(
        self, name: str, arguments: list[str], *, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """`sundial ARGUMENTS...`, logging to the bench log directory; ``env`` adds variables."""
        path = self.log_dir / f"sundial-bench-{self.label}{name}-{len(self.children)}.log"
        log = open(path, "wb")  # noqa: SIM115
        child = subprocess.Popen(
            [sys.executable, "-m", "sundial", *arguments],
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self.children.append(child)
        return child

    def runner(
        self,
        *,
        async_slots: int = 1000,
        extra: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        return self.start(
            "runner",
            [
                "runner", "--dsn", self.dsn, "--handlers", "bench_handlers",
                "--concurrency", f"async={async_slots}", "--metrics-port", "-1",
                "--log-level", "WARNING", *extra,
            ],
            env=env,
        )  # fmt: skip

    def scheduler(
        self, *, extra: Sequence[str] = (), env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        return self.start("scheduler", ["scheduler", "--dsn", self.dsn, *extra], env=env)

    def pids(self) -> list[int]:
        return [child.pid for child in self.children if child.poll() is None]

    def stop(self, child: subprocess.Popen[bytes], timeout: float = 30) -> None:
        if child.poll() is None:
            child.send_signal(signal.SIGCONT)
            child.terminate()
            try:
                child.wait(timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    def stop_all(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGCONT)
                child.terminate()
        deadline = time.monotonic() + 30
        for child in self.children:
            try:
                child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (it reads in a terminal and pastes into docs/performance.md)."""
    cells = [[str(c) for c in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def create_schedules(
    dsn: str,
    count: int,
    *,
    first_fire: Any,
    spread_seconds: int,
    handler: str,
    run_args: str = "{}",
    cron_text: str = "* * * * *",
) -> list[uuid.UUID]:
    """``count`` schedules (each with its own job, as the operator writes them) that are all
    due at ``first_fire``, as at the top of a minute; returns their ids."""
    from sundial.scheduling import spread

    jobs, rows, ids = [], [], []
    for index in range(count):
        uid = uuid.uuid4()
        offset = spread.offset_for(uid, spread_seconds).total_seconds() * 1000
        jobs.append(f"{uid}\tbench\tsched-{index}-{uid.hex[:8]}\t{handler}\n")
        rows.append(
            f"{uid}\t{uid}\t{cron_text}\tUTC\t{first_fire.isoformat()}\t{spread_seconds}"
            f"\t{int(offset)}\t{run_args}\n"
        )
        ids.append(uid)
    with psycopg.connect(dsn) as conn, conn.cursor() as cursor:
        with cursor.copy("COPY job_definitions (id, namespace, name, handler) FROM STDIN") as copy:
            copy.write("".join(jobs))
        with cursor.copy(
            "COPY schedules (id, job_id, cron, timezone, next_fire_time, spread_seconds, "
            "spread_offset_ms, run_args) FROM STDIN"
        ) as copy:
            copy.write("".join(rows))
        cursor.execute("ANALYZE")
    return ids


# The runs of a database, live or archived (the maintainer moves finished ones away).
ALL_RUNS = """(
    SELECT id, job_id, schedule_id, state, attempt, run_at, started_at, finished_at,
           idempotency_key FROM job_runs
    UNION ALL
    SELECT id, job_id, schedule_id, state, attempt, run_at, started_at, finished_at,
           idempotency_key FROM finished_runs
)"""


def grid_instant(period_seconds: int, lead_seconds: float) -> Any:
    """The first multiple of ``period_seconds`` since the epoch at least ``lead_seconds`` away:
    a fire time of ``@every {period}s`` (and, for 60, of ``* * * * *``), as the trigger only
    fires schedules on their own grid."""
    from datetime import UTC, datetime

    earliest = time.time() + lead_seconds
    return datetime.fromtimestamp((int(earliest) // period_seconds + 1) * period_seconds, tz=UTC)


def suspend_schedules(dsn: str) -> None:
    """Stop every schedule of ``dsn`` firing again (the runs they made go on)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE schedules SET suspended = true")
