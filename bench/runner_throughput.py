"""No-op async jobs through ONE `sundial runner` process, beside pgqueuer and procrastinate.

Not a test: it prints figures. Everything runs on the same PostgreSQL (a throwaway server by
default), each system in its own database, over the same number of jobs, one after another:

* sundial: a real `sundial runner` child process (full protocol: batched claim with a lease,
  batched heartbeats, batched fenced finish, LISTEN/NOTIFY, maintenance tick), handler
  ``bench.noop`` (async). Runs are inserted first; the figure is runs / (last finished_at -
  first started_at), both stamped by the database, so process start-up is not counted.
* pgqueuer (if installed): ``QueueManager.run(mode=drain)`` on an ``AsyncpgPoolDriver`` (its
  fast path), jobs enqueued with one batched ``Queries.enqueue`` per 5,000; the best of a few
  ``batch_size`` settings is reported. Timed in-process around ``run`` (includes its start-up:
  a few ms).
* procrastinate (if installed): ``run_worker_async(wait=False)`` with ``PsycopgConnector``,
  jobs deferred with ``batch_defer_async``; best of a few ``concurrency`` settings.
* raw: the textbook claim statement + a batched ``(id, attempt)``-fenced finish on one
  connection, no job execution (bench/store_throughput.py's ``raw_loop``): the ceiling.
* raw, array claim: the same loop with the claim's picked ids handed to the UPDATE as an
  array (``id = ANY(ARRAY(SELECT … FOR UPDATE SKIP LOCKED))``) instead of a CTE join, which
  PostgreSQL plans as a hash join over a sequential scan of the whole table; sundial's own
  claim does this since ADR 0012, so this is the ceiling for the same SQL shape.

The sundial leg waits for the end by polling the two small partial indexes (pending,
running), not by counting the table, so the poll does not steal CPU from the runner.

A peer that is not installed is skipped with a message. Install them only for the bench:
``.venv/bin/pip install pgqueuer procrastinate asyncpg``.

    .venv/bin/python bench/runner_throughput.py [--jobs 20000] [--dsn URL-of-a-superuser]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.parse
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import store_throughput
from psycopg import sql

from sundial.localdev import postgres
from sundial.store import migrate

BENCH_DIR = Path(__file__).resolve().parent


def create_database(admin_dsn: str, name: str) -> str:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    # A URL, not key=value: asyncpg (pgqueuer's fast driver) only takes URLs.
    parts = urllib.parse.urlsplit(admin_dsn)
    if parts.scheme not in ("postgresql", "postgres"):
        raise SystemExit("--dsn must be a postgresql:// URL")
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))


# -- CPU per job ------------------------------------------------------------------------------

# Wall-clock jobs/s on a shared 2-core machine mostly measure the neighbours; CPU time per job
# of the worker process plus its PostgreSQL backends is what the machine pays whatever else
# runs. Read from /proc, so only with a local server (else not printed).
CPU_MICROSECONDS_PER_JOB: dict[str, tuple[float, float]] = {}


def _cpu_seconds(pid: int) -> float:
    value = store_throughput._backend_cpu(pid)
    return 0.0 if value is None else value


class CpuMeter:
    """CPU of one worker process (``pid``, or this process if None) and of every backend of
    ``conn``'s database except ``conn``'s own, from now until ``per_job``."""

    def __init__(self, conn: psycopg.Connection[Any], pid: int | None) -> None:
        self.pid = pid
        self.worker = self._worker_cpu()
        self.backends = self._backend_cpus(conn)

    def _worker_cpu(self) -> float:
        return time.process_time() if self.pid is None else _cpu_seconds(self.pid)

    @staticmethod
    def _backend_cpus(conn: psycopg.Connection[Any]) -> dict[int, float]:
        pids = conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        return {pid: _cpu_seconds(pid) for (pid,) in pids}

    def per_job(self, conn: psycopg.Connection[Any], jobs: int) -> tuple[float, float]:
        """(worker, PostgreSQL) CPU microseconds per job since the meter started."""
        worker = self._worker_cpu() - self.worker
        now = self._backend_cpus(conn)
        database = sum(cpu - self.backends.get(pid, 0.0) for pid, cpu in now.items())
        return worker / jobs * 1e6, database / jobs * 1e6


# -- sundial ----------------------------------------------------------------------------------


def _runner_dsn(dsn: str, login: str) -> str:
    """The DSN the runner connects with: the database's owner (``owner``), a login with the
    runner's grants (``runner``), or one kept to the jobs' namespace (``kept``, row-level
    security on the runs: docs/adr/0068-logins-kept-to-namespaces.md)."""
    if login == "owner":
        return dsn
    name, password = f"bench_{login}", "bench-password"
    migrate.migrate(
        dsn,
        grant_roles=True,
        logins={"runner": (name, password)},
        kept_to_namespaces={name: ["bench"] if login == "kept" else None},
    )
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    return psycopg.conninfo.make_conninfo(**{**info, "user": name, "password": password})  # type: ignore[arg-type]


def sundial_leg(
    admin_dsn: str,
    jobs: int,
    concurrency: int,
    handler: str = "bench.noop",
    login: str = "owner",
) -> float:
    dsn = create_database(admin_dsn, "bench_sundial")
    migrate.migrate(dsn)
    runner_dsn = _runner_dsn(dsn, login)
    job = uuid.uuid4()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO job_definitions (id, namespace, name, handler) "
            "VALUES (%s, 'bench', 'noop', %s)",
            (job, handler),
        )
        conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds,
                                  state, priority, run_at, dispatch_key, args, namespace)
            SELECT %s, 'default', %s, 'async', 60, 3, 1, 60, 'pending', 1, now(),
                   sundial_dispatch_key(now(), 1::smallint), '{}', 'bench'
            FROM generate_series(1, %s)
            """,
            (job, handler, jobs),
        )
        conn.execute("VACUUM ANALYZE job_runs")
    env = dict(os.environ, PYTHONPATH=str(BENCH_DIR))
    command = [
        sys.executable, "-m", "sundial", "runner",
        "--dsn", runner_dsn, "--handlers", "bench_handlers",
        "--concurrency", f"async={concurrency}",
        *(["--namespace", "bench"] if login == "kept" else []),
        "--metrics-port", "-1", "--log-level", "WARNING",
    ]  # fmt: skip
    runner = subprocess.Popen(command, env=env)
    try:
        deadline = time.monotonic() + 600
        with psycopg.connect(dsn, autocommit=True) as conn:
            # CPU from the first claim on (start-up imports are not the protocol's cost).
            while not conn.execute(
                "SELECT EXISTS (SELECT 1 FROM job_runs WHERE state = 'running')"
                " OR EXISTS (SELECT 1 FROM job_runs WHERE finished_at IS NOT NULL)"
            ).fetchone()[0]:  # type: ignore[index]
                if runner.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("sundial runner stopped before its first claim")
                time.sleep(0.005)
            cpu = CpuMeter(conn, runner.pid)
            # Poll through the two partial indexes (pending, running) only: counting the
            # whole table every poll took ~16 ms of the database's CPU each time, competing
            # with the runner being measured.
            while True:
                row = conn.execute(
                    "SELECT NOT EXISTS (SELECT 1 FROM job_runs WHERE state = 'pending')"
                    " AND NOT EXISTS (SELECT 1 FROM job_runs WHERE state = 'running')"
                ).fetchone()
                assert row is not None
                if row[0]:
                    break
                if runner.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("sundial runner stopped early or stalled")
                time.sleep(0.1)
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE state = 'completed'),"
                " extract(epoch FROM max(finished_at) - min(started_at))"
                " FROM job_runs"
            ).fetchone()
            assert row is not None and row[0] == jobs, f"only {row} runs completed"
            seconds = float(row[1])
            CPU_MICROSECONDS_PER_JOB["sundial"] = cpu.per_job(conn, jobs)
            attempts = conn.execute("SELECT max(attempt) FROM job_runs").fetchone()
            assert attempts is not None and attempts[0] == 1, "a run was executed twice"
    finally:
        runner.terminate()
        assert runner.wait(60) == 0, "the runner did not drain and exit 0"
    return jobs / seconds


# -- pgqueuer ---------------------------------------------------------------------------------


async def _pgqueuer_once(dsn: str, jobs: int, batch_size: int) -> float:
    import asyncpg
    from pgqueuer import AsyncpgPoolDriver, Queries, QueueManager
    from pgqueuer.types import QueueExecutionMode

    pool = await asyncpg.create_pool(dsn, min_size=2, max_size=4)
    try:
        driver = AsyncpgPoolDriver(pool)
        queries = Queries(driver)
        for start in range(0, jobs, 5000):
            n = min(5000, jobs - start)
            await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
        manager = QueueManager(queries)
        done = 0

        @manager.entrypoint("noop")
        async def noop(job: Any) -> None:
            nonlocal done
            done += 1

        with psycopg.connect(dsn, autocommit=True) as meter_conn:
            cpu = CpuMeter(meter_conn, None)
            started = time.perf_counter()
            await manager.run(
                batch_size=batch_size,
                mode=QueueExecutionMode.drain,
                dequeue_timeout=timedelta(seconds=0.1),
            )
            seconds = time.perf_counter() - started
            CPU_MICROSECONDS_PER_JOB[f"pgqueuer batch_size={batch_size}"] = cpu.per_job(
                meter_conn, jobs
            )
        assert done == jobs, f"pgqueuer ran {done} of {jobs}"
        return jobs / seconds
    finally:
        await pool.close()


PGQUEUER_DEFAULT_BATCH_SIZE = 10  # QueueManager.run's default
PGQUEUER_AT_DEFAULT: list[float] = []


def pgqueuer_leg(admin_dsn: str, jobs: int) -> tuple[float, str] | str:
    try:
        import asyncpg  # noqa: F401
        import pgqueuer  # noqa: F401
    except ImportError as error:
        return f"skipped: {error.name} is not installed (pip install pgqueuer asyncpg)"
    best: tuple[float, str] | None = None
    for batch_size in (10, 100, 500):
        dsn = create_database(admin_dsn, "bench_pgqueuer")
        asyncio.run(_pgqueuer_install(dsn))
        rate = asyncio.run(_pgqueuer_once(dsn, jobs, batch_size))
        print(f"  pgqueuer batch_size={batch_size}: {rate:,.0f} jobs/s", flush=True)
        if batch_size == PGQUEUER_DEFAULT_BATCH_SIZE:
            PGQUEUER_AT_DEFAULT.append(rate)
        if best is None or rate > best[0]:
            best = (rate, f"batch_size={batch_size}")
    assert best is not None
    return best


async def _pgqueuer_install(dsn: str) -> None:
    import asyncpg
    from pgqueuer import AsyncpgDriver, Queries

    conn = await asyncpg.connect(dsn)
    try:
        await Queries(AsyncpgDriver(conn)).install()
    finally:
        await conn.close()


# -- procrastinate ----------------------------------------------------------------------------


async def _procrastinate_once(dsn: str, jobs: int, concurrency: int) -> float:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))
    done = 0

    @app.task(name="noop")
    async def noop() -> None:
        nonlocal done
        done += 1

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        for start in range(0, jobs, 5000):
            n = min(5000, jobs - start)
            await noop.batch_defer_async(*({} for _ in range(n)))
        started = time.perf_counter()
        await app.run_worker_async(
            concurrency=concurrency,
            wait=False,
            install_signal_handlers=False,
            fetch_job_polling_interval=0.1,
        )
        seconds = time.perf_counter() - started
    assert done == jobs, f"procrastinate ran {done} of {jobs}"
    return jobs / seconds


def procrastinate_leg(admin_dsn: str, jobs: int) -> tuple[float, str] | str:
    try:
        import procrastinate  # noqa: F401
    except ImportError:
        return "skipped: procrastinate is not installed (pip install procrastinate)"
    best: tuple[float, str] | None = None
    for concurrency in (10, 50):
        dsn = create_database(admin_dsn, "bench_procrastinate")
        rate = asyncio.run(_procrastinate_once(dsn, jobs, concurrency))
        print(f"  procrastinate concurrency={concurrency}: {rate:,.0f} jobs/s", flush=True)
        if best is None or rate > best[0]:
            best = (rate, f"concurrency={concurrency}")
    assert best is not None
    return best


# -- raw ceiling ------------------------------------------------------------------------------


def raw_leg(admin_dsn: str, jobs: int, batch: int, *, array_claim: bool = False) -> float:
    dsn = create_database(admin_dsn, "bench_raw")
    job = store_throughput.prepare(dsn)
    store_throughput.fill(dsn, job, jobs)
    measured = asyncio.run(store_throughput.raw_loop(dsn, batch, array_claim=array_claim))
    assert measured.done == jobs
    if measured.cpu_seconds is not None:
        name = "raw (array claim)" if array_claim else "raw"
        # raw_loop measures client + backend together.
        CPU_MICROSECONDS_PER_JOB[name] = (float("nan"), measured.cpu_seconds / jobs * 1e6)
    return measured.jobs_per_second


# -- main -------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=1000, help="sundial async slots")
    parser.add_argument("--raw-batch", type=int, default=500)
    parser.add_argument("--dsn", help="a superuser URL (default: a throwaway server)")
    parser.add_argument(
        "--handler",
        default="bench.noop",
        choices=["bench.noop", "bench.noop_dependency"],
        help="sundial's no-op handler; bench.noop_dependency declares a dependency, so every "
        "job also passes its circuit breaker",
    )
    parser.add_argument(
        "--login",
        default="owner",
        choices=["owner", "runner", "kept"],
        help="the runner's database login: the owner's, one with the runner's grants, or one"
        " kept to the jobs' namespace (row-level security)",
    )
    parser.add_argument(
        "--sundial-only", action="store_true", help="run the sundial leg alone (no peers)"
    )
    options = parser.parse_args()

    def run(admin_dsn: str) -> dict[str, Any]:
        results: dict[str, Any] = {}
        results["sundial"] = sundial_leg(
            admin_dsn, options.jobs, options.concurrency, options.handler, options.login
        )
        print(f"  sundial ({options.login} login): {results['sundial']:,.0f} jobs/s", flush=True)
        print(
            "  sundial CPU per job: runner {:.0f} us, PostgreSQL {:.0f} us".format(
                *CPU_MICROSECONDS_PER_JOB["sundial"]
            ),
            flush=True,
        )
        if options.sundial_only:
            return results
        results["pgqueuer"] = pgqueuer_leg(admin_dsn, options.jobs)
        results["procrastinate"] = procrastinate_leg(admin_dsn, options.jobs)
        results["raw"] = raw_leg(admin_dsn, options.jobs, options.raw_batch)
        print(f"  raw (seed claim): {results['raw']:,.0f} jobs/s", flush=True)
        results["raw_array_claim"] = raw_leg(
            admin_dsn, options.jobs, options.raw_batch, array_claim=True
        )
        print(f"  raw (array claim): {results['raw_array_claim']:,.0f} jobs/s", flush=True)
        return results

    load_before = os.getloadavg()
    if options.dsn:
        results = run(options.dsn)
    else:
        with postgres.throwaway_postgres() as server:
            results = run(server.dsn)

    sundial_rate = results["sundial"]
    if options.sundial_only:
        return 0
    print(f"\njobs={options.jobs}, one worker process each, same PostgreSQL, no-op async jobs")
    print(
        f"sundial runner (claim+lease+heartbeat+fenced finish): {sundial_rate:10,.0f} jobs/s"
        f"  (--concurrency async={options.concurrency})"
    )
    for peer in ("pgqueuer", "procrastinate"):
        value = results[peer]
        if isinstance(value, str):
            print(f"{peer:<53}: {value}")
        else:
            print(f"{peer:<53}: {value[0]:10,.0f} jobs/s  (best of {value[1]})")
    print(
        f"{'raw claim + batched fenced finish SQL (ceiling)':<53}: {results['raw']:10,.0f} jobs/s"
    )
    print(
        f"{'raw, claim probing ids as an array (no hash join)':<53}: "
        f"{results['raw_array_claim']:10,.0f} jobs/s"
    )
    if not isinstance(results["pgqueuer"], str):
        if PGQUEUER_AT_DEFAULT:
            default_ratio = sundial_rate / PGQUEUER_AT_DEFAULT[0]
            print(
                f"ratio sundial / pgqueuer at its default batch_size="
                f"{PGQUEUER_DEFAULT_BATCH_SIZE}: {default_ratio:.2f}x  (target >= 4x)"
            )
        ratio = sundial_rate / results["pgqueuer"][0]
        print(f"ratio sundial / pgqueuer (its best batch_size): {ratio:.2f}x")
    if not isinstance(results["procrastinate"], str):
        print(f"ratio sundial / procrastinate: {sundial_rate / results['procrastinate'][0]:.1f}x")
    print(f"ratio sundial / raw ceiling: {sundial_rate / results['raw']:.0%}")
    print(
        f"ratio sundial / raw with the array claim: {sundial_rate / results['raw_array_claim']:.0%}"
    )
    if CPU_MICROSECONDS_PER_JOB:
        print("CPU per job (worker process + its PostgreSQL backends), microseconds:")
        for name, (worker_us, database_us) in CPU_MICROSECONDS_PER_JOB.items():
            if worker_us != worker_us:  # NaN: measured together
                print(f"  {name:<28} total {database_us:6.1f}  (client + backend together)")
            else:
                total = worker_us + database_us
                print(
                    f"  {name:<28} total {total:6.1f}  worker {worker_us:6.1f}"
                    f"  postgres {database_us:6.1f}  ({1e6 / total:,.0f} jobs per CPU-second)"
                )
    load_after = os.getloadavg()
    print(
        "load average (1, 5, 15 min) before: "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after: "
        + ", ".join(f"{x:.2f}" for x in load_after)
        + f"; {os.cpu_count()} CPUs (other work on the machine shares them)"
    )
    print(json.dumps({k: (v if not isinstance(v, tuple) else v[0]) for k, v in results.items()}))
    print(
        f"reproduce: .venv/bin/pip install pgqueuer procrastinate asyncpg && "
        f".venv/bin/python bench/runner_throughput.py --jobs {options.jobs} "
        f"--concurrency {options.concurrency} --raw-batch {options.raw_batch} "
        f"--handler {options.handler}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
