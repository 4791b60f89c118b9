"""The hot queue's outbox and relay against a real PostgreSQL and a real Redis: off, nothing is
written; on, every path by which a run becomes pending leaves one entry in the same
transaction, the relay moves the pending runs to Redis at least once and never makes a run
due again after Redis handed out a later attempt, a relay that fails leaves its entries, and
relays side by side deliver every run."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
import redis.asyncio as aioredis
import redis.exceptions

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.scheduling.failures import FailureClass
from sundial.store import claims, pool, queries, reaper, runs
from sundial.store.hot_queue import HotQueue, outbox

LEASE_MS = 30_000


@pytest.fixture
async def store(store_dsn: str) -> AsyncIterator[pool.Pool]:
    opened = await pool.open_pool(store_dsn, max_size=8)
    yield opened
    await opened.close()


def _entries(dsn: str) -> list[int]:
    with psycopg.connect(dsn) as conn:
        return [row[0] for row in conn.execute("SELECT run_id FROM hot_queue_outbox ORDER BY id")]


async def _due_in_redis(client: aioredis.Redis, namespace: str = "default") -> list[int]:
    return [int(i) for i in await client.zrange("{sundial:default}:due:" + namespace, 0, -1)]


async def _claim_in_redis(client: aioredis.Redis, handler: str, limit: int = 100):
    queue = HotQueue(client, "default")
    epoch = await queue.set_epoch(1)
    return await queue.claim(
        epoch, lease_ms=LEASE_MS, limit=limit, handlers=[(handler, ""), (handler, "async")]
    )


async def test_off_by_default_nothing_is_written(store: pool.Pool, store_dsn: str, job: uuid.UUID):
    assert not await outbox.is_on(store)
    await runs.submit(store, job)
    assert _entries(store_dsn) == []


async def test_every_path_to_pending_leaves_one_entry_and_the_relay_makes_the_run_due(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, make_job: Callable[..., uuid.UUID]
) -> None:
    work = make_job("work", max_retries=2)
    before = (await runs.submit(store, work)).run_id  # pending before the switch
    outbox.switch(store_dsn, on=True)
    assert await outbox.is_on(store)
    assert _entries(store_dsn) == [before]

    submitted = (await runs.submit(store, work)).run_id
    delayed = (await runs.submit(store, work, delay_seconds=0.3)).run_id
    downstream = (await runs.submit(store, work, depends_on=[submitted])).run_id
    assert _entries(store_dsn) == [before, submitted]  # scheduled and blocked runs: not yet

    relay = outbox.Relay(store, client)
    assert await relay.once() == outbox.Relayed(runs=2, delivered=2)
    assert _entries(store_dsn) == []
    assert sorted(await _due_in_redis(client)) == [before, submitted]

    await asyncio.sleep(0.4)
    assert await reaper.promote_due(store) == 1  # the delay is over
    assert _entries(store_dsn) == [delayed]

    # PostgreSQL's claim (the hot queue is not wired to it yet) takes all three pending runs:
    # the upstream completes, and its dependent becomes pending in the finish's transaction,
    # with its entry; the first run fails, waits out a backoff of 0 and is promoted again.
    held = {c.id: c for c in await claims.claim(store, "w", limit=10)}
    assert set(held) == {before, submitted, delayed}
    await claims.finish(
        store,
        "w",
        [
            claims.Finish(submitted, held[submitted].attempt),
            claims.Finish(before, held[before].attempt, FailureClass.ERROR, "boom", 0.0),
        ],
    )
    assert await reaper.promote_due(store) == 1
    assert _entries(store_dsn) == [delayed, downstream, before]

    # The delayed run is running on PostgreSQL's claim: its entry goes, nothing is delivered.
    assert await relay.once() == outbox.Relayed(runs=3, delivered=2)
    assert _entries(store_dsn) == []
    by_id = {c.id: c for c in await _claim_in_redis(client, "handlers.work")}
    # The upstream is still due there too: with both claims live side by side (only in this
    # test) nothing tells Redis that PostgreSQL's claim ran it.
    assert by_id.keys() == {submitted, downstream, before}
    # The retried run's next attempt in Redis continues the record's count.
    assert by_id[before].token.attempt == held[before].attempt + 1


async def test_a_repeated_delivery_after_redis_handed_out_the_run_changes_nothing(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    outbox.switch(store_dsn, on=True)
    run_id = (await runs.submit(store, job)).run_id
    # A relay that took the entry and reached Redis, then died before its commit.
    relay = outbox.Relay(store, client)
    async with store.connection() as conn:
        await conn.execute("BEGIN")
        named, due = await outbox.take(conn, 10)
        assert named == 1
        await relay.deliver(due)
        await conn.execute("ROLLBACK")
    assert _entries(store_dsn) == [run_id]  # the entry is back

    [claim] = await _claim_in_redis(client, "handlers.job")
    assert await HotQueue(client, "default").release([claim]) == [True]
    # The next relay delivers the entry again: the run stays out of the due set.
    assert await relay.once() == outbox.Relayed(runs=1, delivered=1)
    assert await _due_in_redis(client) == []
    assert await _claim_in_redis(client, "handlers.job") == []


async def test_a_relay_that_cannot_reach_redis_leaves_its_entries(
    store: pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    with throwaway_redis() as server:  # its own: this test kills it
        await _relay_across_a_dead_redis(store, store_dsn, server, job)


async def _relay_across_a_dead_redis(
    store: pool.Pool, store_dsn: str, server: ThrowawayRedis, job: uuid.UUID
) -> None:
    outbox.switch(store_dsn, on=True)
    submitted = [(await runs.submit(store, job)).run_id for _ in range(3)]
    server.kill()
    try:
        down = aioredis.Redis.from_url(server.url, socket_connect_timeout=1)
        with pytest.raises(redis.exceptions.ConnectionError):
            await outbox.Relay(store, down).once()
        await down.aclose()
        assert _entries(store_dsn) == submitted
    finally:
        server.restart()
    up = aioredis.Redis.from_url(server.url)
    try:
        assert await outbox.Relay(store, up).once() == outbox.Relayed(runs=3, delivered=3)
        assert sorted(await _due_in_redis(up)) == submitted
    finally:
        await up.aclose()


async def test_relays_side_by_side_deliver_every_run_once_taken(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    outbox.switch(store_dsn, on=True)
    submitted = await runs.submit_many(store, job, [runs.BatchItem() for _ in range(2_000)])
    relayed: list[outbox.Relayed] = []

    async def relay() -> None:
        one = outbox.Relay(store, client)
        while (moved := await one.once(limit=150)).runs:
            relayed.append(moved)

    await asyncio.gather(*(relay() for _ in range(4)))
    assert sum(r.runs for r in relayed) == 2_000
    assert _entries(store_dsn) == []
    assert sorted(await _due_in_redis(client)) == sorted(s.run_id for s in submitted)


def _epochs(dsn: str) -> list[tuple[object, ...]]:
    """Every pending run's epoch (a switch off stamps a new one on each)."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT DISTINCT hot_epoch FROM job_runs WHERE state = 'pending'"
        ).fetchall()


async def test_switched_off_the_outbox_is_emptied_and_stays_empty(
    store: pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    assert outbox.switch(store_dsn, on=True)
    await runs.submit(store, job)
    assert outbox.switch(store_dsn, on=False)
    stamped = _epochs(store_dsn)
    # Asked again (the chart asks on every operator start): nothing changes, no new epoch.
    assert not outbox.switch(store_dsn, on=False)
    assert _epochs(store_dsn) == stamped and len(stamped) == 1
    assert not await outbox.is_on(store)
    await runs.submit(store, job)
    assert _entries(store_dsn) == []


async def test_runs_of_the_pod_model_stay_with_postgresql(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, make_job: Callable[..., uuid.UUID]
) -> None:
    """The pod launcher claims from PostgreSQL in either mode: its runs never enter Redis,
    by the relay or by the reconciler, and its claim still finds them."""
    from sundial.store.hot_queue import reconciler

    outbox.switch(store_dsn, on=True)
    pods = make_job("pods", execution_model="pod", pod_template={})
    work = make_job("work")
    pod_run = (await runs.submit(store, pods)).run_id
    work_run = (await runs.submit(store, work)).run_id

    assert await outbox.Relay(store, client).once() == outbox.Relayed(runs=2, delivered=1)
    assert await _due_in_redis(client) == [work_run]
    keeper = reconciler.Reconciler(store, client)
    await client.flushall()  # a Redis that lost everything: the work run comes back, not the Pod
    assert [await keeper.once(), await keeper.once()] == [0, 1]
    assert await _due_in_redis(client) == [work_run]

    claimed = await claims.claim(store, "launcher", execution_models=["pod"], limit=10)
    assert [run.id for run in claimed] == [pod_run]


def _rows_read_from(plan: dict[str, Any], table: str) -> int:
    """Rows every scan of ``table`` in ``plan`` produced or filtered out, over all its loops."""
    total = 0
    if plan.get("Relation Name") == table and plan["Node Type"] != "ModifyTable":
        rows = plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)
        total += rows * plan.get("Actual Loops", 1)
    for child in plan.get("Plans", []):
        total += _rows_read_from(child, table)
    return total


def test_a_take_reads_the_head_of_a_deep_outbox_only(store_dsn: str, job: uuid.UUID) -> None:
    """A relay's take costs the same at any depth: over a backlog a hundred times its batch it
    reads its batch's entries (the lock and the delete) and not the rest. Taking them with
    ``IN (subquery)`` hash-joined the batch against the whole outbox, a sequential scan per
    take that made draining a backlog quadratic."""
    backlog, batch = 20_000, 200
    outbox.switch(store_dsn, on=True)
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds,
                                  state, priority, run_at, dispatch_key)
            SELECT %s, 'default', 'work', 'async', 60, 3, 1, 60, 'pending', 1, now(),
                   sundial_dispatch_key(now(), 1::smallint)
            FROM generate_series(1, %s)
            """,
            (job, backlog),
        )
        conn.execute("ANALYZE hot_queue_outbox")
        reads = []
        for _ in range(2):  # and again once the head's entries are dead tuples
            row = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + queries.get("outbox_take"),  # type: ignore[operator]
                {"limit": batch},
            ).fetchone()
            assert row is not None
            plan = row[0][0]["Plan"]
            reads.append(_rows_read_from(plan, "hot_queue_outbox"))
            assert plan["Actual Rows"] == batch
    assert all(read <= 3 * batch for read in reads), (reads, plan)
