"""Cancelling on the hot queue, against a real PostgreSQL and a real Redis: a run Redis holds is
pending in the record while its attempt runs, and is cancelled as a running run is (asked to
stop, its room under a concurrency key kept until its attempt ends); a run still due in Redis
ends at once and no claim hands it out after; a ScheduledJob's ``Replace`` does the same; the
CLI given no Redis on such a database says so instead of ending a run under its attempt."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import timedelta

import psycopg
import redis.asyncio as aioredis
from click.testing import CliRunner, Result

from sundial import cli
from sundial.attempt import finishes
from sundial.localdev.redis_server import ThrowawayRedis
from sundial.scheduler import trigger
from sundial.scheduling import clock
from sundial.store import pool as store_pool
from sundial.store import reaper, runs
from sundial.store.hot_queue import member, outbox
from sundial.store.hot_queue.dispatch import HotDispatch
from support.trigger import START, UNPACED, add_schedule

WORKER = "runner-1"


async def invoke(*args: str) -> Result:
    env = {"SUNDIAL_HOT_QUEUE_URL": "", "SUNDIAL_DSN": ""}
    return await asyncio.to_thread(CliRunner().invoke, cli.main, list(args), env=env)


async def _claim(
    dispatch: HotDispatch,
    pool: store_pool.Pool,
    client: aioredis.Redis,
    *,
    handlers: list[str] | None = None,
    limit: int = 10,
):
    while (await outbox.Relay(pool, client).once()).runs:
        pass
    return await dispatch.claim(
        WORKER,
        queues=["default"],
        handlers=handlers or ["handlers.job"],
        execution_models=["async"],
        registered_model=True,
        limit=limit,
        lease_seconds=30.0,
        namespaces=None,
    )


def _rows(dsn: str, ids: list[int]) -> list[tuple[str, bool]]:
    with psycopg.connect(dsn) as conn:
        found = {
            row[0]: (row[1], row[2])
            for row in conn.execute(
                "SELECT id, state, cancel_requested FROM job_runs WHERE id = ANY(%s)", (ids,)
            )
        }
    return [found[i] for i in ids]


async def test_a_held_run_is_asked_to_stop_and_keeps_its_room_until_its_attempt_ends(
    pool: store_pool.Pool,
    store_dsn: str,
    client: aioredis.Redis,
    make_job: Callable[..., uuid.UUID],
) -> None:
    outbox.switch(store_dsn, on=True)
    keyed = make_job("job", concurrency_key="warehouse", concurrency_limit=1)
    first, second = [(await runs.submit(pool, keyed, args={"n": n})).run_id for n in range(2)]
    await reaper.promote_due(pool)
    assert _rows(store_dsn, [first, second]) == [("pending", False), ("scheduled", False)]
    dispatch = HotDispatch(lambda: pool, client)
    (held,) = await _claim(dispatch, pool, client)
    assert held.id == first

    result = await runs.cancel(pool, first, reason="cancelled: not today", hot=client)

    assert result is runs.CancelResult.REQUESTED
    assert _rows(store_dsn, [first, second]) == [("pending", True), ("scheduled", False)]
    await reaper.promote_due(pool)  # the attempt still runs: the key has no room
    assert _rows(store_dsn, [second]) == [("scheduled", False)]
    beat = await dispatch.heartbeat(WORKER, [(held.id, held.attempt)], lease_seconds=30.0)
    assert first in beat.cancel_requested and first in beat.extended
    ended = await dispatch.finish(WORKER, [finishes.cancelled(held)])
    assert ended.states == {first: "cancelled"} and not ended.lost
    with psycopg.connect(store_dsn) as conn:
        row = conn.execute("SELECT last_error FROM job_runs WHERE id = %s", (first,)).fetchone()
    assert row == ("cancelled: not today",)
    await reaper.promote_due(pool)  # now the next run of the key goes
    assert _rows(store_dsn, [second]) == [("pending", False)]


async def test_a_run_due_in_redis_ends_at_once_and_is_never_handed_out(
    pool: store_pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    outbox.switch(store_dsn, on=True)
    run_id = (await runs.submit(pool, job)).run_id
    while (await outbox.Relay(pool, client).once()).runs:
        pass
    assert await client.zscore("{sundial:default}:due:default", member(run_id)) is not None

    assert await runs.cancel(pool, run_id, hot=client) is runs.CancelResult.CANCELLED

    assert await client.zscore("{sundial:default}:due:default", member(run_id)) is None
    assert _rows(store_dsn, [run_id]) == [("cancelled", True)]
    assert await _claim(HotDispatch(lambda: pool, client), pool, client) == []
    # Not relayed yet, or a Pod's: nothing in Redis to settle, the record ends it.
    other = (await runs.submit(pool, job)).run_id
    assert await runs.cancel(pool, other, hot=client) is runs.CancelResult.CANCELLED
    assert await _claim(HotDispatch(lambda: pool, client), pool, client) == []


async def test_the_cli_asks_for_the_redis_on_a_database_whose_hot_queue_is_on(
    pool: store_pool.Pool,
    store_dsn: str,
    client: aioredis.Redis,
    job: uuid.UUID,
    redis_server: ThrowawayRedis,
) -> None:
    outbox.switch(store_dsn, on=True)
    run_id = (await runs.submit(pool, job)).run_id
    dispatch = HotDispatch(lambda: pool, client)
    (held,) = await _claim(dispatch, pool, client)

    refused = await invoke("runs", "cancel", str(run_id), "--dsn", store_dsn)
    assert refused.exit_code == 2, refused.output
    assert "give --hot-queue-url" in refused.output
    assert _rows(store_dsn, [run_id]) == [("pending", False)]  # nothing changed

    done = await invoke(
        "runs", "cancel", str(run_id), "--dsn", store_dsn, "--hot-queue-url", redis_server.url
    )
    assert done.exit_code == 0, done.output
    assert "cancel requested" in done.output
    assert _rows(store_dsn, [run_id]) == [("pending", True)]
    assert held.id == run_id


async def test_replace_asks_a_held_run_to_stop_and_ends_one_still_due(
    pool: store_pool.Pool, store_dsn: str, client: aioredis.Redis
) -> None:
    """A ScheduledJob's ``Replace`` cancels its active runs as ``runs.cancel`` does: the run a
    runner holds in Redis is asked to stop (it runs until its attempt ends it), a run still due
    in Redis ends at once and leaves Redis."""
    outbox.switch(store_dsn, on=True)
    now = clock.ManualClock(START)
    held_schedule = await add_schedule(pool, START, concurrency_policy="Replace", name="job")
    due_schedule = await add_schedule(pool, START, concurrency_policy="Replace", name="other")
    loop = trigger.TriggerLoop(pool, clock=now, settings=UNPACED, hot_queue=client)
    now.set(START + timedelta(minutes=1))
    fired = {run.schedule_id: run.run_id for run in (await loop.tick()).runs}
    dispatch = HotDispatch(lambda: pool, client)
    (held,) = await _claim(dispatch, pool, client, handlers=["handlers.noop"], limit=1)
    running, waiting = (
        (fired[held_schedule], fired[due_schedule])
        if held.id == fired[held_schedule]
        else (fired[due_schedule], fired[held_schedule])
    )
    assert held.id == running

    now.set(START + timedelta(minutes=2))
    report = await loop.tick()

    assert report.cancelled == 2 and report.created == 2
    assert _rows(store_dsn, [running, waiting]) == [("pending", True), ("cancelled", True)]
    beat = await dispatch.heartbeat(WORKER, [(held.id, held.attempt)], lease_seconds=30.0)
    assert running in beat.cancel_requested
    assert await client.zscore("{sundial:default}:due:default", member(waiting)) is None
    while (await outbox.Relay(pool, client).once()).runs:
        pass
    due = await client.zrange("{sundial:default}:due:default", 0, -1)
    assert member(waiting).encode() not in due and len(due) == 2  # the two new runs
