"""What each executor's trouble looks like from the database and /metrics of a real runner."""

from __future__ import annotations

import pytest

from support.runner_loop import Runners, create_job, eventually, run_row, submit


def _samples_over_one_second(runner_metrics: str) -> float:
    values = {}
    for line in runner_metrics.splitlines():
        if line.startswith('sundial_loop_lag_seconds_bucket{le="1.0"}'):
            values["le1"] = float(line.rpartition(" ")[2])
        if line.startswith("sundial_loop_lag_seconds_count"):
            values["count"] = float(line.rpartition(" ")[2])
    return values["count"] - values["le1"]


def test_a_handler_blocking_the_loop_shows_in_loop_lag_and_process_work_does_not(
    dsn: str, runners: Runners
) -> None:
    runner = runners.start(dsn)
    spin = create_job(dsn, "loop.process_spin", execution_model="process")
    (spin_run,) = submit(dsn, spin, args={"seconds": 2.0})
    eventually(lambda: run_row(dsn, spin_run)["state"] == "completed", what="the CPU-bound job")
    assert _samples_over_one_second(runner.metrics()) == 0

    block = create_job(dsn, "loop.block")
    (block_run,) = submit(dsn, block, args={"seconds": 2.0})
    eventually(lambda: run_row(dsn, block_run)["state"] == "completed", what="the blocking job")
    assert _samples_over_one_second(runner.metrics()) >= 1


def test_a_handler_that_kills_its_process_is_retried_then_quarantined(
    dsn: str, runners: Runners
) -> None:
    runner = runners.start(dsn, "--quarantine-after", "2", "--maintenance-seconds", "0.2")
    crasher = create_job(dsn, "loop.process_exit", execution_model="process", max_retries=5)
    (crash_run,) = submit(dsn, crasher)

    eventually(lambda: runner.logged("handler quarantined", handler="loop.process_exit"))
    assert runner.metric("sundial_quarantined_handlers", handler="loop.process_exit") == 1
    assert runner.metric("sundial_process_crashes_total", handler="loop.process_exit") == 2
    # The pool was rebuilt: other process handlers still run in this runner ...
    healthy = create_job(dsn, "loop.process_noop", execution_model="process")
    (healthy_run,) = submit(dsn, healthy)
    eventually(lambda: run_row(dsn, healthy_run)["state"] == "completed", what="a healthy job")
    # ... but the quarantined handler is no longer claimed here; its run waits, not lost.
    run = run_row(dsn, crash_run)
    assert (run["attempt"], run["retries_used"], run["failure_reason"]) == (2, 2, "crash")
    assert run["state"] in ("pending", "retry_wait")
    assert "exit" in run["last_error"]


@pytest.mark.parametrize(
    ("handler", "model"),
    [
        ("loop.sleep", "async"),
        ("loop.thread_sleep", "thread"),
        ("loop.process_sleep", "process"),
        ("loop.subprocess_sleep", "subprocess"),
    ],
)
def test_a_timeout_ends_the_attempt_as_timed_out(
    dsn: str, runners: Runners, handler: str, model: str
) -> None:
    runner = runners.start(dsn)
    job = create_job(dsn, handler, execution_model=model, timeout_seconds=1, max_retries=0)
    (run_id,) = submit(dsn, job, args={"seconds": 4})

    eventually(lambda: run_row(dsn, run_id)["failure_reason"] == "timeout", what="a timeout")
    run = run_row(dsn, run_id)
    # With its retries spent (maxRetries 0) a timed-out run ends timed_out, not dead_lettered.
    assert (run["state"], run["attempt"], run["failure_detail"]) == ("timed_out", 1, "Timeout")
    assert run["last_error"].startswith("attempt 1 exceeded timeoutSeconds=1: ")
    assert "did not finish within 1s" in run["last_error"]
    assert runner.metric("sundial_runs_total", handler=handler, outcome="timed_out") == 1
    if model == "thread":
        assert runner.metric("sundial_leaked_thread_slots") == 1


def test_a_timeout_is_retried_then_the_run_ends_timed_out(dsn: str, runners: Runners) -> None:
    runner = runners.start(dsn, "--maintenance-seconds", "0.2")
    job = create_job(dsn, "loop.sleep", timeout_seconds=1, max_retries=1)
    (run_id,) = submit(dsn, job, args={"seconds": 4})

    eventually(lambda: run_row(dsn, run_id)["state"] == "timed_out", what="two timeouts")
    run = run_row(dsn, run_id)
    assert (run["attempt"], run["retries_used"], run["failure_reason"]) == (2, 1, "timeout")
    assert run["last_error"].startswith("attempt 2 exceeded timeoutSeconds=1: ")
    assert runner.metric("sundial_runs_total", handler="loop.sleep", outcome="timed_out") == 2
