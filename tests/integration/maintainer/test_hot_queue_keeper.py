"""The maintainer on a database whose hot queue is on, given its Redis: as leader it takes back
the lease of a claimer that went silent (the attempt recorded as lost, the run due again for
its next attempt) and reconciles; the store's keeper delivers again a run Redis lost, and
never one whose finish is merely in flight."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import psycopg
import pytest
import redis.asyncio as aioredis
from prometheus_client import REGISTRY

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.scheduler import maintainer, trigger
from sundial.store import claims, leases, runs
from sundial.store import pool as store_pool
from sundial.store.hot_queue import member, outbox, reconciler
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


async def test_after_a_restart_the_keeper_gives_back_what_redis_lost_within_seconds(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    outbox.switch(store_dsn, on=True)
    with throwaway_redis() as server:  # its own: this test restarts it
        client = aioredis.Redis.from_url(server.url)
        try:
            run_ids = [(await runs.submit(pool, job)).run_id for _ in range(3)]
            while (await outbox.Relay(pool, client).once()).runs:
                pass
            now = [0.0]
            keeper = reconciler.Keeper(
                pool,
                client,
                clock=lambda: now[0],
                reconcile_seconds=10.0,
                changed_server_seconds=2.0,
            )
            assert await keeper.reconcile() == 0  # all three due: nothing missing
            server.restart()  # no persistence: back empty, another server to its clients
            now[0] = 1.0
            assert await keeper.reconcile() == 0  # the change seen: a pass now, missing once
            now[0] = 2.5
            assert await keeper.reconcile() == 0  # too soon even so
            now[0] = 3.0
            assert await keeper.reconcile() == 3  # confirmed 2 s later, not 10 or 20
            dispatch = HotDispatch(lambda: pool, client)
            claimed = await _claim(dispatch, pool, client, lease=30.0)
            assert sorted(run.id for run in claimed) == run_ids
        finally:
            await client.aclose()


def _leases(client_url: str) -> dict[str, list[bytes]]:
    """Every lease set in Redis, by key."""
    import redis

    with redis.Redis.from_url(client_url) as sync:
        return {key.decode(): sync.zrange(key, 0, -1) for key in sync.keys("*leases*")}


def _record(dsn: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT id, state, attempt, lease_expiries FROM job_runs ORDER BY id"
        ).fetchall()


async def test_a_maintainer_given_redis_leaves_it_alone_once_the_database_is_switched_off(
    pool: store_pool.Pool,
    store_dsn: str,
    client: aioredis.Redis,
    redis_server: ThrowawayRedis,
    job: uuid.UUID,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A chart upgrade switches the database before it rolls the operator: until then the old
    maintainer must neither take back leases in a Redis nobody claims from (it would record an
    attempt lost that PostgreSQL's claim may be running) nor deliver runs there; it says what
    to change, as a failing pass, and agrees again once the database does."""
    outbox.switch(store_dsn, on=True)
    run_id = (await runs.submit(pool, job)).run_id
    await _claim(HotDispatch(lambda: pool, client), pool, client, lease=0.3)
    often = timedelta(milliseconds=50)
    settings = maintainer.MaintainerSettings(hot_queue_mode_interval=often, reap_interval=often)
    keeper = maintainer.Maintainer(pool, holder=HOLDER, hot_queue=client, settings=settings)
    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=60) is not None
    assert not (await keeper.step()).failed

    outbox.switch(store_dsn, on=False)
    recorded, held = _record(store_dsn), _leases(redis_server.url)
    held_id = member(run_id).encode()
    assert [run[0] for run in recorded] == [run_id] and held_id in held["{sundial:default}:leases"]
    await asyncio.sleep(0.5)  # the claimer's lease in Redis ends
    with caplog.at_level(logging.ERROR, logger="sundial.scheduler.maintainer"):
        report = await keeper.step()
    assert "hot_queue_mode" in report.failed, report
    assert {"hot_queue_leases", "hot_queue_reconcile"} <= set(report.ran), report
    assert _record(store_dsn) == recorded  # no attempt recorded lost
    assert _leases(redis_server.url) == held  # nothing taken back or delivered
    problems = [r.__dict__.get("error", "") for r in caplog.records]
    assert any("start the scheduler without --hot-queue-url" in p for p in problems), problems

    outbox.switch(store_dsn, on=True)
    await asyncio.sleep(0.1)
    report = await keeper.step()
    assert "hot_queue_mode" in report.ran and not report.failed, report
    # The silent claimer's lease taken back now (the switches stamped the record with a new
    # epoch, so its attempt is not recorded lost: the record never counted it).
    assert not any(held_id in ids for ids in _leases(redis_server.url).values())


async def test_a_maintainer_without_redis_says_so_once_the_database_is_switched_on(
    pool: store_pool.Pool, store_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = maintainer.MaintainerSettings(hot_queue_mode_interval=timedelta(milliseconds=50))
    keeper = maintainer.Maintainer(pool, holder=HOLDER, settings=settings, component="operator")
    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=60) is not None
    assert not (await keeper.step()).failed

    outbox.switch(store_dsn, on=True)
    await asyncio.sleep(0.1)
    with caplog.at_level(logging.ERROR, logger="sundial.scheduler.maintainer"):
        report = await keeper.step()
    assert report.failed == ("hot_queue_mode",), report
    problems = [r.__dict__.get("error", "") for r in caplog.records]
    assert any("give the operator its Redis with --hot-queue-url" in p for p in problems)
    assert not any(r.exc_info for r in caplog.records)  # a setting to change, not a trace


async def test_a_redis_outage_fails_the_hot_queue_tasks_without_a_trace(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID, caplog: pytest.LogCaptureFixture
) -> None:
    """An unreachable Redis is an outage to retry, as an unreachable PostgreSQL is: counted and
    said in one line per task, not a traceback a second."""
    outbox.switch(store_dsn, on=True)
    with throwaway_redis() as server:
        client = aioredis.Redis.from_url(server.url, socket_connect_timeout=1)
        try:
            keeper = maintainer.Maintainer(pool, holder=HOLDER, hot_queue=client)
            assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=60)
            assert not (await keeper.step()).failed
            server.kill()
            keeper._due.clear()  # every task due now
            with caplog.at_level(logging.WARNING, logger="sundial.scheduler.maintainer"):
                report = await keeper.step()
        finally:
            await client.aclose()
    assert {"hot_queue_leases", "hot_queue_reconcile"} <= set(report.failed), report
    failures = [r for r in caplog.records if r.getMessage().startswith("maintenance task failed")]
    assert {r.__dict__["task"] for r in failures} >= {"hot_queue_leases", "hot_queue_reconcile"}
    assert all("Redis" in r.__dict__["error"] and not r.exc_info for r in failures), failures


async def test_the_backlog_gauge_leaves_out_the_runs_redis_holds(
    pool: store_pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    """A run a claimer holds is pending in the record while it runs: the leader's backlog
    gauge (what an autoscaler of runners reads) counts only the runs that wait."""
    outbox.switch(store_dsn, on=True)
    for _ in range(5):
        await runs.submit(pool, job)
    dispatch = HotDispatch(lambda: pool, client)
    while (await outbox.Relay(pool, client).once()).runs:
        pass
    claimed = await dispatch.claim(
        WORKER,
        queues=["default"],
        handlers=["handlers.job"],
        execution_models=["async"],
        registered_model=True,
        limit=2,
        lease_seconds=30.0,
        namespaces=None,
    )
    assert len(claimed) == 2
    keeper = maintainer.Maintainer(pool, holder=HOLDER, hot_queue=client)
    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=60) is not None
    report = await keeper.step()
    assert "monitor" in report.ran and not report.failed, report
    pending = {"queue": "default", "priority": "1", "state": "pending"}
    assert REGISTRY.get_sample_value("sundial_pending_runs", pending) == 3
    stopped = asyncio.Event()
    stopped.set()
    await keeper.run(stopped)  # a maintainer that stops drops the database's series
    assert REGISTRY.get_sample_value("sundial_pending_runs", pending) is None
