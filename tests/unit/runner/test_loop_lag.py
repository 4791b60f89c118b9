from __future__ import annotations

import asyncio
import time

from sundial.runner import loop_lag, outcomes, registry
from sundial.runner.executors import async_executor
from support.invocations import invoke


async def test_a_handler_blocking_the_loop_shows_up_in_loop_lag() -> None:
    seen: list[float] = []
    monitor = loop_lag.LoopLagMonitor(interval_seconds=0.01, observe=seen.append)
    monitor.start()
    try:
        executor = async_executor.AsyncExecutor(registry.default_registry)
        outcome = await executor.run(invoke("sample.async_block", {"seconds": 0.4}))
        assert outcome == outcomes.Succeeded()
        await asyncio.sleep(0.05)  # let the delayed tick run and record
    finally:
        monitor.stop()
    assert monitor.max_seconds >= 0.2
    assert max(seen) == monitor.max_seconds
    assert monitor.samples == len(seen)


async def test_an_idle_loop_has_small_lag_and_reset_starts_a_new_period() -> None:
    monitor = loop_lag.LoopLagMonitor(interval_seconds=0.005)
    monitor.start()
    time.sleep(0.1)  # noqa: ASYNC251 (a block the monitor must see)
    await asyncio.sleep(0.05)
    assert monitor.reset_max() >= 0.05
    assert monitor.max_seconds == 0.0
    monitor.stop()
    assert not monitor.running
