"""A run's happy path and its basic failures, end to end on a real database."""

from __future__ import annotations

import uuid

from sundial.attempt import finishes
from sundial.store import claims, reaper, runs
from sundial.store import pool as store_pool


async def test_submitted_run_is_claimed_and_completed(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    submitted = await runs.submit(pool, job, args={"x": 1})
    assert submitted.created and submitted.state == "pending"
    claimed = await claims.claim(pool, "w1", queues=["default"], limit=5)
    assert [c.id for c in claimed] == [submitted.run_id]
    run = claimed[0]
    assert run.attempt == 1 and run.args == {"x": 1} and run.idempotency_key == f"run:{run.id}"
    beat = await claims.heartbeat(pool, "w1", [(run.id, run.attempt)])
    assert run.id in beat.extended and not beat.lost
    done = await claims.finish(pool, "w1", [finishes.succeeded(run)])
    assert done.states == {run.id: "completed"} and not done.lost
    info = await runs.get(pool, run.id)
    assert info is not None and info.state == "completed" and info.finished_at is not None
    assert await claims.claim(pool, "w1", queues=["default"]) == []
    assert await reaper.promote_due(pool) == 0
