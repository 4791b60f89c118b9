"""The execution model comes from one place: the handler's registration, unless the job names
one; a job naming another model than the registration's is an error the runs show, and so is
a handler no live runner registers. Real runner processes."""

from __future__ import annotations

import pathlib

import psycopg

from support.runner_loop import Runners, create_job, eventually, run_row, submit

QUICK = ("--maintenance-seconds", "0.2", "--lease-seconds", "3")


def _reason(dsn: str, run_id: int) -> str | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT unclaimable_reason FROM job_runs WHERE id = %s", (run_id,)
        ).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def test_a_job_without_a_model_runs_as_the_handler_is_registered(
    dsn: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    # The README's case: a thread handler named by a job that gives no executionModel.
    out = tmp_path / "ran"
    job = create_job(dsn, "loop.thread_record", execution_model=None)
    (run_id,) = submit(dsn, job, args={"path": str(out)})
    runners.start(dsn, *QUICK)

    eventually(lambda: run_row(dsn, run_id)["state"] == "completed", what="the thread run")
    assert out.read_text() == f"{run_id} 1\n"


def test_a_job_naming_another_model_than_the_registration_says_why_it_waits(
    dsn: str, runners: Runners
) -> None:
    job = create_job(dsn, "loop.thread_record", execution_model="async")
    (run_id,) = submit(dsn, job, args={"path": "/dev/null"})
    runner = runners.start(dsn, *QUICK)

    reason = eventually(lambda: _reason(dsn, run_id), what="a reason on the run")
    assert run_row(dsn, run_id)["state"] == "pending"
    assert "loop.thread_record" in reason and "executionModel async" in reason
    assert "register it as thread" in reason
    eventually(lambda: runner.logged("run unclaimable", run_id=run_id), what="the runner to log it")

    # Fixing the job (here: letting the registration decide) makes it claimable, and the
    # claim clears the reason.
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE job_runs SET execution_model = NULL WHERE id = %s", (run_id,))
    eventually(lambda: run_row(dsn, run_id)["state"] == "completed", what="the fixed run")
    assert _reason(dsn, run_id) is None


def test_a_handler_no_live_runner_registers_says_so(dsn: str, runners: Runners) -> None:
    job = create_job(dsn, "nobody.registers.this", execution_model=None)
    (run_id,) = submit(dsn, job)
    runners.start(dsn, *QUICK)

    reason = eventually(lambda: _reason(dsn, run_id), what="a reason on the run")
    assert reason.startswith("no live runner serves handler nobody.registers.this on queue default")


def test_runs_command_shows_why_a_run_waits(dsn: str, runners: Runners) -> None:
    from click.testing import CliRunner

    from sundial import cli

    job = create_job(dsn, "loop.thread_record", execution_model="process")
    (run_id,) = submit(dsn, job, args={"path": "/dev/null"})
    runners.start(dsn, *QUICK)
    eventually(lambda: _reason(dsn, run_id), what="a reason on the run")

    result = CliRunner().invoke(cli.main, ["runs", "--dsn", dsn])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith(f"{run_id} "))
    assert "Unclaimable" in line
    assert f"run {run_id} is unclaimable: no runner serves handler loop.thread_record" in (
        result.output
    )
