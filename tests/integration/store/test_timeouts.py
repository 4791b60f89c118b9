"""Timeouts: retried with backoff while maxRetries lasts, then the run ends timed_out.

docs/failure-modes.md ("Pod exceeds its deadline -> TIMED_OUT"); ADR 0001, decision 7. Every
other retried failure class still ends dead_lettered (test_fencing.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sundial.attempt import finishes
from sundial.scheduling.failures import FailureClass
from sundial.store import claims, monitoring, reaper, runs
from sundial.store import pool as store_pool


async def claim_again(pool: store_pool.Pool) -> claims.ClaimedRun:
    """Promote the run out of retry_wait (backoff is zero) and claim it."""
    assert await reaper.promote_due(pool) == 1
    [run] = await claims.claim(pool, "w")
    return run


async def test_a_run_that_times_out_past_its_retries_ends_timed_out(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("slow", max_retries=1, timeout_seconds=30)
    run_id = (await runs.submit(pool, job)).run_id
    [first] = await claims.claim(pool, "w")
    result = await claims.finish(pool, "w", [finishes.timed_out(first)])
    assert result.states == {run_id: "retry_wait"}  # a timeout is retried like any fault
    second = await claim_again(pool)
    assert (second.attempt, second.retries_used) == (2, 1)
    result = await claims.finish(pool, "w", [finishes.timed_out(second)])
    assert result.states == {run_id: "timed_out"}

    info = await runs.get(pool, run_id)
    assert info is not None
    assert (info.state, info.attempt, info.failure_reason) == ("timed_out", 2, "timeout")
    assert info.failure_detail == "Timeout"  # the JobRun's reason and `sundial runs` show it
    assert info.last_error == "attempt 2 exceeded timeoutSeconds=30"
    assert info.finished_at is not None
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT attempt, outcome, failure_reason FROM job_run_attempts ORDER BY attempt"
        )
        history = await cursor.fetchall()
        cursor = await conn.execute("SELECT id FROM dead_letters")
        dead = await cursor.fetchall()
    assert history == [(1, "retry_wait", "timeout"), (2, "timed_out", "timeout")]
    assert dead == []  # not a poison run: it ran out of time, not of luck
    assert await monitoring.finished_runs_by_job(pool) == {(job, "timed_out"): 1}


async def test_a_timeout_failed_by_class_alone_still_has_the_timeout_detail(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    """The pod launcher fails a Pod past its deadline by failure class (the failure policy's
    verdict), not through ``Outcome.timed_out``: the stored detail must say Timeout all the
    same."""
    run_id = (await runs.submit(pool, make_job("slow", max_retries=0))).run_id
    [run] = await claims.claim(pool, "w")
    outcome = finishes.failed(run, "Pod exceeded its deadline", FailureClass.TIMEOUT)
    result = await claims.finish(pool, "w", [outcome])
    assert result.states == {run_id: "timed_out"}
    info = await runs.get(pool, run_id)
    assert info is not None
    assert (info.failure_reason, info.failure_detail) == ("timeout", "Timeout")


async def test_a_run_that_times_out_once_then_succeeds_completes(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("slow", max_retries=1)
    run_id = (await runs.submit(pool, job)).run_id
    [first] = await claims.claim(pool, "w")
    await claims.finish(pool, "w", [finishes.timed_out(first)])
    second = await claim_again(pool)
    result = await claims.finish(pool, "w", [finishes.succeeded(second)])
    assert result.states == {run_id: "completed"}
    info = await runs.get(pool, run_id)
    assert info is not None
    assert (info.state, info.attempt, info.retries_used) == ("completed", 2, 1)


async def test_a_timeout_without_retries_ends_timed_out_at_once(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("slow", max_retries=0)
    run_id = (await runs.submit(pool, job)).run_id
    [run] = await claims.claim(pool, "w")
    result = await claims.finish(pool, "w", [finishes.timed_out(run)])
    assert result.states == {run_id: "timed_out"}


async def test_other_failures_past_their_retries_are_still_dead_lettered(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    # oom spends its own budget (migration 0060): spent here too, so every class is at its end.
    job = make_job("poison", max_retries=0, oom_max_retries=0)
    ids = [(await runs.submit(pool, job)).run_id for _ in range(4)]
    batch = await claims.claim(pool, "w", limit=4)
    classes = [FailureClass.ERROR, FailureClass.CRASH, FailureClass.OOM, FailureClass.TIMEOUT]
    outcomes = [
        finishes.failed(run, "boom", failure) for run, failure in zip(batch, classes, strict=True)
    ]
    result = await claims.finish(pool, "w", outcomes)
    assert result.states == {
        ids[0]: "dead_lettered",
        ids[1]: "dead_lettered",
        ids[2]: "dead_lettered",
        ids[3]: "timed_out",
    }


async def test_dependents_of_a_timed_out_run_fail_as_upstream_failed(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("slow", max_retries=0)
    parent = (await runs.submit(pool, job)).run_id
    child = (await runs.submit(pool, job, depends_on=[parent])).run_id
    grandchild = (await runs.submit(pool, job, depends_on=[child])).run_id
    [run] = await claims.claim(pool, "w")
    result = await claims.finish(pool, "w", [finishes.timed_out(run)])
    assert result.states == {parent: "timed_out"}
    assert result.released == {child: "failed", grandchild: "failed"}
    for run_id in (child, grandchild):
        info = await runs.get(pool, run_id)
        assert info is not None
        assert (info.state, info.failure_reason) == ("failed", "upstream_failed")
        assert info.last_error == f"upstream run {parent} failed (timed_out)"
    # A dependent submitted after the upstream timed out fails at once, for the same reason.
    late = await runs.submit(pool, job, depends_on=[parent])
    assert late.state == "failed"


async def test_a_timed_out_run_is_replayed_with_a_fresh_budget(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("slow", max_retries=0)
    run_id = (await runs.submit(pool, job)).run_id
    [run] = await claims.claim(pool, "w")
    await claims.finish(pool, "w", [finishes.timed_out(run)])
    assert await runs.replay(pool, run_id) == 1
    [again] = await claims.claim(pool, "w")
    assert (again.id, again.attempt, again.retries_used) == (run_id, 2, 0)
    result = await claims.finish(pool, "w", [finishes.succeeded(again)])
    assert result.states == {run_id: "completed"}
