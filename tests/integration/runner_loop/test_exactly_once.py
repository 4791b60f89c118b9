"""Many runs through one runner: each completes exactly once; others' handlers are left alone."""

from __future__ import annotations

import collections
import pathlib

from support.runner_loop import Runners, create_job, eventually, run_row, states, submit


def test_many_noop_jobs_complete_exactly_once(
    dsn: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    ledger = tmp_path / "ledger"
    job = create_job(dsn, "loop.record_token")
    foreign = create_job(dsn, "someone.elses.handler")
    run_ids = submit(dsn, job, 2000, {"path": str(ledger)})
    (foreign_run,) = submit(dsn, foreign)
    runner = runners.start(dsn, "--concurrency", "async=200")

    eventually(lambda: states(dsn).get("completed") == 2000, what="2000 completed")

    executions = collections.Counter(
        int(line.split()[0]) for line in ledger.read_text().splitlines()
    )
    assert sorted(executions) == run_ids
    assert set(executions.values()) == {1}
    # On PostgreSQL alone the fencing token a handler sees is the attempt.
    assert {tuple(line.split()[1:]) for line in ledger.read_text().splitlines()} == {("1", "1")}
    assert states(dsn) == {"completed": 2000, "pending": 1}
    unclaimed = run_row(dsn, foreign_run)
    assert (unclaimed["state"], unclaimed["attempt"]) == ("pending", 0)
    succeeded = runner.metric(
        "sundial_runs_total", handler="loop.record_token", outcome="succeeded"
    )
    assert succeeded == 2000
    assert runner.terminate_and_wait() == 0
