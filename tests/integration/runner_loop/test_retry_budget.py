"""A dependency's retry budget: retries past it are deferred past the window, not dropped."""

from __future__ import annotations

import psycopg

from support.runner_loop import Runners, create_job, eventually, states, submit


def test_retries_past_the_budget_wait_for_the_window_and_still_count(
    dsn: str, runners: Runners
) -> None:
    runner = runners.start(
        dsn, "--concurrency", "async=4", "--retry-budget", "3",
        "--retry-budget-window-seconds", "120",
    )  # fmt: skip
    job = create_job(dsn, "loop.budgeted", max_retries=3)
    # Successes first, so the failure rate stays far below the breaker's 50%: this is the
    # budget at work, not the circuit breaker.
    submit(dsn, job, 30)
    eventually(lambda: states(dsn) == {"completed": 30}, what="the successful runs")

    failing = submit(dsn, job, 8, args={"fail": True})

    # Three retries fit the budget and succeed at once; five wait for the window.
    eventually(
        lambda: states(dsn) == {"completed": 33, "retry_wait": 5}, what="the budget to run out"
    )
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT state, attempt, retries_used, run_at > now() + interval '60 seconds',"
            " last_error FROM job_runs WHERE id = ANY(%s) ORDER BY id",
            (failing,),
        ).fetchall()
    retried = [row for row in rows if row[0] == "completed"]
    deferred = [row for row in rows if row[0] == "retry_wait"]
    assert {(r[1], r[2]) for r in retried} == {(2, 1)}
    # The failure counted, and the retry waits at least until the oldest spend leaves the
    # 120 s window (about 120 s from now), with the reason in last_error.
    assert {(r[1], r[2], r[3]) for r in deferred} == {(1, 1, True)}
    for row in deferred:
        assert "budget-api answered 503" in row[4]
        assert "retry budget of dependency 'budget-api' (3 retries per 120s" in row[4]
    assert runner.metric("sundial_retries_deferred_total", dependency="budget-api") == 5
    assert runner.metric("sundial_retry_budget_remaining", dependency="budget-api") == 0
    closed = {"dependency": "budget-api", "sundial_circuit_state": "closed"}
    assert runner.metric("sundial_circuit_state", **closed) == 1
