"""Overload for the peers: bench/overload.py's steps, with pgqueuer or procrastinate draining.

Not a test: it prints figures, to set beside bench/overload.py's in one sitting on one machine.
The same shape: one throwaway PostgreSQL (or ``--dsn``), a 1 ms async job, a producer that
submits at a fixed rate in batches of 128 with the queue's own batch call (pgqueuer's list
``enqueue``, procrastinate's ``batch_defer_async``), ``--workers`` worker processes with
``--slots`` concurrent jobs each, a warm-up at the first rate, then one step per rate:

* submitted/s (what the producer managed), and completed/s over the step: the backlog at its
  start plus what the producer submitted, less the backlog at its end (the queues keep no
  start time, so no start lag here);
* the backlog (jobs not yet done) at its end;
* cores of the workers and of PostgreSQL, and CPU per completed job.

Then the drain. The peers are not Sundial's dependencies: run it with an environment that has
them, e.g. ``python3 -m venv /tmp/peers && /tmp/peers/bin/pip install -e . pgqueuer
procrastinate asyncpg``, then

    /tmp/peers/bin/python bench/overload_peers.py --queue pgqueuer [--rates 2000,4000,8000]
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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
from overload import Cores

from sundial.localdev import postgres

QUEUES = ("pgqueuer", "procrastinate")
BATCH = 128


# -- the peers' own calls -------------------------------------------------------------------


async def _pgqueuer_install(dsn: str) -> None:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    connection = await asyncpg.connect(dsn)
    try:
        await Queries(AsyncpgDriver(connection)).install()
    finally:
        await connection.close()


async def _pgqueuer_producer(dsn: str) -> tuple[Callable[[], Awaitable[None]], Any]:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    connection = await asyncpg.connect(dsn)
    queries = Queries(AsyncpgDriver(connection))

    async def submit() -> None:
        await queries.enqueue(["sleep"] * BATCH, [None] * BATCH, [0] * BATCH)

    return submit, connection.close


async def _pgqueuer_worker(dsn: str, slots: int, batch: int) -> None:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    connection = await asyncpg.connect(dsn)
    manager = QueueManager(Queries(AsyncpgDriver(connection)))

    @manager.entrypoint("sleep")
    async def sleep(job: Any) -> None:
        await asyncio.sleep(0.001)

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, manager.shutdown.set)
    await manager.run(batch_size=batch, max_concurrent_tasks=max(slots, 2 * batch))


def _procrastinate_app(dsn: str) -> Any:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))

    @app.task(name="sleep")
    async def sleep() -> None:
        await asyncio.sleep(0.001)

    return app


async def _procrastinate_install(dsn: str) -> None:
    app = _procrastinate_app(dsn)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


async def _procrastinate_producer(dsn: str) -> tuple[Callable[[], Awaitable[None]], Any]:
    app = _procrastinate_app(dsn)
    await app.open_async()
    task = app.tasks["sleep"]

    async def submit() -> None:
        await task.batch_defer_async(*([{}] * BATCH))

    return submit, app.close_async


async def _procrastinate_worker(dsn: str, slots: int, batch: int) -> None:
    app = _procrastinate_app(dsn)
    async with app.open_async():
        await app.run_worker_async(concurrency=slots, install_signal_handlers=True)


INSTALL = {"pgqueuer": _pgqueuer_install, "procrastinate": _procrastinate_install}
PRODUCER = {"pgqueuer": _pgqueuer_producer, "procrastinate": _procrastinate_producer}
WORKER = {"pgqueuer": _pgqueuer_worker, "procrastinate": _procrastinate_worker}
#: Jobs submitted and not yet done.
BACKLOG = {
    "pgqueuer": "SELECT count(*) FROM pgqueuer",
    "procrastinate": "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')",
}


# -- the harness ------------------------------------------------------------------------------


async def _produce(submit: Callable[[], Awaitable[None]], rate: list[float], made: list[int],
                   stop: asyncio.Event) -> None:  # fmt: skip
    """Submit ``rate[0]`` jobs/s in batches (read every batch) until stop; count in made[0]."""
    owed = 0.0
    last = time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        owed = min(owed + rate[0] * (now - last), rate[0])  # at most a second behind
        last = now
        while owed >= BATCH:
            await submit()
            made[0] += BATCH
            owed -= BATCH
        await asyncio.sleep(0.005)


async def _measure(dsn: str, options: argparse.Namespace, pids: list[int],
                   postmaster: int | None) -> dict[str, Any]:  # fmt: skip
    rates = [float(rate) for rate in options.rates.split(",")]
    submit, close = await PRODUCER[options.queue](dsn)
    stop = asyncio.Event()
    rate, made = [rates[0]], [0]
    steps: list[dict[str, Any]] = []
    try:
        await asyncio.sleep(3)  # the workers' imports
        producer = asyncio.create_task(_produce(submit, rate, made, stop))
        with psycopg.connect(dsn, autocommit=True) as conn:

            def backlog() -> int:
                return int(conn.execute(BACKLOG[options.queue]).fetchone()[0])

            cores = Cores(pids, postmaster, conn)
            await asyncio.sleep(options.warmup)
            for offered in rates:
                rate[0] = offered
                cores.sample()
                before, submitted, since = backlog(), made[0], time.monotonic()
                await asyncio.sleep(options.step_seconds)
                after, seconds = backlog(), time.monotonic() - since
                worker_cpu, server_cpu = cores.sample()
                completed = before + (made[0] - submitted) - after
                steps.append(
                    {
                        "offered": offered,
                        "submitted_per_second": round((made[0] - submitted) / seconds),
                        "completed_per_second": round(completed / seconds),
                        "backlog": after,
                        "worker_cores": round(worker_cpu / seconds, 2),
                        "postgres_cores": round(server_cpu / seconds, 2),
                        "cpu_us_per_job": round(
                            (worker_cpu + server_cpu) / max(1, completed) * 1e6
                        ),
                    }
                )
                print(_line(steps[-1]), flush=True)
            stop.set()
            await producer
            left = pending = backlog()
            started = time.monotonic()
            while pending and time.monotonic() - started < options.drain_seconds:
                await asyncio.sleep(1)
                pending = backlog()
            took = time.monotonic() - started
            drain = {
                "backlog": left,
                "seconds": round(took, 1),
                "left": pending,
                "per_second": round((left - pending) / took) if took else None,
            }
            print(
                f"drain: {left:,} pending when the producer stopped; {left - pending:,} done "
                f"in {took:.0f} s ({drain['per_second']:,}/s), {pending:,} left",
                flush=True,
            )
    finally:
        stop.set()
        await close()
    return {"steps": steps, "drain": drain}


def _line(step: dict[str, Any]) -> str:
    return (
        f"offered {step['offered']:>6,.0f}/s  submitted {step['submitted_per_second']:>6,}/s  "
        f"completed {step['completed_per_second']:>6,}/s  "
        f"backlog {step['backlog']:>8,}  cores workers {step['worker_cores']} "
        f"postgres {step['postgres_cores']}  {step['cpu_us_per_job']} us/job"
    )


def run(dsn: str, options: argparse.Namespace, postmaster: int | None) -> dict[str, Any]:
    asyncio.run(INSTALL[options.queue](dsn))
    command = [
        sys.executable, __file__, "--worker", "--queue", options.queue, "--dsn", dsn,
        "--slots", str(options.slots), "--batch", str(options.batch),
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent))
    workers = [
        subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        for _ in range(options.workers)
    ]
    try:
        return asyncio.run(_measure(dsn, options, [w.pid for w in workers], postmaster))
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", choices=QUEUES, required=True)
    parser.add_argument("--rates", default="2000,4000,8000", help="offered jobs/s, per step")
    parser.add_argument("--step-seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds at the first rate")
    parser.add_argument("--slots", type=int, default=256, help="concurrent jobs per worker")
    parser.add_argument("--batch", type=int, default=100, help="pgqueuer's dequeue batch")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--drain-seconds", type=float, default=300.0)
    parser.add_argument("--dsn", help="a superuser URL of an empty database (default: throwaway)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        asyncio.run(WORKER[options.queue](options.dsn, options.slots, options.batch))
        return
    print(
        f"{options.queue}: {options.workers} worker(s) x {options.slots} slots, 1 ms jobs, "
        f"batches of {BATCH}; warm-up {options.warmup:.0f} s, steps of "
        f"{options.step_seconds:.0f} s",
        flush=True,
    )
    if options.dsn:
        result = run(options.dsn, options, None)
    else:
        with postgres.throwaway_postgres() as server:
            postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
            result = run(server.dsn, options, postmaster)
    peak = max(step["completed_per_second"] for step in result["steps"])
    past = [s["completed_per_second"] / peak for s in result["steps"] if s["offered"] >= peak]
    if past and peak:
        print(f"past the peak ({peak:,}/s), the worst step completed {min(past):.0%} of it")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
