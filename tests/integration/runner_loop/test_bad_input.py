"""Bad input fails the run with a reason and the runner keeps going."""

from __future__ import annotations

import urllib.request

from click.testing import CliRunner

from sundial import cli
from support.runner_loop import Runners, create_job, eventually, run_row, submit


def test_args_rejected_by_the_model_fail_without_retry(dsn: str, runners: Runners) -> None:
    runners.start(dsn)
    job = create_job(dsn, "loop.typed", max_retries=3)
    (bad,) = submit(dsn, job, args={"count": "many"})
    (good,) = submit(dsn, job, args={"count": 2})

    eventually(lambda: run_row(dsn, bad)["state"] == "failed", what="the bad run to fail")
    run = run_row(dsn, bad)
    assert (run["attempt"], run["retries_used"], run["failure_reason"]) == (1, 0, "permanent")
    assert run["failure_detail"] == "BadArgs"  # what exactly, not only the class
    assert "arguments for handler 'loop.typed' are invalid" in run["last_error"]
    listed = CliRunner().invoke(cli.main, ["runs", "--dsn", dsn])
    assert listed.exit_code == 0, listed.output
    header, *lines = listed.output.splitlines()
    assert header.split()[8:10] == ["REASON", "DETAIL"]  # after FIRE TIME, STARTED …
    [line] = [line for line in lines if line.split()[0] == str(bad)]
    assert line.split()[7:9] == ["permanent", "BadArgs"], listed.output
    eventually(lambda: run_row(dsn, good)["state"] == "completed", what="the good run")


def test_a_raising_handler_is_retried_then_dead_lettered_with_its_traceback(
    dsn: str, runners: Runners
) -> None:
    runner = runners.start(dsn, "--maintenance-seconds", "0.2")
    job = create_job(dsn, "loop.raise", max_retries=1)
    (run_id,) = submit(dsn, job)

    eventually(lambda: run_row(dsn, run_id)["state"] == "dead_lettered", what="dead letter")
    run = run_row(dsn, run_id)
    assert (run["attempt"], run["failure_reason"], run["failure_detail"]) == (
        2,
        "error",
        "HandlerError",
    )
    assert "Traceback" in run["last_error"] and "attempt 2 exploded" in run["last_error"]
    for probe in ("healthz", "readyz"):
        url = f"http://127.0.0.1:{runner.port}/{probe}"
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200
