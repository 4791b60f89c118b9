"""Submissions/s from one client and from four, one at a time and in batches, beside peers.

Not a test: it prints one table. One throwaway PostgreSQL, a database per leg. A client is a
separate process (so four clients are four Python interpreters, as four services would be),
submitting for ``--seconds`` and counting what committed:

* sundial ``runs.submit``: one run per call and round trip, each with an idempotency key;
* sundial ``runs.submit_many``: ``--batch`` runs per call, each with an idempotency key;
* pgqueuer ``Queries.enqueue`` (asyncpg): one job per call, and ``--batch`` per call;
* procrastinate ``defer_async`` / ``batch_defer_async`` (psycopg): one, and ``--batch``.

pgqueuer and procrastinate get no idempotency key (pgqueuer has dedupe keys, procrastinate
queueing locks; neither is the same contract), so their rows are the cheaper baseline.
Peers not installed are skipped (``.venv/bin/pip install pgqueuer procrastinate asyncpg``).

    .venv/bin/python bench/submission.py [--seconds 10] [--batch 500] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import multiprocessing
import sys
import time
import uuid
from typing import Any

import stack

from sundial.store import pool as store_pool
from sundial.store import runs


async def _sundial(dsn: str, job: str, client: int, seconds: float, batch: int) -> int:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=1)
    done = 0
    try:
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            if batch == 1:
                await runs.submit(pool, uuid.UUID(job), idempotency_key=f"c{client}-{done}")
                done += 1
            else:
                items = [
                    runs.BatchItem(idempotency_key=f"c{client}-{done + i}") for i in range(batch)
                ]
                await runs.submit_many(pool, uuid.UUID(job), items)
                done += batch
    finally:
        await pool.close()
    return done


async def _pgqueuer(dsn: str, client: int, seconds: float, batch: int) -> int:
    import asyncpg
    from pgqueuer import AsyncpgDriver, Queries

    conn = await asyncpg.connect(dsn)
    done = 0
    try:
        queries = Queries(AsyncpgDriver(conn))
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            if batch == 1:
                await queries.enqueue("noop", None)
            else:
                await queries.enqueue(["noop"] * batch, [None] * batch, [0] * batch)
            done += batch
    finally:
        await conn.close()
    return done


async def _procrastinate(dsn: str, client: int, seconds: float, batch: int) -> int:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))

    @app.task(name="noop")
    async def noop() -> None:
        return None

    done = 0
    async with app.open_async():
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            if batch == 1:
                await noop.defer_async()
            else:
                await noop.batch_defer_async(*({} for _ in range(batch)))
            done += batch
    return done


def client(system: str, dsn: str, job: str, index: int, seconds: float, batch: int) -> int:
    if system == "sundial":
        return asyncio.run(_sundial(dsn, job, index, seconds, batch))
    if system == "pgqueuer":
        return asyncio.run(_pgqueuer(dsn, index, seconds, batch))
    return asyncio.run(_procrastinate(dsn, index, seconds, batch))


def prepare(server: Any, system: str, leg: str) -> tuple[str, str]:
    name = f"submit_{system}_{leg}"
    if system == "sundial":
        dsn = stack.create_database(server, name)
        return dsn, str(stack.create_job(dsn, "submit", "bench.noop"))
    import psycopg
    from psycopg import sql

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = server.dsn_for(name)
    if system == "pgqueuer":
        import asyncpg
        from pgqueuer import AsyncpgDriver, Queries

        async def install() -> None:
            conn = await asyncpg.connect(dsn)
            try:
                await Queries(AsyncpgDriver(conn)).install()
            finally:
                await conn.close()

        asyncio.run(install())
    else:
        import procrastinate

        async def install() -> None:
            app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))
            async with app.open_async():
                await app.schema_manager.apply_schema_async()

        asyncio.run(install())
    return dsn, ""


def installed(system: str) -> bool:
    try:
        if system == "pgqueuer":
            import asyncpg  # noqa: F401
            import pgqueuer  # noqa: F401
        elif system == "procrastinate":
            import procrastinate  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="3 s per leg")
    options = parser.parse_args()
    if options.quick:
        options.seconds = 3.0
    rows = []
    context = multiprocessing.get_context("spawn")
    with stack.throwaway() as server:
        for system in ("sundial", "pgqueuer", "procrastinate"):
            if not installed(system):
                rows.append([system, "-", "-", "-", "not installed", ""])
                continue
            for batch in (1, options.batch):
                for clients in (1, 4):
                    dsn, job = prepare(server, system, f"{batch}_{clients}")
                    load = stack.load_average()
                    with concurrent.futures.ProcessPoolExecutor(
                        clients, mp_context=context
                    ) as pool:
                        futures = [
                            pool.submit(client, system, dsn, job, i, options.seconds, batch)
                            for i in range(clients)
                        ]
                        done = sum(f.result() for f in futures)
                    rate = done / options.seconds
                    rows.append(
                        [system, "one at a time" if batch == 1 else f"batch {batch}", clients,
                         f"{rate:,.0f}", "keys" if system == "sundial" else "no keys", load]
                    )  # fmt: skip
                    print(f"  {system} batch={batch} clients={clients}: {rate:,.0f}/s", flush=True)
    print()
    print(stack.table(["system", "how", "clients", "runs/s", "idempotency", "load before"], rows))
    print(
        f"reproduce: .venv/bin/python bench/submission.py --seconds {options.seconds:g} "
        f"--batch {options.batch}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
