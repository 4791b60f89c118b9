"""DAG runs: released in the completing transaction, exactly once; failures flow downstream."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import psycopg
import pytest

from sundial.attempt import finishes
from sundial.store import claims, errors, reaper, runs
from sundial.store import pool as store_pool


async def claim_ids(
    pool: store_pool.Pool, worker: str, limit: int = 10
) -> dict[int, claims.ClaimedRun]:
    return {run.id: run for run in await claims.claim(pool, worker, limit=limit)}


async def test_diamond_child_is_released_exactly_once_when_parents_finish_together(
    store_dsn: str, job: uuid.UUID
) -> None:
    left_pool = await store_pool.open_pool(store_dsn, max_size=2)
    right_pool = await store_pool.open_pool(store_dsn, max_size=2)
    try:
        for _ in range(200):
            top = (await runs.submit(left_pool, job)).run_id
            left = (await runs.submit(left_pool, job, depends_on=[top])).run_id
            right = (await runs.submit(left_pool, job, depends_on=[top])).run_id
            bottom = await runs.submit(left_pool, job, depends_on=[left, right])
            assert bottom.state == "blocked"
            [top_run] = await claims.claim(left_pool, "w")
            await claims.finish(left_pool, "w", [finishes.succeeded(top_run)])
            held = await claim_ids(left_pool, "w")
            assert set(held) == {left, right}
            barrier = asyncio.Barrier(2)

            async def finish(
                pool: store_pool.Pool, run: claims.ClaimedRun, barrier: asyncio.Barrier = barrier
            ) -> claims.FinishResult:
                async with pool.connection() as conn:
                    await conn.execute("SELECT 1")  # a connection is ready before the barrier
                await barrier.wait()
                return await claims.finish(pool, "w", [finishes.succeeded(run)])

            results = await asyncio.gather(
                finish(left_pool, held[left]), finish(right_pool, held[right])
            )
            releases = [r.released.get(bottom.run_id) for r in results]
            assert sorted(releases, key=str) == [None, "pending"], releases
            [child] = await claims.claim(left_pool, "w")
            assert child.id == bottom.run_id
            await claims.finish(left_pool, "w", [finishes.succeeded(child)])
        async with left_pool.connection() as conn:
            cursor = await conn.execute("SELECT state, count(*) FROM job_runs GROUP BY state")
            assert await cursor.fetchall() == [("completed", 800)]
    finally:
        await left_pool.close()
        await right_pool.close()


async def test_failed_upstream_fails_dependents_recursively(
    pool: store_pool.Pool, make_job: object
) -> None:
    job = make_job("fragile", max_retries=0)  # type: ignore[operator]
    parent = (await runs.submit(pool, job)).run_id
    child = (await runs.submit(pool, job, depends_on=[parent])).run_id
    grandchild = (await runs.submit(pool, job, depends_on=[child])).run_id
    [run] = await claims.claim(pool, "w")
    result = await claims.finish(pool, "w", [finishes.failed(run, "boom")])
    assert result.states == {parent: "dead_lettered"}
    assert result.released == {child: "failed", grandchild: "failed"}
    for run_id in (child, grandchild):
        info = await runs.get(pool, run_id)
        assert info is not None
        assert info.failure_reason == "upstream_failed"
        assert info.last_error == f"upstream run {parent} failed (dead_lettered)"
    assert await claims.claim(pool, "w") == []


async def test_cancelled_upstream_cancels_dependents(pool: store_pool.Pool, job: uuid.UUID) -> None:
    parent = (await runs.submit(pool, job, delay_seconds=3600)).run_id
    child = (await runs.submit(pool, job, depends_on=[parent])).run_id
    assert await runs.cancel(pool, parent) == runs.CancelResult.CANCELLED
    info = await runs.get(pool, child)
    assert info is not None
    assert (info.state, info.last_error) == ("cancelled", f"upstream run {parent} was cancelled")


async def test_depending_on_finished_runs(pool: store_pool.Pool, job: uuid.UUID) -> None:
    done = (await runs.submit(pool, job)).run_id
    [run] = await claims.claim(pool, "w")
    await claims.finish(pool, "w", [finishes.succeeded(run)])
    assert (await runs.submit(pool, job, depends_on=[done])).state == "pending"
    cancelled = (await runs.submit(pool, job, delay_seconds=60)).run_id
    await runs.cancel(pool, cancelled)
    late = await runs.submit(pool, job, depends_on=[cancelled])
    assert late.state == "cancelled"


async def test_released_child_with_future_run_at_waits_for_its_time(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    parent = (await runs.submit(pool, job)).run_id
    child = await runs.submit(pool, job, depends_on=[parent], delay_seconds=3600)
    [run] = await claims.claim(pool, "w")
    result = await claims.finish(pool, "w", [finishes.succeeded(run)])
    assert result.released == {child.run_id: "scheduled"}


async def test_a_graph_is_submitted_parents_first_in_one_transaction(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    graph = {
        "report": runs.GraphNode(job, depends_on=["extract", "load"]),
        "load": runs.GraphNode(job, depends_on=["extract"]),
        "extract": runs.GraphNode(job, args={"day": "2026-11-29"}),
    }
    submitted = await runs.submit_graph(pool, graph)
    assert submitted["extract"].state == "pending"
    assert submitted["load"].state == "blocked" and submitted["report"].state == "blocked"
    info = await runs.get(pool, submitted["report"].run_id)
    assert info is not None and info.pending_dependencies == 2


async def test_a_cyclic_or_broken_graph_stores_nothing(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    from test_submissions import snapshot

    before = snapshot(store_dsn)
    with pytest.raises(errors.CyclicDependencyError, match="a -> b -> a"):
        await runs.submit_graph(
            pool,
            {
                "a": runs.GraphNode(job, depends_on=["b"]),
                "b": runs.GraphNode(job, depends_on=["a"]),
            },
        )
    with pytest.raises(errors.UnknownJobError):  # fails on the second node, after the first
        await runs.submit_graph(
            pool,
            {
                "first": runs.GraphNode(job, idempotency_key="graph-first"),
                "second": runs.GraphNode("default/missing", depends_on=["first"]),
            },
        )
    assert snapshot(store_dsn) == before


async def test_cancelling_a_blocked_run_ends_it_and_its_dependents(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    parent = (await runs.submit(pool, job)).run_id
    blocked = (await runs.submit(pool, job, depends_on=[parent])).run_id
    below = (await runs.submit(pool, job, depends_on=[blocked])).run_id
    assert await runs.cancel(pool, blocked) == runs.CancelResult.CANCELLED
    for run_id in (blocked, below):
        info = await runs.get(pool, run_id)
        assert info is not None and info.state == "cancelled"
    [run] = await claims.claim(pool, "w")
    assert run.id == parent


async def test_a_released_child_ages_from_its_release_not_its_submission(
    pool: store_pool.Pool, make_job: object
) -> None:
    from datetime import UTC, datetime, timedelta

    low = make_job("low", priority=0)  # type: ignore[operator]
    high = make_job("high", priority=9)  # type: ignore[operator]
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    parent = (await runs.submit(pool, low, priority=9)).run_id
    # Submitted (due) an hour ago, blocked all that time on its parent.
    child = (await runs.submit(pool, low, run_at=long_ago, depends_on=[parent])).run_id
    [run] = await claims.claim(pool, "w")
    await claims.finish(pool, "w", [finishes.succeeded(run)])
    fresh = (await runs.submit(pool, high)).run_id
    order = [r.id for r in await claims.claim(pool, "w", limit=5)]
    assert order == [fresh, child]


async def test_a_finish_that_releases_a_dependent_wakes_the_runners(
    store_dsn: str, job: uuid.UUID
) -> None:
    """Runners listen on the wake-up channel: a finish that made a dependent pending notifies
    it (the dependent starts at once, not at the next poll); one that released none, or only
    into a wait, does not."""
    pool = await store_pool.open_pool(store_dsn, max_size=2)
    listener = await psycopg.AsyncConnection.connect(store_dsn, autocommit=True)
    try:
        await listener.execute(f"LISTEN {reaper.WAKEUP_CHANNEL}")

        async def heard() -> list[str]:
            payloads = []
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    async for notify in listener.notifies():
                        payloads.append(notify.payload)
            return payloads

        lone = (await runs.submit(pool, job)).run_id
        top = (await runs.submit(pool, job)).run_id
        later = (await runs.submit(pool, job, depends_on=[top], delay_seconds=3600)).run_id
        await heard()  # the submissions' own notifications
        held = await claim_ids(pool, "w")
        done = await claims.finish(pool, "w", [finishes.succeeded(held[lone])])
        assert done.released == {} and await heard() == []
        done = await claims.finish(pool, "w", [finishes.succeeded(held[top])])
        assert done.released == {later: "scheduled"} and await heard() == []

        parent = (await runs.submit(pool, job)).run_id
        child = (await runs.submit(pool, job, depends_on=[parent])).run_id
        await heard()
        (claimed,) = (await claim_ids(pool, "w")).values()
        done = await claims.finish(pool, "w", [finishes.succeeded(claimed)])
        assert done.released == {child: "pending"}
        assert await heard() == [""]  # every queue
    finally:
        await listener.close()
        await pool.close()
