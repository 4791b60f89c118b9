"""The hot queue's reconciler against a real PostgreSQL and a real Redis: a Redis that lost
everything gets every pending run of the record back, each claimed once; a Redis that lost
nothing gets nothing; a run Redis handed out and took back meanwhile is not made due again."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as aioredis

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.store import pool, runs
from sundial.store.hot_queue import HotQueue, outbox, reconciler

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
        assert await queue.held_nowhere([]) == []
        assert await reconciler.reconcile(store, client, page=7) == 300
        assert await reconciler.reconcile(store, client, page=7) == 0, "idempotent"
        epoch = await queue.renew_epoch(store)
        claimed = await queue.claim(epoch, lease_ms=30_000, limit=1000, handlers=HANDLERS)
        assert sorted(c.id for c in claimed) == sorted(submitted)
    finally:
        await client.aclose()


async def test_runs_due_or_leased_are_left_and_a_run_taken_back_is_not_made_due_again(
    store: pool.Pool, server: ThrowawayRedis, job: uuid.UUID
) -> None:
    await _submitted(store, job, 50)
    client = aioredis.Redis.from_url(server.url)
    try:
        await outbox.Relay(store, client).once()
        queue = HotQueue(client, "default")
        epoch = await queue.renew_epoch(store)
        leased = await queue.claim(epoch, lease_ms=30_000, limit=10, handlers=HANDLERS)
        assert await reconciler.reconcile(store, client) == 0
        # One finished in Redis, its finish not yet in PostgreSQL: still pending there.
        assert await queue.release(leased[:1]) == [True]
        assert await reconciler.reconcile(store, client) == 0
        more = await queue.claim(epoch, lease_ms=30_000, limit=100, handlers=HANDLERS)
        assert len(more) == 40 and leased[0].id not in {c.id for c in more}
    finally:
        await client.aclose()
