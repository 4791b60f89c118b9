"""Fencing: attempt is the token; a worker that lost its lease changes nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import psycopg
import pytest

from sundial.attempt import finishes
from sundial.scheduling.failures import FailureClass
from sundial.store import claims, reaper, runs
from sundial.store import pool as store_pool

SHORT_LEASE = 0.4


async def wait_for_lease_expiry(pool: store_pool.Pool, run_id: int) -> None:
    """Poll the database clock until the run's lease has run out (bounded)."""
    for _ in range(100):
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT lease_until < now() FROM job_runs WHERE id = %s", (run_id,)
            )
            row = await cursor.fetchone()
        if row is not None and row[0]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the lease of run {run_id} never expired")


async def test_zombie_heartbeat_and_finish_are_rejected(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    submitted = await runs.submit(pool, job)
    [zombie_run] = await claims.claim(pool, "zombie", lease_seconds=SHORT_LEASE)
    await wait_for_lease_expiry(pool, zombie_run.id)
    reaped = await reaper.reap(pool)
    assert reaped.requeued == {submitted.run_id}
    [fresh_run] = await claims.claim(pool, "fresh", lease_seconds=30)
    assert fresh_run.attempt == zombie_run.attempt + 1
    before = await runs.get(pool, submitted.run_id)

    beat = await claims.heartbeat(pool, "zombie", [(zombie_run.id, zombie_run.attempt)])
    assert beat.lost == {zombie_run.id} and not beat.extended
    done = await claims.finish(pool, "zombie", [finishes.succeeded(zombie_run)])
    assert done.lost == {zombie_run.id} and done.states == {}
    failed = await claims.finish(pool, "zombie", [finishes.failed(zombie_run, "boom")])
    assert failed.lost == {zombie_run.id}
    assert await runs.get(pool, submitted.run_id) == before

    finished = await claims.finish(pool, "fresh", [finishes.succeeded(fresh_run)])
    assert finished.states == {fresh_run.id: "completed"}


async def test_same_attempt_from_another_worker_is_rejected(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    await runs.submit(pool, job)
    [run] = await claims.claim(pool, "owner")
    impostor = await claims.finish(pool, "impostor", [finishes.succeeded(run)])
    assert impostor.lost == {run.id}
    beat = await claims.heartbeat(pool, "impostor", [(run.id, run.attempt)])
    assert beat.lost == {run.id}


async def test_a_batch_reports_lost_runs_individually(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    for _ in range(3):
        await runs.submit(pool, job)
    held = await claims.claim(pool, "w", limit=3)
    stale = held[1]
    async with pool.connection() as conn:
        # Another attempt took run 2 meanwhile (as after a reap and re-claim).
        await conn.execute("UPDATE job_runs SET attempt = attempt + 1 WHERE id = %s", (stale.id,))
    result = await claims.finish(pool, "w", [finishes.succeeded(r) for r in held])
    assert result.lost == {stale.id}
    assert result.states == {held[0].id: "completed", held[2].id: "completed"}


async def test_attempt_may_never_decrease(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    await runs.submit(pool, job)
    [run] = await claims.claim(pool, "w")
    with (
        psycopg.connect(store_dsn) as conn,
        pytest.raises(psycopg.errors.CheckViolation, match="may not decrease"),
    ):
        conn.execute("UPDATE job_runs SET attempt = 0 WHERE id = %s", (run.id,))
    info = await runs.get(pool, run.id)
    assert info is not None and info.attempt == 1


async def test_cancel_request_is_seen_on_heartbeat(pool: store_pool.Pool, job: uuid.UUID) -> None:
    await runs.submit(pool, job)
    [run] = await claims.claim(pool, "w")
    assert await runs.cancel(pool, run.id) == runs.CancelResult.REQUESTED
    beat = await claims.heartbeat(pool, "w", [(run.id, run.attempt)])
    assert beat.cancel_requested == {run.id}
    done = await claims.finish(pool, "w", [finishes.cancelled(run)])
    assert done.states == {run.id: "cancelled"}
    assert await runs.cancel(pool, run.id) == runs.CancelResult.ALREADY_FINISHED


async def test_a_cancelled_running_run_ends_with_the_reason_its_cancel_gave(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    await runs.submit(pool, job)
    [run] = await claims.claim(pool, "w")
    reason = "cancelled: the JobRun was deleted"
    assert await runs.cancel(pool, run.id, reason=reason) == runs.CancelResult.REQUESTED
    # The worker knows only that it was cancelled; the run keeps why.
    done = await claims.finish(pool, "w", [finishes.cancelled(run, "cancellation requested")])
    assert done.states == {run.id: "cancelled"}
    info = await runs.get(pool, run.id)
    assert info is not None
    assert (info.state, info.failure_reason, info.last_error) == ("cancelled", "cancelled", reason)


async def test_cancelling_a_pending_run_ends_it(pool: store_pool.Pool, job: uuid.UUID) -> None:
    submitted = await runs.submit(pool, job)
    assert await runs.cancel(pool, submitted.run_id) == runs.CancelResult.CANCELLED
    assert await claims.claim(pool, "w") == []
    info = await runs.get(pool, submitted.run_id)
    assert info is not None and info.state == "cancelled" and info.failure_reason == "cancelled"


async def test_failure_is_retried_with_backoff_then_dead_lettered(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("flaky", max_retries=1, backoff_base_seconds=0.0)
    submitted = await runs.submit(pool, job)
    [first] = await claims.claim(pool, "w")
    result = await claims.finish(pool, "w", [finishes.failed(first, "boom")])
    assert result.states == {first.id: "retry_wait"}
    assert await claims.claim(pool, "w") == []  # not in the dispatch index until promoted
    assert await reaper.promote_due(pool) == 1
    [second] = await claims.claim(pool, "w")
    assert second.attempt == 2 and second.retries_used == 1
    result = await claims.finish(
        pool, "w", [finishes.failed(second, "boom again", FailureClass.CRASH)]
    )
    assert result.states == {second.id: "dead_lettered"}
    info = await runs.get(pool, submitted.run_id)
    assert info is not None
    assert (info.failure_reason, info.last_error) == ("crash", "boom again")
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT attempt, outcome, failure_reason FROM job_run_attempts ORDER BY attempt"
        )
        history = await cursor.fetchall()
        cursor = await conn.execute("SELECT id FROM dead_letters")
        dead = await cursor.fetchall()
    assert history == [(1, "retry_wait", "error"), (2, "dead_lettered", "crash")]
    assert dead == [(submitted.run_id,)]


async def test_backoff_delay_keeps_the_run_out_of_reach(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("slow", backoff_base_seconds=3600, backoff_cap_seconds=3600)
    await runs.submit(pool, job)
    [run] = await claims.claim(pool, "w")

    class Half:
        def random(self) -> float:
            return 0.5

    outcome = finishes.failed(run, "boom", rng=Half())
    assert outcome.retry_delay_seconds == 1800.0
    await claims.finish(pool, "w", [outcome])
    assert await reaper.promote_due(pool) == 0
    assert await claims.claim(pool, "w") == []
    info = await runs.get(pool, run.id)
    assert info is not None and info.state == "retry_wait"


async def test_infrastructure_failures_do_not_spend_retries(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("evicted", max_retries=0)
    await runs.submit(pool, job)
    [run] = await claims.claim(pool, "w")
    result = await claims.finish(
        pool, "w", [finishes.failed(run, "evicted", FailureClass.INFRASTRUCTURE)]
    )
    assert result.states == {run.id: "retry_wait"}
    await reaper.promote_due(pool)
    [again] = await claims.claim(pool, "w")
    assert again.retries_used == 0
    # maxRetries is spent (0): a timeout then ends the run timed_out (test_timeouts.py).
    result = await claims.finish(pool, "w", [finishes.timed_out(again)])
    assert result.states == {run.id: "timed_out"}


async def test_a_mixed_batch_records_each_outcome(pool: store_pool.Pool, job: uuid.UUID) -> None:
    for _ in range(4):
        await runs.submit(pool, job)
    ok, failing, cancelled, timing_out = await claims.claim(pool, "w", limit=4)
    result = await claims.finish(
        pool,
        "w",
        [
            finishes.succeeded(ok),
            finishes.failed(failing, "boom"),
            finishes.cancelled(cancelled),
            finishes.timed_out(timing_out),
        ],
    )
    assert result.states == {
        ok.id: "completed",
        failing.id: "retry_wait",
        cancelled.id: "cancelled",
        timing_out.id: "retry_wait",
    }
    info = await runs.get(pool, timing_out.id)
    assert info is not None
    assert (info.failure_reason, info.last_error) == (
        "timeout",
        "attempt 1 exceeded timeoutSeconds=60",
    )
