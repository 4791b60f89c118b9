"""The maintainer on a database whose hot queue is on, given its Redis: as leader it takes back
the lease of a claimer that went silent (the attempt recorded as lost, the run due again for
its next attempt) and reconciles; the store's keeper delivers again a run Redis lost, and
never one whose finish is merely in flight."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
import redis.asyncio as aioredis

from sundial.localdev.redis_server import ThrowawayRedis
from sundial.scheduler import maintainer, trigger
from sundial.store import claims, leases, runs
from sundial.store import pool as store_pool
from sundial.store.hot_queue import outbox, reconciler
from sundial.store.hot_queue.dispatch import HotDispatch
from support.maintainer import HOLDER

WORKER = "runner-1"


@pytest.fixture
async def client(redis_server: ThrowawayRedis) -> AsyncIterator[aioredis.Redis]:
    connection = aioredis.Redis.from_url(redis_server.url)
    await connection.flushall()
    yield connection
    await connection.aclose()


async def _claim(
    dispatch: HotDispatch, pool: store_pool.Pool, client: aioredis.Redis, lease: float
):
    while (await outbox.Relay(pool, client).once()).runs:
        pass
    return await dispatch.claim(
        WORKER,
        queues=["default"],
        handlers=["handlers.job"],
        execution_models=["async"],
        registered_model=True,
        limit=10,
        lease_seconds=lease,
        namespaces=None,
    )


def _row(dsn: str, run_id: int) -> tuple[str, int, int]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT state, attempt, lease_expiries FROM job_runs WHERE id = %s", (run_id,)
        ).fetchone()
    assert row is not None
    return row[0], row[1], row[2]


async def test_the_leader_takes_back_a_silent_claimer_s_lease(
    pool: store_pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    outbox.switch(store_dsn, on=True)
    run_id = (await runs.submit(pool, job)).run_id
    silent = HotDispatch(lambda: pool, client)
    (held,) = await _claim(silent, pool, client, lease=0.3)
    keeper = maintainer.Maintainer(pool, holder=HOLDER, hot_queue=client)
    assert not (await keeper.step()).leading  # no lease, nothing taken back
    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=60) is not None

    await asyncio.sleep(0.5)  # the silent claimer's lease ends
    report = await keeper.step()
    assert {"hot_queue_leases", "hot_queue_reconcile"} <= set(report.ran), report
    assert not report.failed, report
    assert _row(store_dsn, run_id) == ("pending", 1, 1)  # attempt 1 recorded as lost

    rescuer = HotDispatch(lambda: pool, client)
    (again,) = await _claim(rescuer, pool, client, lease=30.0)
    assert (again.id, again.attempt) == (run_id, 2)
    late = await silent.finish(WORKER, [claims.Finish(held.id, held.attempt)])
    assert late.lost == {run_id}
    done = await rescuer.finish(WORKER, [claims.Finish(again.id, again.attempt)])
    assert done.states == {run_id: "completed"}


async def test_the_keeper_gives_back_what_redis_lost_and_spaces_its_passes(
    pool: store_pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    outbox.switch(store_dsn, on=True)
    run_ids = [(await runs.submit(pool, job)).run_id for _ in range(3)]
    while (await outbox.Relay(pool, client).once()).runs:
        pass
    now = [0.0]
    keeper = reconciler.Keeper(pool, client, clock=lambda: now[0], reconcile_seconds=10.0)
    await client.flushall()  # a restart without persistence
    assert await keeper.reconcile() == 0  # first pass: seen missing once
    now[0] = 5.0
    assert await keeper.reconcile() == 0  # too soon: no pass at all
    now[0] = 10.0
    assert await keeper.reconcile() == 3  # second pass: missing twice, delivered again
    dispatch = HotDispatch(lambda: pool, client)
    claimed = await _claim(dispatch, pool, client, lease=30.0)
    assert sorted(run.id for run in claimed) == run_ids
