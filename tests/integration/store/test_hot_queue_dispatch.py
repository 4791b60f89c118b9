"""The runner's dispatch on the hot queue (``HotDispatch``), against a real PostgreSQL and a
real Redis: a finish whose PostgreSQL write failed after Redis ended its lease is written on
the next try (not called lost), a claimed run cancelled in the record is given back unrun, a
give-back makes the run due again under a later attempt, and the fencing token a handler sees
grows across a Redis that lost everything even where the attempt number repeats."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
import redis.asyncio as aioredis

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.store import claims, errors, pool, reaper, releases, runs
from sundial.store.hot_queue import HotQueue, outbox, reconciler
from sundial.store.hot_queue.dispatch import LOST_KEPT_SECONDS, HotDispatch

WORKER = "runner-1"


@pytest.fixture
async def store(store_dsn: str) -> AsyncIterator[pool.Pool]:
    outbox.switch(store_dsn, on=True)
    opened = await pool.open_pool(store_dsn, max_size=4)
    yield opened
    await opened.close()


async def _claim(dispatch: HotDispatch, store: pool.Pool, client: aioredis.Redis, limit: int = 10):
    while (await outbox.Relay(store, client).once()).runs:
        pass
    return await dispatch.claim(
        WORKER,
        queues=["default"],
        handlers=["handlers.job"],
        execution_models=["async"],
        registered_model=True,
        limit=limit,
        lease_seconds=30.0,
        namespaces=None,
    )


def _state(dsn: str, run_id: int) -> tuple[str, int]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT state, attempt FROM job_runs WHERE id = %s", (run_id,)
        ).fetchone()
    return row[0], row[1]


async def test_a_finish_whose_write_failed_is_written_on_the_next_try(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    run_id = (await runs.submit(store, job)).run_id
    down = await pool.open_pool(store_dsn, min_size=1, max_size=1)
    try:
        current = {"pool": store}
        dispatch = HotDispatch(lambda: current["pool"], client)
        (run,) = await _claim(dispatch, store, client)
        # The write goes to a pool whose server connection was cut: Redis has ended the lease,
        # PostgreSQL has not written the outcome.
        async with down.connection() as conn:
            backend = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
        with psycopg.connect(store_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        current["pool"] = down
        with pytest.raises(errors.StoreUnavailableError):
            await dispatch.finish(WORKER, [claims.Finish(run.id, run.attempt)])
        assert _state(store_dsn, run_id) == ("pending", 0)
        current["pool"] = store
        result = await dispatch.finish(WORKER, [claims.Finish(run.id, run.attempt)])
        assert result.states == {run_id: "completed"} and not result.lost
        assert _state(store_dsn, run_id) == ("completed", 1)
        assert dispatch.held == 0
    finally:
        await down.close()


async def test_a_heartbeat_while_a_finish_is_being_written_does_not_lose_it(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    """The heartbeat goes on beating an attempt whose outcome is queued (on PostgreSQL alone
    that keeps its lease until the write); on the hot queue the finish has ended the lease in
    Redis by then, and a heartbeat that meets it gone must not drop the attempt the finish is
    writing: its retry, or the rest of the same call, needs it."""
    first, second = [(await runs.submit(store, job)).run_id for _ in range(2)]
    down = await pool.open_pool(store_dsn, min_size=1, max_size=1)
    try:
        current = {"pool": store}
        dispatch = HotDispatch(lambda: current["pool"], client)
        claimed = {run.id: run for run in await _claim(dispatch, store, client)}
        keys = [(run.id, run.attempt) for run in claimed.values()]
        # 1. Released in Redis, the write cut: a heartbeat, then the write again.
        async with down.connection() as conn:
            backend = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
        with psycopg.connect(store_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        current["pool"] = down
        with pytest.raises(errors.StoreUnavailableError):
            await dispatch.finish(WORKER, [claims.Finish(first, 1)])
        current["pool"] = store
        beat = await dispatch.heartbeat(WORKER, keys, lease_seconds=30.0)
        assert first not in beat.lost and second in beat.extended, beat
        result = await dispatch.finish(WORKER, [claims.Finish(first, 1)])
        assert result.states == {first: "completed"} and not result.lost
        # 2. A heartbeat answered while the finish's release is on its way back.
        queue = dispatch._queues["default"]  # the one its claims hold
        release = queue.release
        beats = []

        async def release_then_beat(held):  # Redis ends the lease, then the beat's reply comes
            flags = await release(held)
            beats.append(await dispatch.heartbeat(WORKER, [(second, 1)], lease_seconds=30.0))
            return flags

        queue.release = release_then_beat  # type: ignore[method-assign]
        result = await dispatch.finish(WORKER, [claims.Finish(second, 1)])
        assert second not in beats[0].lost, beats
        assert result.states == {second: "completed"} and not result.lost
        assert _state(store_dsn, first) == ("completed", 1)
        assert _state(store_dsn, second) == ("completed", 1)
        assert dispatch.held == 0
    finally:
        await down.close()


async def test_a_run_cancelled_before_its_claim_is_given_back_unrun(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    kept, cancelled = [(await runs.submit(store, job)).run_id for _ in range(2)]
    dispatch = HotDispatch(lambda: store, client)
    while (await outbox.Relay(store, client).once()).runs:
        pass
    await runs.cancel(store, cancelled, reason="not wanted")
    claimed = await _claim(dispatch, store, client)
    assert [run.id for run in claimed] == [kept]
    assert await client.zcard("{sundial:default}:leases") == 1  # the cancelled one's ended
    assert _state(store_dsn, cancelled)[0] == "cancelled"


async def test_a_run_given_back_is_claimed_again_under_a_later_attempt(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    run_id = (await runs.submit(store, job)).run_id
    dispatch = HotDispatch(lambda: store, client)
    (run,) = await _claim(dispatch, store, client)
    beat = await dispatch.heartbeat(WORKER, [(run.id, run.attempt)], lease_seconds=30.0)
    assert set(beat.extended) == {run_id} and not beat.lost and not beat.cancel_requested
    given = await dispatch.release(WORKER, [releases.Release(run.id, run.attempt)])
    assert given.states == {run_id: "pending"} and not given.lost
    # The old attempt's heartbeat and finish are refused; the next claim is attempt 2.
    beat = await dispatch.heartbeat(WORKER, [(run.id, run.attempt)], lease_seconds=30.0)
    assert beat.lost == {run_id}
    (again,) = await _claim(dispatch, store, client)
    assert (again.id, again.attempt) == (run_id, 2)
    stale = await dispatch.finish(WORKER, [claims.Finish(run.id, run.attempt)])
    assert stale.lost == {run_id}
    done = await dispatch.finish(WORKER, [claims.Finish(again.id, again.attempt)])
    assert done.states == {run_id: "completed"}
    assert _state(store_dsn, run_id) == ("completed", 2)


async def test_a_run_given_back_with_a_delay_waits_then_keeps_its_priority(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, make_job
) -> None:
    """A runner whose circuit breaker is open gives a run back for a while: as PostgreSQL's
    release, the record says retry_wait (the attempt recorded), no claim takes it before the
    delay, and after it the run ranks by its priority again, ahead of the lower-priority runs
    that came in meanwhile, under its next attempt. A failed write is tried again without
    calling the give-back lost."""
    job = make_job("job")
    urgent = (await runs.submit(store, job, priority=9)).run_id
    dispatch = HotDispatch(lambda: store, client)
    (run,) = await _claim(dispatch, store, client)
    assert run.id == urgent
    later = [(await runs.submit(store, job, priority=1)).run_id for _ in range(3)]
    delayed = releases.Release(run.id, run.attempt, 1.0, "circuit open")

    given = await dispatch.release(WORKER, [delayed])

    assert given.states == {urgent: "retry_wait"} and not given.lost
    assert _state(store_dsn, urgent) == ("retry_wait", 1)
    await reaper.promote_due(store)
    assert {c.id for c in await _claim(dispatch, store, client, limit=1)} == {later[0]}
    await asyncio.sleep(1.1)
    await reaper.promote_due(store)
    (again,) = await _claim(dispatch, store, client, limit=1)
    assert (again.id, again.attempt) == (urgent, 2)
    assert dispatch.held == 2


async def test_a_delayed_give_back_whose_write_failed_is_written_on_the_next_try(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, job: uuid.UUID
) -> None:
    run_id = (await runs.submit(store, job)).run_id
    down = await pool.open_pool(store_dsn, min_size=1, max_size=1)
    try:
        current = {"pool": store}
        dispatch = HotDispatch(lambda: current["pool"], client)
        (run,) = await _claim(dispatch, store, client)
        async with down.connection() as conn:
            backend = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
        with psycopg.connect(store_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        current["pool"] = down
        delayed = releases.Release(run.id, run.attempt, 30.0, "circuit open")
        with pytest.raises(errors.StoreUnavailableError):
            await dispatch.release(WORKER, [delayed])
        assert _state(store_dsn, run_id) == ("pending", 0)  # Redis ended the lease only
        current["pool"] = store
        given = await dispatch.release(WORKER, [delayed])
        assert given.states == {run_id: "retry_wait"} and not given.lost
        assert _state(store_dsn, run_id) == ("retry_wait", 1)
        assert dispatch.held == 0
    finally:
        await down.close()


async def test_a_give_back_whose_caller_never_tried_again_is_forgotten_in_time(
    store: pool.Pool, store_dsn: str, client: aioredis.Redis, make_job
) -> None:
    """A give-back call that failed part-way remembers the runs it did give back, so the
    caller's next try hears "pending" for them rather than "lost"; a caller that never tries
    again must not leave them in the runner's memory for good."""
    job = make_job("job")
    for _ in range(3):
        await runs.submit(store, job)
    down = await pool.open_pool(store_dsn, min_size=1, max_size=1)
    try:
        current = {"pool": store}
        now = [0.0]
        dispatch = HotDispatch(lambda: current["pool"], client, clock=lambda: now[0])
        first, second, third = await _claim(dispatch, store, client)
        async with down.connection() as conn:
            backend = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
        with psycopg.connect(store_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        current["pool"] = down
        given_back = [releases.Release(run.id, run.attempt) for run in (first, second)]
        delayed = releases.Release(third.id, third.attempt, 30.0, "circuit open")
        with pytest.raises(errors.StoreUnavailableError):
            await dispatch.release(WORKER, [*given_back, delayed])
        current["pool"] = store

        now[0] += 10
        again = await dispatch.release(WORKER, [given_back[0]])
        assert again.states == {first.id: "pending"} and not again.lost
        now[0] += LOST_KEPT_SECONDS
        late = await dispatch.release(WORKER, [given_back[1]])
        assert not late.states and late.lost == {second.id}
        assert not dispatch._given_back
    finally:
        await down.close()


async def _eventually(call):
    """Call again while Redis is still coming back (the client reconnects on the next call)."""
    for _ in range(50):
        try:
            return await call()
        except errors.StoreUnavailableError:
            await asyncio.sleep(0.1)
    return await call()


async def _lost_everything(server: ThrowawayRedis, store: pool.Pool) -> aioredis.Redis:
    """Restart ``server`` empty and let the reconciler give the record's pending runs back."""
    server.kill()
    server.restart()
    client = aioredis.Redis.from_url(server.url)
    reconciling = reconciler.Reconciler(store, client)
    assert await reconciling.once() == 0, "the first pass only notes the losses"
    assert await reconciling.once() == 1
    return client


async def test_after_redis_lost_everything_the_fencing_token_still_grows(
    store: pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    run_id = (await runs.submit(store, job)).run_id
    with throwaway_redis() as server:
        client = aioredis.Redis.from_url(server.url)
        again_client = None
        try:
            mine = HotDispatch(lambda: store, client)
            (first,) = await _claim(mine, store, client)
            assert first.attempt == 1 and first.fencing_token == (first.epoch << 32) | 1
            again_client = await _lost_everything(server, store)
            theirs = HotDispatch(lambda: store, again_client)
            (again,) = await _claim(theirs, store, again_client)
            # The same attempt number, handed out again under the new epoch; not the same token.
            assert (again.id, again.attempt) == (run_id, 1) and again.epoch > first.epoch
            assert again.fencing_token > first.fencing_token
            stale = await _eventually(lambda: mine.finish(WORKER, [claims.Finish(run_id, 1)]))
            assert stale.lost == {run_id}
            done = await theirs.finish("runner-2", [claims.Finish(run_id, 1)])
            assert done.states == {run_id: "completed"}
        finally:
            await client.aclose()
            if again_client is not None:
                await again_client.aclose()


async def test_a_finishing_attempt_found_lost_never_writes_under_a_newer_one(
    store: pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    """An attempt whose outcome waits for its write (PostgreSQL slow or away) while Redis loses
    everything: its heartbeat finds it lost, but the runner still writes that outcome later.
    The same attempt number handed out again under the new epoch in between is given back,
    so the late write is lost, not written under the new attempt's token while it runs."""
    run_id = (await runs.submit(store, job)).run_id
    with throwaway_redis() as server:
        client = aioredis.Redis.from_url(server.url)
        try:
            mine = HotDispatch(lambda: store, client)
            (first,) = await _claim(mine, store, client)
            await (await _lost_everything(server, store)).aclose()
            beat = await _eventually(
                lambda: mine.heartbeat(WORKER, [(run_id, 1)], lease_seconds=30.0)
            )
            assert beat.lost == {run_id}
            assert await _claim(mine, store, client) == []  # attempt 1 again: given back
            late = await mine.finish(WORKER, [claims.Finish(run_id, 1)])
            assert late.lost == {run_id} and _state(store_dsn, run_id) == ("pending", 0)
            (second,) = await _claim(mine, store, client)
            assert second.attempt == 2 and second.fencing_token > first.fencing_token
            done = await mine.finish(WORKER, [claims.Finish(run_id, 2)])
            assert done.states == {run_id: "completed"}
        finally:
            await client.aclose()


async def test_a_runner_never_holds_one_attempt_number_of_a_run_twice(
    store: pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    """After Redis lost everything, the runner that still runs attempt 1 of the old epoch is
    handed attempt 1 of the new one: it gives that back, its old attempt is found lost, and the
    run is claimed as attempt 2. Turning the hot queue off then stamps a newer epoch still, so
    PostgreSQL's claim (attempt 1 by the record, which counted none) does not reuse a token."""
    run_id = (await runs.submit(store, job)).run_id
    with throwaway_redis() as server:
        client = aioredis.Redis.from_url(server.url)
        try:
            mine = HotDispatch(lambda: store, client)
            (first,) = await _claim(mine, store, client)
            await (await _lost_everything(server, store)).aclose()
            assert await _eventually(lambda: _claim(mine, store, client)) == []
            beat = await mine.heartbeat(WORKER, [(run_id, 1)], lease_seconds=30.0)
            assert beat.lost == {run_id}
            (second,) = await _claim(mine, store, client)
            assert (second.attempt, second.epoch) == (2, await HotQueue(client, "default").epoch())
            assert second.fencing_token > first.fencing_token
            given = await mine.release(WORKER, [releases.Release(run_id, 2)])
            assert given.states == {run_id: "pending"}
        finally:
            await client.aclose()
    outbox.switch(store_dsn, on=False)
    (alone,) = await claims.claim(store, "runner-3", handlers=["handlers.job"])
    assert alone.attempt == _state(store_dsn, run_id)[1]
    assert alone.fencing_token > second.fencing_token
