"""Jobs of a namespace that name one concurrency key share its limit: at most that many of
their runs are pending or running at once, the oldest waiting run goes next, every way a run
becomes due goes through the same gate, and other namespaces' keys are their own."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import timedelta

from sundial.attempt import finishes
from sundial.scheduler import trigger
from sundial.scheduling import clock, waiting
from sundial.store import claims, history, reaper, runs
from sundial.store import pool as store_pool
from support.trigger import START, UNPACED, add_schedule


async def _states(pool: store_pool.Pool, ids: list[int]) -> list[str]:
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT id, state FROM job_runs WHERE id = ANY(%s)", (ids,))
        found = dict(await cursor.fetchall())
    return [found[i] for i in ids]


def _keyed(make_job: Callable[..., uuid.UUID], name: str, namespace: str, limit: int) -> uuid.UUID:
    return make_job(name, namespace=namespace, concurrency_key="warehouse", concurrency_limit=limit)


async def test_jobs_naming_one_key_share_its_limit_oldest_first(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    loads = _keyed(make_job, "loads", "team-a", 2)
    exports = _keyed(make_job, "exports", "team-a", 2)
    free = make_job("free", namespace="team-a")
    ids = [(await runs.submit(pool, job, args={"n": n})).run_id
           for n, job in enumerate([loads, exports, loads, exports])]  # fmt: skip
    unkeyed = (await runs.submit(pool, free)).run_id

    # A keyed run waits in 'scheduled' even when due; an unkeyed one is pending at once.
    assert await _states(pool, [*ids, unkeyed]) == ["scheduled"] * 4 + ["pending"]
    await reaper.promote_due(pool)
    assert await _states(pool, ids) == ["pending", "pending", "scheduled", "scheduled"]
    await reaper.promote_due(pool)  # no room: nothing moves
    assert await _states(pool, ids) == ["pending", "pending", "scheduled", "scheduled"]

    # The held run says why it waits.
    view = (await history.runs(pool, [ids[2]]))[ids[2]]
    found = view.why_it_waits()
    assert found is not None and found.reason is waiting.WaitReason.CONCURRENCY_LIMIT
    assert "'warehouse'" in found.message

    # A run that ends makes room for the oldest waiting one, whichever job it is of.
    claimed = {run.id: run for run in await claims.claim(pool, "w", limit=10)}
    assert set(claimed) == {ids[0], ids[1], unkeyed}
    await claims.finish(pool, "w", [finishes.succeeded(claimed[ids[0]])])
    await reaper.promote_due(pool)
    assert await _states(pool, ids) == ["completed", "running", "pending", "scheduled"]

    # A failed attempt's retry waits for the key too, behind the older waiting run.
    await claims.finish(pool, "w", [finishes.failed(claimed[ids[1]], "boom")])
    assert await _states(pool, [ids[1]]) == ["retry_wait"]
    await reaper.promote_due(pool)
    assert await _states(pool, ids) == ["completed", "retry_wait", "pending", "pending"]


async def test_each_namespace_has_its_own_keys(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    team_a = _keyed(make_job, "a", "team-a", 1)
    team_b = _keyed(make_job, "b", "team-b", 1)
    a = [(await runs.submit(pool, team_a, args={"n": n})).run_id for n in range(2)]
    b = [(await runs.submit(pool, team_b, args={"n": n})).run_id for n in range(2)]
    await reaper.promote_due(pool)
    assert await _states(pool, a) == ["pending", "scheduled"]
    assert await _states(pool, b) == ["pending", "scheduled"]


async def test_batches_and_delayed_runs_go_through_the_same_gate(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = _keyed(make_job, "batch", "team-a", 3)
    made = await runs.submit_many(pool, job, [runs.BatchItem(args={"n": n}) for n in range(5)])
    later = (await runs.submit(pool, job, args={"later": True}, delay_seconds=3600)).run_id
    await reaper.promote_due(pool)
    states = await _states(pool, [m.run_id for m in made])
    assert states.count("pending") == 3 and states.count("scheduled") == 2
    assert await _states(pool, [later]) == ["scheduled"]


async def test_promoters_at_once_never_pass_the_limit(
    pool: store_pool.Pool, store_dsn: str, make_job: Callable[..., uuid.UUID]
) -> None:
    job = _keyed(make_job, "many", "team-a", 5)
    made = await runs.submit_many(pool, job, [runs.BatchItem(args={"n": n}) for n in range(50)])
    wide = await store_pool.open_pool(store_dsn, min_size=6, max_size=6)
    try:
        await asyncio.gather(*(reaper.promote_due(wide) for _ in range(6)))
    finally:
        await wide.close()
    states = await _states(pool, [m.run_id for m in made])
    assert states.count("pending") == 5


async def test_fires_of_schedules_sharing_a_key_take_turns(pool: store_pool.Pool) -> None:
    key = {"name": "warehouse", "limit": 1}
    first = await add_schedule(pool, START, "* * * * *", concurrency_key=key)
    second = await add_schedule(pool, START, "* * * * *", concurrency_key=key)
    manual = clock.ManualClock(START + timedelta(minutes=1))
    report = await trigger.TriggerLoop(pool, clock=manual, settings=UNPACED).tick()
    assert report.created == 2 and {run.state for run in report.runs} == {"scheduled"}
    await reaper.promote_due(pool)
    fired = {run.schedule_id: run.run_id for run in report.runs}
    states = await _states(pool, [fired[first], fired[second]])
    assert sorted(states) == ["pending", "scheduled"]
