"""The fire budget between namespaces: a quiet namespace's fires beside one flooding the hour.

Not a test: it prints figures. One throwaway PostgreSQL (or --dsn). team-a has ``--quiet``
schedules at ``0 * * * *`` spread over ``--quiet-spread`` seconds; team-b has ``--flood``
schedules on the same hour with no spread. The real trigger loop (``TriggerLoop.tick``, in
batches of ``--batch-size``) fires them on a manual clock set to the hour, three times on a
fresh schedule set:

* alone: team-a only;
* flooded, global budget: both namespaces, ``--fires-per-second`` only;
* flooded, namespace budget: both, and ``--namespace-fires-per-second``.

For each it prints how far the budget moved team-a's runs past their spread ``run_at`` (p50,
p95, max: the delay a runner cannot make up, whatever the claim does), the last second of
team-b's runs, the most runs any second holds, and the tick's wall time. The claim's share
between namespaces is measured by ``bench/fair_share.py``.

    .venv/bin/python bench/fire_share.py [--flood 20000] [--namespace-fires-per-second 500]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import io
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import psycopg

from sundial.localdev import postgres
from sundial.scheduler import trigger
from sundial.scheduling import clock, cron, spread
from sundial.store import migrate
from sundial.store import pool as store_pool

SCHEDULE = "0 * * * *"


def create_schedules(
    dsn: str, namespace: str, count: int, spread_seconds: int, first_fire: datetime
) -> dict[uuid.UUID, datetime]:
    """COPY ``count`` jobs and schedules; return each schedule's spread run_at."""
    jobs, rows, due = io.StringIO(), io.StringIO(), {}
    for index in range(count):
        uid = uuid.uuid5(uuid.NAMESPACE_URL, f"bench/fire-share/{namespace}/{index}")
        offset = spread.offset_for(uid, spread_seconds)
        due[uid] = first_fire + offset
        jobs.write(f"{uid}\t{namespace}\tjob-{index}\thandlers.noop\n")
        rows.write(
            f"{uid}\t{uid}\t{SCHEDULE}\tUTC\t{first_fire.isoformat()}\t{spread_seconds}\t"
            f"{offset // timedelta(milliseconds=1)}\n"
        )
    with psycopg.connect(dsn) as conn, conn.cursor() as cursor:
        with cursor.copy("COPY job_definitions (id, namespace, name, handler) FROM STDIN") as copy:
            copy.write(jobs.getvalue())
        with cursor.copy(
            "COPY schedules (id, job_id, cron, timezone, next_fire_time, spread_seconds, "
            "spread_offset_ms) FROM STDIN"
        ) as copy:
            copy.write(rows.getvalue())
        cursor.execute("ANALYZE")
    return due


async def fire(dsn: str, settings: trigger.TriggerSettings, at: datetime) -> float:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=2)
    try:
        loop = trigger.TriggerLoop(pool, clock=clock.ManualClock(at), settings=settings)
        started = time.perf_counter()
        await loop.tick()
        return time.perf_counter() - started
    finally:
        await pool.close()


def phase(
    dsn: str, args: argparse.Namespace, name: str, flood: int, per_namespace: float | None
) -> None:
    hour = cron.parse_schedule(SCHEDULE).next_fire_after(datetime.now(UTC))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE job_runs, schedule_fires, schedules, job_definitions CASCADE")
    quiet_due = create_schedules(dsn, "team-a", args.quiet, args.quiet_spread, hour)
    create_schedules(dsn, "team-b", flood, 0, hour)
    settings = trigger.TriggerSettings(
        batch_size=args.batch_size,
        fires_per_second=args.fires_per_second,
        namespace_fires_per_second=per_namespace,
    )
    tick = asyncio.run(fire(dsn, settings, hour))
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT r.schedule_id, j.namespace, r.run_at FROM job_runs r"
            " JOIN job_definitions j ON j.id = r.job_id"
        ).fetchall()
    delays = sorted(
        (run_at - quiet_due[sid]).total_seconds() for sid, ns, run_at in rows if ns == "team-a"
    )
    flood_end = max(
        ((run_at - hour).total_seconds() for _, ns, run_at in rows if ns == "team-b"), default=0.0
    )
    per_second = collections.Counter(int((run_at - hour).total_seconds()) for _, _, run_at in rows)
    p95 = delays[max(0, int(len(delays) * 0.95) - 1)]
    print(
        f"{name:<28} team-a moved p50 {statistics.median(delays):6.2f} s  p95 {p95:6.2f} s  "
        f"max {delays[-1]:6.2f} s | team-b last run_at +{flood_end:5.1f} s | busiest second "
        f"{max(per_second.values()):5d} runs | tick {tick:5.2f} s ({len(rows):,} runs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=20_000, help="team-b's schedules")
    parser.add_argument("--quiet", type=int, default=200, help="team-a's schedules")
    parser.add_argument("--quiet-spread", type=int, default=60)
    parser.add_argument("--fires-per-second", type=float, default=1000.0)
    parser.add_argument("--namespace-fires-per-second", type=float, default=500.0)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--dsn", default=None, help="an empty, migrated or migratable database")
    args = parser.parse_args()

    def run(dsn: str) -> None:
        migrate.migrate(dsn)
        print(
            f"team-a {args.quiet} schedules spread over {args.quiet_spread} s; team-b "
            f"{args.flood} on the hour; budget {args.fires_per_second:g}/s, per namespace "
            f"{args.namespace_fires_per_second:g}/s in the last phase"
        )
        phase(dsn, args, "alone", 0, None)
        phase(dsn, args, "flooded, global budget", args.flood, None)
        phase(dsn, args, "flooded, namespace budget", args.flood, args.namespace_fires_per_second)

    if args.dsn:
        run(args.dsn)
    else:
        with postgres.throwaway_postgres() as server:
            run(server.dsn)
    print("command: .venv/bin/python " + " ".join(["bench/fire_share.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
