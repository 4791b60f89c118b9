from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator

import pytest

from handlers import sample_jobs
from sundial.runner import outcomes, registry
from sundial.runner.executors import thread_executor
from support.invocations import invoke
from support.polling import wait_until_async


@pytest.fixture
async def executor() -> AsyncIterator[thread_executor.ThreadExecutor]:
    pool = thread_executor.ThreadExecutor(registry.default_registry, max_workers=2)
    yield pool
    await pool.close()


@pytest.fixture
def gate() -> tuple[str, threading.Event]:
    name = uuid.uuid4().hex
    event = sample_jobs.GATES[name] = threading.Event()
    yield name, event  # type: ignore[misc]
    event.set()
    del sample_jobs.GATES[name]


async def test_success_runs_off_the_event_loop_thread(
    executor: thread_executor.ThreadExecutor,
) -> None:
    assert await executor.run(invoke("sample.thread_ok")) == outcomes.Succeeded()


async def test_validated_model_reaches_the_handler(
    executor: thread_executor.ThreadExecutor,
) -> None:
    ok = await executor.run(invoke("sample.report", {"day": "2020-01-31", "pages": 2}))
    assert ok == outcomes.Succeeded()
    bad = await executor.run(invoke("sample.report", {"day": "2020-01-31", "pages": 0}))
    assert isinstance(bad, outcomes.Failed)
    assert bad.detail is outcomes.FailureDetail.BAD_ARGS
    assert "greater than or equal to 1" in bad.error


async def test_a_raising_handler_fails_and_the_pool_keeps_going(
    executor: thread_executor.ThreadExecutor,
) -> None:
    outcome = await executor.run(invoke("sample.thread_fail"))
    assert isinstance(outcome, outcomes.Failed)
    assert "RuntimeError: thread handler exploded" in outcome.error
    assert "Traceback" in outcome.error
    assert await executor.run(invoke("sample.thread_ok")) == outcomes.Succeeded()


async def test_timeout_leaks_the_slot_until_the_thread_returns(
    executor: thread_executor.ThreadExecutor, gate: tuple[str, threading.Event]
) -> None:
    name, event = gate
    # Generous, so the thread has surely started (a still-queued job is dropped, not leaked).
    outcome = await executor.run(invoke("sample.thread_gate", {"gate": name}, timeout_seconds=0.5))
    assert isinstance(outcome, outcomes.TimedOut)
    assert "leaked" in outcome.error
    assert executor.leaked == 1
    assert executor.busy == 1
    event.set()
    await wait_until_async(lambda: executor.leaked == 0 and executor.busy == 0)


async def test_timeout_sets_the_cooperative_cancellation_signal(
    executor: thread_executor.ThreadExecutor,
) -> None:
    outcome = await executor.run(invoke("sample.thread_cooperative", timeout_seconds=0.05))
    assert isinstance(outcome, outcomes.TimedOut)
    await wait_until_async(lambda: executor.leaked == 0)


async def test_cancellation_reports_cancelled_and_signals_the_thread(
    executor: thread_executor.ThreadExecutor,
) -> None:
    job = invoke("sample.thread_cooperative")
    running = asyncio.ensure_future(executor.run(job))
    await wait_until_async(lambda: executor.busy == 1)
    job.cancel.set()
    assert await running == outcomes.Cancelled()
    await wait_until_async(lambda: executor.busy == 0 and executor.leaked == 0)


async def test_a_queued_job_that_times_out_never_leaks(
    executor: thread_executor.ThreadExecutor, gate: tuple[str, threading.Event]
) -> None:
    name, event = gate
    blockers = [
        asyncio.ensure_future(executor.run(invoke("sample.thread_gate", {"gate": name})))
        for _ in range(2)
    ]
    await wait_until_async(lambda: executor.busy == 2)
    queued = await executor.run(invoke("sample.thread_ok", timeout_seconds=0.05))
    assert isinstance(queued, outcomes.TimedOut)
    assert "never started" in queued.error
    assert executor.leaked == 0
    event.set()
    assert await asyncio.gather(*blockers) == [outcomes.Succeeded(), outcomes.Succeeded()]
