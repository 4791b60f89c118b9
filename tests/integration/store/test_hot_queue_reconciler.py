"""The hot queue's reconciler against a real PostgreSQL and a real Redis: a Redis that lost
everything gets every pending run of the record back, each claimed once; a Redis that lost
nothing gets nothing; a finisher that died between Redis and PostgreSQL leaves a run that is
delivered again under a raised token, which refuses that finisher's late write; a silent
claimer's lease is taken back and its attempt recorded as a lost lease."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
import pytest
import redis.asyncio as aioredis

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.store import claims, pool, queries, runs
from sundial.store.hot_queue import Claim, HotQueue, finishes, outbox, reconciler

HANDLERS = [("handlers.job", ""), ("handlers.job", "async")]


@pytest.fixture
def server() -> Iterator[ThrowawayRedis]:
    with throwaway_redis() as started:
        yield started


@pytest.fixture
async def store(store_dsn: str) -> AsyncIterator[pool.Pool]:
    opened = await pool.open_pool(store_dsn, max_size=4)
    outbox.switch(store_dsn, on=True)
    yield opened
    await opened.close()


async def _submitted(store: pool.Pool, job: uuid.UUID, count: int) -> list[int]:
    made = await runs.submit_many(store, job, [runs.BatchItem() for _ in range(count)])
    return [m.run_id for m in made]


async def _claim(store: pool.Pool, queue: HotQueue, limit: int, lease_ms: int = 30_000):
    epoch = await queue.epoch() or await queue.renew_epoch(store)
    return await queue.claim(epoch, lease_ms=lease_ms, limit=limit, handlers=HANDLERS)


def _row(dsn: str, run_id: int) -> dict[str, Any]:
    with psycopg.connect(dsn) as conn:
        cursor = conn.execute(
            "SELECT state, attempt, hot_epoch, lost_leases_used, last_error FROM job_runs"
            " WHERE id = %s",
            (run_id,),
        )
        names = [c.name for c in cursor.description or ()]
        found = cursor.fetchone()
        assert found is not None
        return dict(zip(names, found, strict=True))


async def test_a_redis_that_lost_everything_gets_every_pending_run_back(
    store: pool.Pool, server: ThrowawayRedis, job: uuid.UUID
) -> None:
    submitted = await _submitted(store, job, 300)
    client = aioredis.Redis.from_url(server.url)
    assert (await outbox.Relay(store, client).once()).delivered == 300
    await client.aclose()

    server.kill()  # no persistence: a restart comes back empty
    server.restart()
    client = aioredis.Redis.from_url(server.url)
    try:
        queue = HotQueue(client, "default")
        reconciling = reconciler.Reconciler(store, client)
        assert await reconciling.once(page=7) == 0, "the first pass only notes the losses"
        assert await reconciling.once(page=7) == 300
        assert await reconciling.once(page=7) == 0, "nothing lost any more"
        claimed = await _claim(store, queue, 1000)
        assert sorted(c.id for c in claimed) == sorted(submitted)
        assert {c.token.epoch for c in claimed} == {await queue.epoch()}
    finally:
        await client.aclose()


async def test_runs_due_or_leased_are_left_alone(
    store: pool.Pool, server: ThrowawayRedis, job: uuid.UUID
) -> None:
    await _submitted(store, job, 50)
    client = aioredis.Redis.from_url(server.url)
    try:
        await outbox.Relay(store, client).once()
        await _claim(store, HotQueue(client, "default"), 10)
        reconciling = reconciler.Reconciler(store, client)
        assert [await reconciling.once() for _ in range(3)] == [0, 0, 0]
    finally:
        await client.aclose()


async def test_a_finisher_that_died_between_redis_and_postgresql_is_refused_later(
    store: pool.Pool, store_dsn: str, server: ThrowawayRedis, job: uuid.UUID
) -> None:
    [run_id] = await _submitted(store, job, 1)
    client = aioredis.Redis.from_url(server.url)
    try:
        queue = HotQueue(client, "default")
        await outbox.Relay(store, client).once()
        [dead] = await _claim(store, queue, 1)
        assert await queue.release([dead]) == [True]  # ... and the finisher dies here
        reconciling = reconciler.Reconciler(store, client)
        assert await reconciling.once() == 0
        assert await reconciling.once() == 1
        row = _row(store_dsn, run_id)
        assert (row["state"], row["attempt"], row["hot_epoch"]) == ("pending", 1, dead.token.epoch)

        # The dead finisher's write arrives after all: refused by the raised token.
        late = await _write_to_postgresql(store, dead)
        assert late == []
        [again] = await _claim(store, queue, 1)
        assert again.id == run_id and again.token.attempt == 2
        result = await finishes.finish(
            store, queue, "w", [finishes.HotFinish(claims.Finish(run_id, 2), again)]
        )
        assert result.states == {run_id: "completed"}
    finally:
        await client.aclose()


async def _write_to_postgresql(store: pool.Pool, claim: Claim) -> list[Any]:
    """The PostgreSQL half of a finish alone, as a finisher that released in Redis and was
    delayed would write it."""
    params = claims.finish_parameters("w", [claims.Finish(claim.id, claim.token.attempt)])
    params.update(epochs=[claim.token.epoch], started=[None])
    async with store.connection() as conn:
        cursor = await conn.execute(queries.get("finish_hot"), params)
        return list(await cursor.fetchall())


async def test_a_silent_claimers_lease_is_taken_back_and_counted_as_a_lost_lease(
    store: pool.Pool, store_dsn: str, server: ThrowawayRedis, job: uuid.UUID
) -> None:
    [run_id] = await _submitted(store, job, 1)
    client = aioredis.Redis.from_url(server.url)
    try:
        queue = HotQueue(client, "default")
        relay = outbox.Relay(store, client)
        await relay.once()
        [silent] = await _claim(store, queue, 1, lease_ms=100)
        await asyncio.sleep(0.3)
        assert await reconciler.expire_leases(store, queue) == 1
        row = _row(store_dsn, run_id)
        assert (row["state"], row["attempt"], row["lost_leases_used"]) == ("pending", 1, 1)
        assert reconciler.LOST_LEASE_OWNER in row["last_error"]
        # Requeued: the outbox has it, and the next claim is the next attempt.
        assert (await relay.once()).delivered == 1
        [retry] = await _claim(store, queue, 1)
        assert retry.token.attempt == 2
        stale = await finishes.finish(
            store, queue, "w", [finishes.HotFinish(claims.Finish(run_id, 1), silent)]
        )
        assert stale.lost == {run_id}
    finally:
        await client.aclose()
