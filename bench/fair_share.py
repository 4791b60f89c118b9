"""Fair share between namespaces: a quiet namespace's lag, alone and beside a flood.

Not a test: it prints figures. One throwaway PostgreSQL, one `sundial runner` serving every
namespace with a fixed number of async slots, jobs that sleep ``--job-seconds`` (varied by
``--job-jitter``, a fraction either side: jobs of one length end together, so slots free in
bursts and a quiet run waits for the next burst):

* alone: team-a submits ``--quiet-rate`` runs/s at priority 1 for ``--seconds``;
* flooded: the same, while team-b submits ``--flood-rate`` runs/s at priority 9 in batches of
  128 (``runs.submit_many``), more than the runner can finish, so team-b's backlog grows all
  along. Without fair share every team-a run waits behind that whole backlog.

It prints team-a's start lag (``started_at - created_at``, both stamped by the database) at
p50, p95 and max for each phase, the team-a runs that had not started by the end, team-b's
completed/s and backlog, and the ratio of team-a's p95 flooded to alone.

    .venv/bin/python bench/fair_share.py [--seconds 30] [--flood-rate 1500] [--slots 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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


def _job(dsn: str, namespace: str) -> uuid.UUID:
    job = uuid.uuid4()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO job_definitions (id, namespace, name, handler) "
            "VALUES (%s, %s, 'work', 'bench.sleep')",
            (job, namespace),
        )
    return job


async def _submit_at(
    pool: store_pool.Pool,
    job: uuid.UUID,
    rate: float,
    seconds: float,
    priority: int,
    job_seconds: float,
    batch: int,
    jitter: float = 0.0,
) -> int:
    """Submit ``rate`` runs/s for ``seconds`` in batches of at most ``batch``."""
    made = 0
    start = time.monotonic()
    item = runs.BatchItem(args={"seconds": job_seconds, "jitter": jitter}, priority=priority)
    while (elapsed := time.monotonic() - start) < seconds:
        due = int(rate * elapsed) + 1 - made
        if due > 0:
            count = min(due, batch)
            await runs.submit_many(pool, job, [item] * count)
            made += count
        await asyncio.sleep(min(0.02, 1 / rate))
    return made


def _lags(dsn: str, namespace: str, since: float) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            """
            SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lag),
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY lag),
                   max(lag), count(lag), count(*) - count(lag), count(*) FILTER (WHERE lag > 1),
                   array_agg(round(since::numeric, 1) ORDER BY lag DESC NULLS LAST)
            FROM (SELECT extract(epoch FROM started_at - created_at) AS lag,
                         extract(epoch FROM created_at) - %s AS since
                  FROM job_runs
                  WHERE namespace = %s AND created_at >= to_timestamp(%s)) t
            """,
            (since, namespace, since),
        ).fetchone()
    assert row is not None
    p50, p95, worst, started, waiting, over_a_second, worst_at = row
    return {
        "p50": None if p50 is None else round(float(p50), 3),
        "p95": None if p95 is None else round(float(p95), 3),
        "max": None if worst is None else round(float(worst), 3),
        "started": int(started),
        "not_started": int(waiting),
        "over_1s": int(over_a_second),
        # When the three slowest were submitted, seconds into the phase.
        "slowest_at": [float(at) for at in (worst_at or [])[:3]],
    }


def _flood_figures(dsn: str, since: float, seconds: float) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE finished_at IS NOT NULL),"
            " count(*) FILTER (WHERE state = 'pending')"
            " FROM job_runs WHERE namespace = 'team-b' AND created_at >= to_timestamp(%s)",
            (since,),
        ).fetchone()
    assert row is not None
    return {"completed_per_second": round(row[0] / seconds), "backlog": int(row[1])}


async def _phase(
    dsn: str, jobs: dict[str, uuid.UUID], options: argparse.Namespace, flooded: bool
) -> dict[str, Any]:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=4, name="fair-share-bench")
    try:
        since = time.time()
        quiet = _submit_at(
            pool,
            jobs["team-a"],
            options.quiet_rate,
            options.seconds,
            1,
            options.job_seconds,
            128,
            options.job_jitter,
        )
        tasks = [quiet]
        if flooded:
            tasks.append(
                _submit_at(
                    pool,
                    jobs["team-b"],
                    options.flood_rate,
                    options.seconds,
                    9,
                    options.job_seconds,
                    128,
                    options.job_jitter,
                )
            )
        await asyncio.gather(*tasks)
        await asyncio.sleep(2 * options.job_seconds + 1)  # the last quiet runs may start
    finally:
        await pool.close()
    result: dict[str, Any] = {"team-a": _lags(dsn, "team-a", since)}
    if flooded:
        result["team-b"] = _flood_figures(dsn, since, options.seconds)
    return result


def run(admin_dsn: str, options: argparse.Namespace) -> dict[str, Any]:
    migrate.migrate(admin_dsn)
    jobs = {namespace: _job(admin_dsn, namespace) for namespace in ("team-a", "team-b")}
    env = dict(os.environ, PYTHONPATH=str(BENCH_DIR))
    command = [
        sys.executable, "-m", "sundial", "runner",
        "--dsn", admin_dsn, "--handlers", "bench_handlers",
        "--concurrency", f"async={options.slots}",
        "--reserved-slots", str(options.reserved_slots),
        "--metrics-port", "-1", "--log-level", "WARNING",
    ]  # fmt: skip
    runner = subprocess.Popen(command, env=env)
    try:
        time.sleep(3)  # imports and the first claim
        alone = asyncio.run(_phase(admin_dsn, jobs, options, flooded=False))
        flooded = asyncio.run(_phase(admin_dsn, jobs, options, flooded=True))
    finally:
        runner.terminate()
        runner.wait(60)
    return {"alone": alone, "flooded": flooded}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    parser.add_argument("--quiet-rate", type=float, default=5.0, help="team-a runs/s")
    parser.add_argument("--flood-rate", type=float, default=1500.0, help="team-b runs/s")
    parser.add_argument("--job-seconds", type=float, default=0.05, help="each job's sleep")
    parser.add_argument(
        "--job-jitter", type=float, default=0.0, help="each job's sleep varies by this fraction"
    )
    parser.add_argument("--slots", type=int, default=64, help="the runner's async slots")
    parser.add_argument(
        "--reserved-slots", type=int, default=1, help="the runner's --reserved-slots (0: none)"
    )
    parser.add_argument("--dsn", help="a superuser URL of an empty database (default: throwaway)")
    options = parser.parse_args()
    capacity = options.slots / options.job_seconds
    print(
        f"one runner, {options.slots} slots of {options.job_seconds}s jobs "
        f"(±{options.job_jitter:.0%}; at most "
        f"{capacity:,.0f}/s; {options.reserved_slots} reserved); "
        f"team-a {options.quiet_rate}/s at priority 1; team-b "
        f"{options.flood_rate:,.0f}/s at priority 9 in the flooded phase; {options.seconds}s each"
    )
    if options.dsn:
        result = run(options.dsn, options)
    else:
        with postgres.throwaway_postgres() as server:
            result = run(server.dsn, options)
    for phase in ("alone", "flooded"):
        lag = result[phase]["team-a"]
        print(
            f"team-a {phase:8}: start lag p50 {lag['p50']}s  p95 {lag['p95']}s  max "
            f"{lag['max']}s  ({lag['started']} started, {lag['not_started']} not started, "
            f"{lag['over_1s']} over 1 s; the slowest submitted at {lag['slowest_at']} s)"
        )
    flood = result["flooded"]["team-b"]
    print(
        f"team-b flooded : {flood['completed_per_second']:,}/s completed, "
        f"backlog {flood['backlog']:,} at the end"
    )
    alone_p95 = result["alone"]["team-a"]["p95"]
    flooded = result["flooded"]["team-a"]
    if flooded["not_started"]:
        print(f"team-a starved: {flooded['not_started']} runs had not started by the end")
    elif alone_p95 and flooded["p95"] is not None:
        print(f"team-a p95 flooded / alone: {flooded['p95'] / alone_p95:.1f}x")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
