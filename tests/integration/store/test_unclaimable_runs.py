"""Pending runs no live runner can claim get a reason; served runs never do; the reason goes
away when a runner serves the run again (store.runners)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from sundial.store import claims, runners, runs
from sundial.store import pool as store_pool


async def _reason(pool: store_pool.Pool, run_id: int) -> str | None:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT unclaimable_reason FROM job_runs WHERE id = %s", (run_id,)
        )
        row = await cursor.fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


async def _submit(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], name: str, **job: object
) -> int:
    return (await runs.submit(pool, make_job(name, **job))).run_id


async def test_each_kind_of_unservable_run_gets_its_reason(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    served = await _submit(pool, make_job, "served", execution_model=None)
    served_explicitly = await _submit(pool, make_job, "explicit", execution_model="thread")
    wrong_model = await _submit(pool, make_job, "wrong", execution_model="async")
    nobody = await _submit(pool, make_job, "nobody", execution_model=None)
    other_queue = await _submit(pool, make_job, "queued", execution_model=None, queue="batch")
    pod = await _submit(pool, make_job, "pod", execution_model="pod", pod_template={})
    handlers = {f"handlers.{n}": "thread" for n in ("served", "explicit", "wrong", "queued")}
    await runners.announce(pool, "r1", queues=["default"], handlers=handlers, ttl_seconds=60)

    changed = await runners.mark_unclaimable(pool, grace_seconds=0)

    reasons = {run_id: await _reason(pool, run_id) for run_id in (served, served_explicitly)}
    assert reasons == {served: None, served_explicitly: None}
    assert await _reason(pool, pod) is None  # the pod launcher's, not a runner's
    wrong = await _reason(pool, wrong_model)
    assert wrong is not None and "executionModel async" in wrong and "as thread" in wrong
    for run_id, handler, queue in ((nobody, "nobody", "default"), (other_queue, "queued", "batch")):
        reason = await _reason(pool, run_id)
        assert reason is not None
        assert reason.startswith(
            f"no live runner serves handler handlers.{handler} on queue {queue}"
        )
    assert {c.run_id for c in changed} == {wrong_model, nobody, other_queue}

    # Nothing changed: nothing is written again.
    assert await runners.mark_unclaimable(pool, grace_seconds=0) == []


async def test_a_run_is_blamed_only_after_the_grace(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    run_id = await _submit(pool, make_job, "young", execution_model=None)
    assert await runners.mark_unclaimable(pool, grace_seconds=3600) == []
    assert await _reason(pool, run_id) is None


@pytest.mark.parametrize("how", ["expired", "withdrawn"])
async def test_a_dead_or_stopped_runner_serves_nothing_and_a_live_one_clears_the_reason(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], how: str
) -> None:
    run_id = await _submit(pool, make_job, "job", execution_model=None)
    handlers = {"handlers.job": "async"}
    if how == "expired":
        await runners.announce(pool, "gone", queues=["default"], handlers=handlers, ttl_seconds=0)
    else:
        await runners.announce(pool, "gone", queues=["default"], handlers=handlers, ttl_seconds=60)
        await runners.withdraw(pool, "gone")
    await runners.mark_unclaimable(pool, grace_seconds=0)
    assert (await _reason(pool, run_id) or "").startswith("no live runner serves handler")

    await runners.announce(pool, "back", queues=["default"], handlers=handlers, ttl_seconds=60)
    [cleared] = await runners.mark_unclaimable(pool, grace_seconds=0)
    assert (cleared.run_id, cleared.reason) == (run_id, None)


async def test_the_claim_clears_the_reason(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    run_id = await _submit(pool, make_job, "job", execution_model=None)
    await runners.mark_unclaimable(pool, grace_seconds=0)
    assert await _reason(pool, run_id) is not None
    [claimed] = await claims.claim(pool, "w")
    assert claimed.id == run_id and await _reason(pool, run_id) is None
