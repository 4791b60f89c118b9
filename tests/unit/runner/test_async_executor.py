from __future__ import annotations

import asyncio

from sundial.runner import outcomes, registry
from sundial.runner.executors import async_executor
from support.invocations import invoke

HANDLERS = registry.default_registry


async def test_success_hands_the_context_to_the_handler() -> None:
    seen: list[str] = []
    handlers = registry.Registry()

    @handlers.job("ctx")
    async def ctx_handler(args: dict[str, object], ctx: object) -> None:
        seen.append(f"{ctx.run_id}/{ctx.attempt}/{ctx.idempotency_key}")  # type: ignore[attr-defined]

    executor = async_executor.AsyncExecutor(handlers)
    outcome = await executor.run(invoke("ctx", run_id="r9", attempt=4, idempotency_key="k"))
    assert outcome == outcomes.Succeeded()
    assert seen == ["r9/4/k"]


async def test_a_raising_handler_fails_with_its_traceback_and_the_executor_keeps_going() -> None:
    executor = async_executor.AsyncExecutor(HANDLERS)
    outcome = await executor.run(invoke("sample.async_fail"))
    assert isinstance(outcome, outcomes.Failed)
    assert outcome.detail is outcomes.FailureDetail.HANDLER_ERROR
    assert "Traceback" in outcome.error and "async handler exploded" in outcome.error
    assert await executor.run(invoke("sample.async_ok")) == outcomes.Succeeded()


async def test_unknown_handler_fails_with_a_clear_reason() -> None:
    outcome = await async_executor.AsyncExecutor(HANDLERS).run(invoke("os.system"))
    assert isinstance(outcome, outcomes.Failed)
    assert outcome.detail is outcomes.FailureDetail.UNKNOWN_HANDLER
    assert "no handler named 'os.system'" in outcome.error
    assert not outcome.retryable


async def test_bad_args_fail_with_the_pydantic_message() -> None:
    outcome = await async_executor.AsyncExecutor(HANDLERS).run(
        invoke("sample.async_sleep", {"seconds": "forever"})
    )
    assert isinstance(outcome, outcomes.Failed)
    assert outcome.detail is outcomes.FailureDetail.BAD_ARGS
    assert "seconds" in outcome.error and "valid number" in outcome.error


async def test_timeout_cancels_the_task() -> None:
    executor = async_executor.AsyncExecutor(HANDLERS)
    outcome = await executor.run(
        invoke("sample.async_sleep", {"seconds": 60}, timeout_seconds=0.05)
    )
    assert isinstance(outcome, outcomes.TimedOut)
    assert outcome.timeout_seconds == 0.05
    assert executor.busy == 0


async def test_cancellation_stops_the_handler() -> None:
    executor = async_executor.AsyncExecutor(HANDLERS)
    job = invoke("sample.async_sleep", {"seconds": 60})
    running = asyncio.ensure_future(executor.run(job))
    await asyncio.sleep(0)
    assert executor.busy == 1
    job.cancel.set()
    assert await running == outcomes.Cancelled()
    assert executor.busy == 0


async def test_close_cancels_whatever_still_runs() -> None:
    executor = async_executor.AsyncExecutor(HANDLERS)
    running = asyncio.ensure_future(executor.run(invoke("sample.async_sleep", {"seconds": 60})))
    await asyncio.sleep(0)
    await executor.close()
    assert isinstance(await running, outcomes.Cancelled)


async def test_a_timeout_does_not_leak_a_cancellation_into_the_caller() -> None:
    handlers = registry.Registry()

    @handlers.job("stubborn")
    async def stubborn(args: dict[str, object], ctx: object) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return None  # swallows its cancellation and returns normally

    executor = async_executor.AsyncExecutor(handlers)
    outcome = await executor.run(invoke("stubborn", timeout_seconds=0.05))
    assert isinstance(outcome, outcomes.TimedOut)
    await asyncio.sleep(0.01)  # would raise CancelledError if a cancel were still pending
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_cancelling_the_caller_still_cancels_the_caller() -> None:
    executor = async_executor.AsyncExecutor(HANDLERS)
    running = asyncio.ensure_future(executor.run(invoke("sample.async_sleep", {"seconds": 60})))
    await asyncio.sleep(0)
    running.cancel()
    try:
        await running
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the caller's cancellation was swallowed")
    assert executor.busy == 0
