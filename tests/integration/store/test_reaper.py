"""A vanished worker's run is rescued by the reaper; a run out of attempts is dead-lettered."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from test_fencing import SHORT_LEASE, wait_for_lease_expiry

from sundial.attempt import finishes
from sundial.store import claims, errors, monitoring, reaper, runs
from sundial.store import pool as store_pool


async def test_vanished_worker_run_is_rerun_then_dead_lettered_then_replayed(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    # maxRetries: 0 and a lost-lease budget of 1: a lost lease spends the budget, not retries.
    job = make_job("crashy", max_retries=0)
    submitted = await runs.submit(pool, job)
    run_id = submitted.run_id
    await _set_lost_lease_budget(pool, run_id, 1)

    # Attempt 1: the worker vanishes (never heartbeats or finishes).
    [first] = await claims.claim(pool, "vanished-1", lease_seconds=SHORT_LEASE)
    assert await reaper.reap(pool) == reaper.ReapResult()  # lease still valid: nothing to do
    await wait_for_lease_expiry(pool, run_id)
    reaped = await reaper.reap(pool)
    assert reaped.requeued == {run_id} and reaped.lease_expiries == 1

    # Attempt 2: re-run by another worker, which vanishes too; the budget is now spent.
    [second] = await claims.claim(pool, "vanished-2", lease_seconds=SHORT_LEASE)
    assert (second.id, second.attempt, second.retries_used) == (run_id, first.attempt + 1, 0)
    await wait_for_lease_expiry(pool, run_id)
    reaped = await reaper.reap(pool)
    assert reaped.ended == {run_id: "dead_lettered"}
    info = await runs.get(pool, run_id)
    assert info is not None
    assert (info.state, info.failure_reason) == ("dead_lettered", "lease_expired")
    assert "vanished-2" in (info.last_error or "")
    assert "lost-lease budget (1) is spent" in (info.last_error or "")
    assert await monitoring.lease_expiries(pool) == 2

    # Replay: same run, fresh budgets, the attempt keeps growing.
    assert await runs.replay(pool, run_id) == 2
    [third] = await claims.claim(pool, "healthy", lease_seconds=SHORT_LEASE)
    assert (third.id, third.attempt, third.retries_used) == (run_id, 3, 0)
    await wait_for_lease_expiry(pool, run_id)
    assert (await reaper.reap(pool)).requeued == {run_id}  # the lost-lease budget is fresh
    [fourth] = await claims.claim(pool, "healthy")
    done = await claims.finish(pool, "healthy", [finishes.succeeded(fourth)])
    assert done.states == {run_id: "completed"}
    assert await monitoring.attempts_per_completed_run(pool) == {4: 1}


@pytest.mark.parametrize("budget", [0, 1, 3])
async def test_a_run_is_requeued_exactly_its_lost_lease_budget_times(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], budget: int
) -> None:
    job = make_job("killer", max_retries=0)
    run_id = (await runs.submit(pool, job)).run_id
    await _set_lost_lease_budget(pool, run_id, budget)
    requeues = 0
    while True:
        await claims.claim(pool, "w", lease_seconds=SHORT_LEASE)
        await wait_for_lease_expiry(pool, run_id)
        reaped = await reaper.reap(pool)
        if reaped.ended:
            assert reaped.ended == {run_id: "dead_lettered"}
            break
        assert reaped.requeued == {run_id}
        requeues += 1
    assert requeues == budget
    info = await runs.get(pool, run_id)
    assert info is not None and info.retries_used == 0


async def _set_lost_lease_budget(pool: store_pool.Pool, run_id: int, budget: int) -> None:
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE job_runs SET max_lost_leases = %s WHERE id = %s", (budget, run_id)
        )


async def test_expired_run_with_cancel_requested_is_cancelled_not_rerun(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    submitted = await runs.submit(pool, job)
    await claims.claim(pool, "w", lease_seconds=SHORT_LEASE)
    assert await runs.cancel(pool, submitted.run_id) == runs.CancelResult.REQUESTED
    await wait_for_lease_expiry(pool, submitted.run_id)
    reaped = await reaper.reap(pool)
    assert reaped.ended == {submitted.run_id: "cancelled"}


async def test_a_heartbeat_keeps_the_reaper_away(pool: store_pool.Pool, job: uuid.UUID) -> None:
    await runs.submit(pool, job)
    [run] = await claims.claim(pool, "w", lease_seconds=SHORT_LEASE)
    await claims.heartbeat(pool, "w", [(run.id, run.attempt)], lease_seconds=60)
    async with pool.connection() as conn:
        await conn.execute("SELECT pg_sleep(%s)", (SHORT_LEASE + 0.1,))
    assert await reaper.reap(pool) == reaper.ReapResult()


async def test_replaying_a_live_run_is_refused(pool: store_pool.Pool, job: uuid.UUID) -> None:
    submitted = await runs.submit(pool, job)
    with pytest.raises(errors.RunNotReplayableError, match="it is pending"):
        await runs.replay(pool, submitted.run_id)
