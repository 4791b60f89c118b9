"""The process executor with real spawned workers: crashes, timeouts and the pool rebuild."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from sundial.runner import loop_lag, outcomes, registry
from sundial.runner.executors import process_executor
from support.invocations import invoke


@pytest.fixture
async def executor() -> AsyncIterator[process_executor.ProcessExecutor]:
    pool = process_executor.ProcessExecutor(registry.default_registry, max_workers=2)
    yield pool
    await pool.close()


async def test_success_and_failure_with_the_remote_traceback(
    executor: process_executor.ProcessExecutor,
) -> None:
    assert await executor.run(invoke("sample.process_ok")) == outcomes.Succeeded()
    failed = await executor.run(invoke("sample.process_fail"))
    assert isinstance(failed, outcomes.Failed)
    assert "KeyError: 'process handler exploded'" in failed.error
    assert "process_fail" in failed.error  # the frame from the worker process
    assert executor.rebuilds == 0


@pytest.mark.parametrize(
    ("handler", "how"),
    [("sample.process_exit", "exit code 1"), ("sample.process_segfault", "SIGSEGV")],
)
async def test_a_handler_killing_its_process_is_a_crash_and_the_pool_is_rebuilt(
    executor: process_executor.ProcessExecutor, handler: str, how: str
) -> None:
    first = await executor.run(invoke(handler))
    assert isinstance(first, outcomes.Crashed)
    assert first.counts_as_crash
    assert how in first.error
    assert executor.crash_counts[handler] == 1
    assert executor.rebuilds == 1
    assert await executor.run(invoke("sample.process_ok")) == outcomes.Succeeded()
    second = await executor.run(invoke(handler))
    assert isinstance(second, outcomes.Crashed)
    assert executor.crash_counts[handler] == 2  # the caller quarantines after N
    assert await executor.run(invoke("sample.process_ok")) == outcomes.Succeeded()


async def test_a_bystander_in_a_broken_pool_is_not_blamed(
    executor: process_executor.ProcessExecutor,
) -> None:
    bystander = asyncio.ensure_future(executor.run(invoke("sample.process_sleep", {"seconds": 30})))
    await executor.run(invoke("sample.process_ok"))  # both workers are up now
    crash = await executor.run(invoke("sample.process_exit"))
    victim = await bystander
    assert isinstance(crash, outcomes.Crashed) and crash.counts_as_crash
    assert isinstance(victim, outcomes.Crashed)
    assert victim.detail is outcomes.FailureDetail.POOL_RESTARTED
    assert executor.crash_counts == {"sample.process_exit": 1}


async def test_timeout_kills_the_worker_and_the_next_job_succeeds(
    executor: process_executor.ProcessExecutor,
) -> None:
    await executor.run(invoke("sample.process_ok"))  # a worker is up: the timeout is the job's
    outcome = await executor.run(
        invoke("sample.process_sleep", {"seconds": 60}, timeout_seconds=0.5)
    )
    assert isinstance(outcome, outcomes.TimedOut)
    assert executor.rebuilds == 1
    assert executor.crash_counts == {}
    assert await executor.run(invoke("sample.process_ok")) == outcomes.Succeeded()


async def test_cancellation_kills_the_worker(executor: process_executor.ProcessExecutor) -> None:
    await executor.run(invoke("sample.process_ok"))
    job = invoke("sample.process_sleep", {"seconds": 60})
    running = asyncio.ensure_future(executor.run(job))
    await asyncio.sleep(0.2)
    job.cancel.set()
    assert isinstance(await running, outcomes.Cancelled)
    assert executor.rebuilds == 1


async def test_cpu_bound_work_in_the_process_pool_does_not_lag_the_loop(
    executor: process_executor.ProcessExecutor,
) -> None:
    await executor.run(invoke("sample.process_ok"))  # pay for spawning outside the measurement
    monitor = loop_lag.LoopLagMonitor(interval_seconds=0.01)
    monitor.start()
    try:
        spin = await executor.run(invoke("sample.process_spin", {"seconds": 1.0}))
    finally:
        monitor.stop()
    assert spin == outcomes.Succeeded()
    assert monitor.samples > 10
    # The same second spent blocking the loop would show up as ~1s of lag.
    assert monitor.max_seconds < 0.5
