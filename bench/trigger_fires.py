"""How fast the trigger turns 10,000 schedules due on the same minute into runs.

Not a test: prints figures. Starts a throwaway PostgreSQL (or uses --dsn), creates N jobs at
``0 * * * *`` and runs the trigger's transactions (``store.fires.fire_due``, batch by batch,
exactly as ``TriggerLoop.tick`` does) as if the clock had just struck the hour.

Figures:
- the time to insert all fires (first transaction start to last commit);
- creation lag per run: its batch's commit time after the tick started, i.e. how long after
  its fire time the run existed, had the tick started on the hour (p50/p99);
- schedule lag against run_at: max(0, created - run_at), the part of the creation lag that
  delays a run past its (spread) run_at (p50/p99), and how many runs existed before run_at.

    .venv/bin/python bench/trigger_fires.py [--schedules 10000] [--spread 60] [--batch-size 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import psycopg

from sundial.localdev import postgres
from sundial.scheduling import clock, cron, fire_budget, spread
from sundial.store import fires, migrate
from sundial.store import pool as store_pool

SCHEDULE = "0 * * * *"


def create_schedules(dsn: str, count: int, spread_seconds: int, first_fire: datetime) -> None:
    jobs, rows = io.StringIO(), io.StringIO()
    for index in range(count):
        uid = uuid.uuid5(uuid.NAMESPACE_URL, f"bench/trigger/{index}")
        offset = spread.offset_for(uid, spread_seconds) // timedelta(milliseconds=1)
        jobs.write(f"{uid}\tbench\tjob-{index}\thandlers.noop\n")
        rows.write(
            f"{uid}\t{uid}\t{SCHEDULE}\tUTC\t{first_fire.isoformat()}\t{spread_seconds}\t{offset}\n"
        )
    with psycopg.connect(dsn) as conn, conn.cursor() as cursor:
        cursor.execute("TRUNCATE job_runs, schedule_fires, schedules, job_definitions CASCADE")
        with cursor.copy("COPY job_definitions (id, namespace, name, handler) FROM STDIN") as copy:
            copy.write(jobs.getvalue())
        with cursor.copy(
            "COPY schedules (id, job_id, cron, timezone, next_fire_time, spread_seconds, "
            "spread_offset_ms) FROM STDIN"
        ) as copy:
            copy.write(rows.getvalue())
        cursor.execute("ANALYZE")


async def fire(dsn: str, args: argparse.Namespace, top_of_hour: datetime) -> None:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=2)
    calendar = (
        None
        if args.fires_per_second <= 0
        else fire_budget.FireCalendar(args.fires_per_second, clock.ManualClock(top_of_hour))
    )
    pacer = None if calendar is None else calendar.place
    created: list[tuple[float, float]] = []  # (seconds after the tick started, run_at offset)
    started = time.perf_counter()
    try:
        while True:
            batch = await fires.fire_due(
                pool, now=top_of_hour, batch_size=args.batch_size, pace=pacer
            )
            committed = time.perf_counter() - started
            created.extend(
                (committed, (run.run_at - top_of_hour).total_seconds()) for run in batch.runs
            )
            if batch.schedules < args.batch_size:
                break
    finally:
        await pool.close()
    total = time.perf_counter() - started
    assert len(created) == args.schedules, f"created {len(created)} of {args.schedules}"
    creation = [at for at, _ in created]
    behind = [max(0.0, at - run_at) for at, run_at in created]
    early = sum(1 for at, run_at in created if at <= run_at)

    def quantiles(values: list[float]) -> tuple[float, float]:
        cut = statistics.quantiles(values, n=100)
        return cut[49], cut[98]

    c50, c99 = quantiles(creation)
    b50, b99 = quantiles(behind)
    print(
        f"trigger: {args.schedules} fires of '{SCHEDULE}' (spreadSeconds {args.spread}, "
        f"batch {args.batch_size}) inserted in {total:.2f} s "
        f"({args.schedules / total:,.0f} fires/s)"
    )
    print(f"creation lag after the fire time: p50 {c50 * 1000:.0f} ms, p99 {c99 * 1000:.0f} ms")
    print(
        f"schedule lag past run_at at creation: p50 {b50 * 1000:.0f} ms, p99 {b99 * 1000:.0f} ms; "
        f"{early / len(created):.1%} of runs existed before their run_at"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--spread", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=fires.DEFAULT_BATCH_SIZE)
    parser.add_argument("--fires-per-second", type=float, default=1000.0)
    parser.add_argument("--dsn", default=None, help="an empty, migrated or migratable database")
    args = parser.parse_args()
    top_of_hour = cron.parse_schedule(SCHEDULE).next_fire_after(datetime.now(UTC))

    def run(dsn: str) -> None:
        migrate.migrate(dsn)
        create_schedules(dsn, args.schedules, args.spread, top_of_hour)
        asyncio.run(fire(dsn, args, top_of_hour))

    if args.dsn:
        run(args.dsn)
    else:
        with postgres.throwaway_postgres() as server:
            run(server.dsn)
    print("command: .venv/bin/python " + " ".join(["bench/trigger_fires.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
