"""Cancelling a running run, and SIGTERM: finish what fits in the grace period, release the rest."""

from __future__ import annotations

import asyncio

import psycopg

from sundial.store import pool as store_pool
from sundial.store import runs
from support.runner_loop import Runners, create_job, eventually, run_row, submit


async def test_cancelling_a_running_run_stops_the_job(dsn: str, runners: Runners) -> None:
    runner = runners.start(dsn, "--lease-seconds", "3")
    job = create_job(dsn, "loop.sleep")
    (run_id,) = submit(dsn, job, args={"seconds": 60})
    await asyncio.to_thread(
        eventually, lambda: run_row(dsn, run_id)["state"] == "running", what="the run to start"
    )

    pool = await store_pool.open_pool(dsn)
    try:
        assert await runs.cancel(pool, run_id) is runs.CancelResult.REQUESTED
    finally:
        await pool.close()

    await asyncio.to_thread(
        eventually, lambda: run_row(dsn, run_id)["state"] == "cancelled", what="the cancel"
    )
    run = run_row(dsn, run_id)
    assert (run["failure_reason"], run["attempt"]) == ("cancelled", 1)
    assert runner.metric("sundial_runs_total", handler="loop.sleep", outcome="cancelled") == 1


def test_sigterm_lets_a_short_job_finish_and_releases_a_long_one(
    dsn: str, runners: Runners
) -> None:
    runner = runners.start(dsn, "--grace-seconds", "2", "--lease-seconds", "30")
    job = create_job(dsn, "loop.sleep")
    (short_run,) = submit(dsn, job, args={"seconds": 0.5})
    (long_run,) = submit(dsn, job, args={"seconds": 60})
    eventually(
        lambda: all(run_row(dsn, r)["state"] == "running" for r in (short_run, long_run)),
        what="both runs to start",
    )

    assert runner.terminate_and_wait() == 0

    short = run_row(dsn, short_run)
    assert (short["state"], short["attempt"]) == ("completed", 1)
    released = run_row(dsn, long_run)
    assert (released["state"], released["attempt"], released["retries_used"]) == ("pending", 1, 0)
    assert "shutting down" in released["last_error"]
    assert runner.logged("drained", released=[long_run])


def announced(dsn: str, worker: str) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT 1 FROM runners WHERE worker_id = %s", (worker,)).fetchone()
    return row is not None


def test_a_draining_runner_does_not_announce_itself_again_after_withdrawing(
    dsn: str, runners: Runners
) -> None:
    """The drain withdraws the runner's announcement, then waits (up to 5 s) for its released
    jobs to stop (a subprocess child: SIGTERM, then SIGKILL after the grace period); the
    announcer must not put the row back meanwhile, or other processes take the stopped runner
    for a live one until its announcement expires."""
    # A 1.5 s lease announces every 0.5 s: well inside the wait after the withdrawal.
    runner = runners.start(dsn, "--grace-seconds", "1", "--lease-seconds", "1.5")
    job = create_job(dsn, "loop.subprocess_sleep", execution_model="subprocess")
    (run_id,) = submit(dsn, job, args={"seconds": 4})
    eventually(lambda: run_row(dsn, run_id)["state"] == "running", what="the run to start")
    assert announced(dsn, runner.worker_id)

    assert runner.terminate_and_wait() == 0

    assert runner.logged("drained", released=[run_id])
    assert not announced(dsn, runner.worker_id)
