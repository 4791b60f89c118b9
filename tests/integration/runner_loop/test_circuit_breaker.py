"""An open circuit breaker makes runs wait (RetryWait) without spending their retries."""

from __future__ import annotations

import psycopg

from support.runner_loop import Runners, create_job, eventually, states, submit


def test_runs_wait_without_spending_retries_once_the_breaker_opens(
    dsn: str, runners: Runners
) -> None:
    runner = runners.start(dsn, "--concurrency", "async=1")
    job = create_job(dsn, "loop.flaky_downstream", max_retries=0)
    submit(dsn, job, 15)

    # The default policy opens after 10 calls with a failure rate >= 50%.
    eventually(
        lambda: states(dsn) == {"dead_lettered": 10, "retry_wait": 5}, what="the breaker to open"
    )
    with psycopg.connect(dsn) as conn:
        waiting = conn.execute(
            "SELECT retries_used, last_error, run_at > now() + interval '20 seconds'"
            " FROM job_runs WHERE state = 'retry_wait'"
        ).fetchall()
    assert {(used, error, later) for used, error, later in waiting} == {
        (0, "circuit breaker for dependency 'flaky-api' is open", True)
    }
    assert runner.metric("sundial_circuit_state", dependency="flaky-api") == 2
