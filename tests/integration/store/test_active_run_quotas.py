"""A namespace's quota of active runs holds however its runs are made, frees its room once
runs end and the maintenance pass counts them, and leaves the other namespaces alone."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest

from sundial.scheduler import trigger
from sundial.scheduling import clock
from sundial.store import errors, quotas, runs, schedules
from sundial.store import pool as store_pool
from support.trigger import START, UNPACED, add_schedule


async def _live(pool: store_pool.Pool, namespace: str) -> int:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM job_runs WHERE namespace = %s AND finished_at IS NULL",
            (namespace,),
        )
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def test_a_submission_past_the_quota_is_refused_and_stores_nothing(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    team_a = make_job("a", namespace="team-a")
    team_b = make_job("b", namespace="team-b")
    await quotas.configure(pool, per_namespace={"team-a": 3})
    for n in range(3):
        await runs.submit(pool, team_a, args={"n": n})

    with pytest.raises(errors.QuotaExceededError) as refused:
        await runs.submit(pool, team_a, args={"n": 3})
    assert (refused.value.namespace, refused.value.quota, refused.value.active) == ("team-a", 3, 3)
    assert "namespace team-a may hold 3 active runs and holds 3" in str(refused.value)
    with pytest.raises(errors.QuotaExceededError):
        await runs.submit_many(pool, team_a, [runs.BatchItem(args={"n": n}) for n in range(2)])
    assert await _live(pool, "team-a") == 3

    # A namespace without a quota is not held back by its neighbour's.
    made = await runs.submit_many(pool, team_b, [runs.BatchItem(args={"n": n}) for n in range(5)])
    assert len(made) == 5


async def test_a_batch_that_would_pass_the_quota_is_refused_whole(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("a", namespace="team-a")
    await quotas.configure(pool, per_namespace={"team-a": 4})
    with pytest.raises(errors.QuotaExceededError) as refused:
        await runs.submit_many(pool, job, [runs.BatchItem(args={"n": n}) for n in range(5)])
    assert refused.value.added == 5
    assert await _live(pool, "team-a") == 0
    assert len(await runs.submit_many(pool, job, [runs.BatchItem() for _ in range(4)])) == 4


async def _count_as_if_just_counted(pool: store_pool.Pool) -> None:
    """Make every quota look counted a moment ago, as right after a maintenance pass."""
    async with pool.connection() as conn:
        await conn.execute("UPDATE namespace_quotas SET counted_at = now() + interval '1 hour'")


async def test_runs_that_ended_free_their_room_without_a_maintainer(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("a", namespace="team-a")
    await quotas.configure(pool, per_namespace={"team-a": 2})
    first = await runs.submit(pool, job, args={"n": 1})
    await runs.submit(pool, job, args={"n": 2})
    await runs.cancel(pool, first.run_id)
    await asyncio.sleep(1.1)  # past the second within which a count is not repeated

    # Ending a run does not count it down, but a full quota counts again before it refuses:
    # no maintenance pass is needed for the room to come back.
    await runs.submit(pool, job, args={"n": 3})
    [quota] = await quotas.listed(pool)
    assert (quota.active_runs, quota.max_active_runs) == (2, 2)
    with pytest.raises(errors.QuotaExceededError) as refused:
        await runs.submit(pool, job, args={"n": 4})
    assert (refused.value.quota, refused.value.active) == (2, 2)
    assert await _live(pool, "team-a") == 2


async def test_a_full_quota_counts_again_at_most_once_a_second(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("a", namespace="team-a")
    await quotas.configure(pool, per_namespace={"team-a": 2})
    first = await runs.submit(pool, job, args={"n": 1})
    await runs.submit(pool, job, args={"n": 2})
    await runs.cancel(pool, first.run_id)

    # Counted within the last second, the count stands: refused submissions cannot make
    # every attempt a scan of the namespace's runs. The maintenance pass still counts.
    await _count_as_if_just_counted(pool)
    with pytest.raises(errors.QuotaExceededError):
        await runs.submit(pool, job, args={"n": 3})
    assert await quotas.count_active(pool) == 1
    [quota] = await quotas.listed(pool)
    assert (quota.namespace, quota.active_runs, quota.max_active_runs) == ("team-a", 1, 2)
    await runs.submit(pool, job, args={"n": 3})


async def test_the_default_quota_counts_what_a_namespace_held_before_it(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("x", namespace="team-x")
    await runs.submit_many(pool, job, [runs.BatchItem() for _ in range(2)])
    await quotas.configure(pool, per_namespace={"team-y": 10}, default=2)

    with pytest.raises(errors.QuotaExceededError) as refused:
        await runs.submit(pool, job, args={"late": True})
    assert (refused.value.quota, refused.value.active) == (2, 2)

    # A new default reaches the rows made from the old one; a named quota stays its own.
    await quotas.configure(pool, per_namespace={"team-y": 10}, default=3)
    await runs.submit(pool, job, args={"late": True})
    listed = {q.namespace: q for q in await quotas.listed(pool)}
    assert (listed["team-x"].explicit, listed["team-x"].active_runs) == (False, 3)
    await quotas.configure(pool, per_namespace={"team-y": 10}, default=4)
    listed = {q.namespace: q for q in await quotas.listed(pool)}
    assert (listed["team-x"].max_active_runs, listed["team-y"].max_active_runs) == (4, 10)
    assert listed[quotas.DEFAULT].max_active_runs == 4

    # Configured away, a quota is gone: nothing refuses any more.
    await quotas.configure(pool, per_namespace={})
    assert await quotas.listed(pool) == []
    await runs.submit_many(pool, job, [runs.BatchItem() for _ in range(5)])


async def test_concurrent_submissions_never_pass_the_quota(
    pool: store_pool.Pool, store_dsn: str, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("a", namespace="team-a")
    await quotas.configure(pool, per_namespace={"team-a": 10})
    wide = await store_pool.open_pool(store_dsn, min_size=8, max_size=8)

    async def one(n: int) -> bool:
        try:
            await runs.submit(wide, job, args={"n": n})
        except errors.QuotaExceededError:
            return False
        return True

    try:
        accepted = await asyncio.gather(*(one(n) for n in range(40)))
    finally:
        await wide.close()
    assert sum(accepted) == 10
    assert await _live(pool, "team-a") == 10


async def test_submissions_racing_ends_and_recounts_never_pass_the_quota(
    pool: store_pool.Pool, store_dsn: str, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("a", namespace="team-a")
    await quotas.configure(pool, per_namespace={"team-a": 10})
    held = [await runs.submit(pool, job, args={"held": n}) for n in range(10)]
    wide = await store_pool.open_pool(store_dsn, min_size=8, max_size=8)

    async def one(n: int) -> bool:
        try:
            await runs.submit(wide, job, args={"n": n})
        except errors.QuotaExceededError:
            return False
        return True

    async def end_some() -> None:
        # Runs end while submissions race, and every refusal may count again (the last
        # count is made to look old before each round).
        for run in held[:5]:
            async with pool.connection() as conn:
                await conn.execute(
                    "UPDATE namespace_quotas SET counted_at = now() - interval '1 hour'"
                )
            await runs.cancel(pool, run.run_id)
            await asyncio.sleep(0.01)

    try:
        for round_ in range(5):
            accepted = await asyncio.gather(
                end_some() if round_ == 0 else asyncio.sleep(0),
                *(one(100 * round_ + n) for n in range(30)),
            )
            assert await _live(pool, "team-a") <= 10
            async with pool.connection() as conn:
                await conn.execute(
                    "UPDATE namespace_quotas SET counted_at = now() - interval '1 hour'"
                )
    finally:
        await wide.close()
    assert sum(bool(a) for a in accepted[1:]) == 0  # the last round found the quota full
    assert await _live(pool, "team-a") == 10
    [quota] = await quotas.listed(pool)
    assert quota.active_runs >= 10


async def test_fires_past_the_quota_are_dropped_counted_and_reported(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    manual = clock.ManualClock(START)
    first = await add_schedule(pool, START, "* * * * *", concurrency_policy="Allow")
    second = await add_schedule(pool, START, "* * * * *", concurrency_policy="Allow")
    await quotas.configure(pool, per_namespace={"default": 1})
    loop = trigger.TriggerLoop(pool, clock=manual, settings=UNPACED)

    manual.set(START + timedelta(minutes=1))
    report = await loop.tick()
    assert (report.created, report.over_quota) == (1, 1)
    [dropped] = [o for o in report.outcomes if "QuotaExceeded" in o.events]
    assert dropped.quota_message is not None
    assert "namespace default holds 1 active runs, its quota is 1" in dropped.quota_message
    infos = [await schedules.get(pool, uid) for uid in (first, second)]
    assert sorted((i.fires_total, i.fires_skipped) for i in infos if i) == [(0, 1), (1, 0)]
    # The dropped schedule moved on: it fires at its next time once there is room.
    assert all(i and i.next_fire_time == START + timedelta(minutes=2) for i in infos)


async def test_fires_find_the_room_that_ended_runs_left_without_a_maintainer(
    pool: store_pool.Pool,
) -> None:
    manual = clock.ManualClock(START)
    await add_schedule(pool, START, "* * * * *", concurrency_policy="Allow")
    await quotas.configure(pool, per_namespace={"default": 1})
    loop = trigger.TriggerLoop(pool, clock=manual, settings=UNPACED)
    manual.set(START + timedelta(minutes=1))
    first = await loop.tick()
    assert (first.created, first.over_quota) == (1, 0)

    # While the first fire's run is active, the next is dropped; once it ended, the trigger
    # counts the namespace again and fires.
    manual.set(START + timedelta(minutes=2))
    assert (await loop.tick()).over_quota == 1
    await runs.cancel(pool, first.runs[0].run_id)
    await asyncio.sleep(1.1)
    manual.set(START + timedelta(minutes=3))
    third = await loop.tick()
    assert (third.created, third.over_quota) == (1, 0)
