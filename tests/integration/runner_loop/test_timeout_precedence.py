"""Which timeout an attempt gets: the job's timeoutSeconds, else the handler's registration
(``@sundial.job(timeout_seconds=...)``), else 300 s. Real runner processes."""

from __future__ import annotations

import time

from support.runner_loop import Runners, create_job, eventually, run_row, submit


def _ended(dsn: str, run_id: int) -> dict[str, object] | None:
    row = run_row(dsn, run_id)
    return row if row["state"] not in ("pending", "running") else None


def test_the_registered_timeout_applies_when_the_job_sets_none(dsn: str, runners: Runners) -> None:
    # loop.registered_timeout is registered with timeout_seconds=2 and sleeps 30 s.
    job = create_job(dsn, "loop.registered_timeout", timeout_seconds=None, max_retries=0)
    (run_id,) = submit(dsn, job)
    runners.start(dsn)
    eventually(lambda: run_row(dsn, run_id)["state"] == "running", what="the claim")
    started = time.monotonic()
    ended = eventually(lambda: _ended(dsn, run_id), within=20, what="the 2 s timeout")
    elapsed = time.monotonic() - started

    assert ended["state"] == "timed_out", ended
    assert "timeoutSeconds=2" in str(ended["last_error"])
    assert elapsed < 6, f"the attempt ran {elapsed:.1f}s; the registered timeout is 2 s"


def test_the_jobs_timeout_overrides_the_registered_one(dsn: str, runners: Runners) -> None:
    # The job says 5 s: the registration's 2 s must not cut a 3.5 s attempt short.
    job = create_job(dsn, "loop.registered_timeout", timeout_seconds=5, max_retries=0)
    (finishes,) = submit(dsn, job, args={"seconds": 3.5})
    (overruns,) = submit(dsn, job, args={"seconds": 30})
    runners.start(dsn)

    assert eventually(lambda: _ended(dsn, finishes))["state"] == "completed"
    overran = eventually(lambda: _ended(dsn, overruns))
    assert overran["state"] == "timed_out"
    assert "timeoutSeconds=5" in str(overran["last_error"])
