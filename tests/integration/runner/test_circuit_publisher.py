"""The runner's circuit publisher against a real PostgreSQL (runner.circuits): a transition
that comes before the runner's announcement is written once the runner is announced, and the
refresh reports an open breaker that turned half-open with no run asking it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from sundial.observability import metrics
from sundial.runner import breaker, circuits
from sundial.store import circuits as store_circuits
from sundial.store import pool as store_pool
from sundial.store import runners

POLICY = breaker.BreakerPolicy(min_calls=2, open_seconds=30)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def publishing(
    pool: store_pool.Pool, publisher: circuits.Publisher, breakers: breaker.Breakers
) -> AsyncIterator[None]:
    errors: list[BaseException | None] = []
    task = asyncio.create_task(publisher.run(lambda: pool, breakers, errors.append))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert [e for e in errors if e is not None] == []


async def eventually(check: Callable[[], Awaitable[bool]], what: str, within: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def published(pool: store_pool.Pool) -> dict[str, str]:
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT dependency, state FROM circuits")
        return dict(await cursor.fetchall())


async def test_a_transition_before_the_announcement_is_written_after_it(
    pool: store_pool.Pool,
) -> None:
    runner_metrics = metrics.RunnerMetrics()
    publisher = circuits.Publisher("r1", runner_metrics)
    breakers = breaker.Breakers(POLICY, on_transition=publisher.transition)
    async with publishing(pool, publisher, breakers):
        breakers["payments"].record_failure()
        breakers["payments"].record_failure()  # opens
        await asyncio.sleep(0.3)
        assert await published(pool) == {}  # not announced: nothing written yet
        await runners.announce(pool, "r1", queues=["default"], handlers={}, ttl_seconds=60)

        async def written() -> bool:
            return await published(pool) == {"payments": "open"}

        await eventually(written, "the open circuit to be written after the announcement")
    assert set(await store_circuits.open_for(pool)) == {"payments"}
    text = runner_metrics.exposition().decode()
    assert 'sundial_circuit_state{dependency="payments",sundial_circuit_state="open"} 1.0' in text


async def test_the_refresh_reports_an_open_breaker_that_turned_half_open(
    pool: store_pool.Pool,
) -> None:
    await runners.announce(pool, "r1", queues=["default"], handlers={}, ttl_seconds=60)
    clock = FakeClock()
    publisher = circuits.Publisher("r1", metrics.RunnerMetrics(), refresh_seconds=0.2)
    breakers = breaker.Breakers(POLICY, clock=clock, on_transition=publisher.transition)
    async with publishing(pool, publisher, breakers):
        breakers["payments"].record_failure()
        breakers["payments"].record_failure()

        def state_is(wanted: str) -> Callable[[], Awaitable[bool]]:
            async def check() -> bool:
                return await published(pool) == {"payments": wanted}

            return check

        await eventually(state_is("open"), "open")
        clock.now += 30  # open_seconds pass; no run asks the breaker
        await eventually(state_is("half_open"), "the refresh to find it half-open")


async def test_a_cancel_in_the_step_of_a_transition_stops_the_publisher(
    pool: store_pool.Pool,
) -> None:
    """The runner stops its publisher with a cancel; a transition in the same step must not
    swallow it (Python 3.11's wait_for did, and the runner's shutdown waited forever)."""
    for _ in range(20):
        publisher = circuits.Publisher("r1", metrics.RunnerMetrics(), refresh_seconds=30)
        breakers = breaker.Breakers(POLICY, on_transition=publisher.transition)
        task = asyncio.create_task(publisher.run(lambda: pool, breakers, lambda error: None))
        await asyncio.sleep(0.01)  # the publisher waits for a change
        publisher.transition("payments", breaker.State.OPEN)
        await asyncio.sleep(0)  # the wait sees the change ...
        task.cancel()  # ... and the cancel comes in the same step
        done, _ = await asyncio.wait({task}, timeout=5)
        assert done == {task} and task.cancelled()
