"""A runner that dies or stalls loses its runs to another runner, and its late writes are fenced."""

from __future__ import annotations

import signal

from support.runner_loop import Runners, create_job, eventually, run_row, submit

SHORT_LEASE = ("--lease-seconds", "2", "--maintenance-seconds", "0.2")


def test_kill_9_mid_job_lets_another_runner_complete_the_run(dsn: str, runners: Runners) -> None:
    job = create_job(dsn, "loop.sleep")
    (run_id,) = submit(dsn, job, args={"seconds": 1.5})
    first = runners.start(dsn, *SHORT_LEASE, worker_id="doomed")
    eventually(
        lambda: (
            run_row(dsn, run_id)["lease_owner"] == "doomed"
            and run_row(dsn, run_id)["state"] == "running"
        ),
        what="the first runner to claim the run",
    )

    first.process.kill()
    first.process.wait(10)
    runners.start(dsn, *SHORT_LEASE, worker_id="rescuer")

    eventually(lambda: run_row(dsn, run_id)["state"] == "completed", what="the run to complete")
    run = run_row(dsn, run_id)
    assert run["attempt"] == 2
    assert run["lease_owner"] == "rescuer"
    assert run["lease_expiries"] == 1


def test_a_runner_paused_past_its_lease_cannot_overwrite_the_new_attempt(
    dsn: str, runners: Runners
) -> None:
    job = create_job(dsn, "loop.sleep")
    (run_id,) = submit(dsn, job, args={"seconds": 1.0})
    paused = runners.start(dsn, *SHORT_LEASE, worker_id="paused")
    eventually(
        lambda: run_row(dsn, run_id)["lease_owner"] == "paused",
        what="the first runner to claim the run",
    )
    paused.signal(signal.SIGSTOP)
    runners.start(dsn, *SHORT_LEASE, worker_id="other")
    eventually(lambda: run_row(dsn, run_id)["state"] == "completed", what="the other runner")
    completed = run_row(dsn, run_id)
    assert (completed["attempt"], completed["lease_owner"]) == (2, "other")

    paused.signal(signal.SIGCONT)

    eventually(
        lambda: paused.logged("lease lost", run_id=run_id, attempt=1),
        what="the paused runner to log its lease as lost",
    )
    assert run_row(dsn, run_id) == completed
    assert paused.metric("sundial_runs_total", handler="loop.sleep", outcome="succeeded") is None
    assert paused.metric("sundial_runs_total", handler="loop.sleep", outcome="lease_lost") == 1
    assert paused.terminate_and_wait() == 0
