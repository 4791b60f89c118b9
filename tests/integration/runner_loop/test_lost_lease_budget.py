"""A runner crash does not spend the job's retries; a job that kills its runner every time is
dead-lettered after its lost-lease budget (ADR 0016). Real runner processes, killed -9."""

from __future__ import annotations

import pathlib

from support.runner_loop import Runners, create_job, eventually, run_row, submit

SHORT_LEASE = ("--lease-seconds", "2", "--maintenance-seconds", "0.2")
DEFAULT_BUDGET = 3  # job_runs.max_lost_leases' default


def test_a_max_retries_0_run_is_executed_again_after_its_runner_is_killed(
    dsn: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    job = create_job(dsn, "loop.sleep", max_retries=0)
    (run_id,) = submit(dsn, job, args={"seconds": 1.5})
    doomed = runners.start(dsn, *SHORT_LEASE, worker_id="doomed")
    eventually(lambda: run_row(dsn, run_id)["lease_owner"] == "doomed", what="the first claim")

    doomed.process.kill()
    doomed.process.wait(10)
    runners.start(dsn, *SHORT_LEASE, worker_id="rescuer")

    eventually(lambda: run_row(dsn, run_id)["state"] == "completed", what="the second attempt")
    run = run_row(dsn, run_id)
    assert (run["attempt"], run["retries_used"], run["lease_expiries"]) == (2, 0, 1)


def test_a_handler_that_kills_its_runner_every_time_is_dead_lettered_after_the_budget(
    dsn: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    executions = tmp_path / "executions"
    job = create_job(dsn, "loop.kill_runner", max_retries=5)
    (run_id,) = submit(dsn, job, args={"path": str(executions)})

    for round_number in range(DEFAULT_BUDGET + 1):
        runner = runners.start(dsn, *SHORT_LEASE, worker_id=f"victim-{round_number}")
        # It reaps the previous victim's lease (after the first round), claims, and dies.
        assert runner.process.wait(60) == -9, runner.log_path.read_text()
    survivor = runners.start(dsn, *SHORT_LEASE, worker_id="survivor")

    ended = eventually(
        lambda: run_row(dsn, run_id)["state"] == "dead_lettered" and run_row(dsn, run_id),
        what="the run to be dead-lettered",
    )
    assert ended["failure_reason"] == "lease_expired"
    assert f"lost-lease budget ({DEFAULT_BUDGET}) is spent" in ended["last_error"]
    assert "victim-3" in ended["last_error"]
    assert ended["retries_used"] == 0  # maxRetries (5) untouched: crashes have their own budget
    lines = executions.read_text().splitlines()
    assert lines == [f"{run_id} {attempt}" for attempt in range(1, DEFAULT_BUDGET + 2)]
    assert survivor.process.poll() is None  # the survivor never ran it
