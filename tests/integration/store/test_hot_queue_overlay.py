"""What readers show of runs the hot queue holds, against a real PostgreSQL and a real Redis:
a run a claimer holds in Redis is pending in the record, and every reader given the Redis
(``history.recent``, ``history.runs``, ``runs.get``) shows it running under Redis's attempt and
lease, as PostgreSQL alone would; a state filter follows what is shown; a Redis that does not
answer leaves the record as it is."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import AsyncIterator, Callable

import pytest
import redis.asyncio as aioredis

from sundial.api import common, scheduled_job
from sundial.scheduling.run_state import RunState
from sundial.store import claims, history, pool, runs, schedules
from sundial.store.hot_queue import HotQueue, outbox

HANDLERS = [("handlers.job", ""), ("handlers.job", "async")]


@pytest.fixture
async def store(store_dsn: str) -> AsyncIterator[pool.Pool]:
    outbox.switch(store_dsn, on=True)
    opened = await pool.open_pool(store_dsn, max_size=4)
    yield opened
    await opened.close()


async def _one_held(store: pool.Pool, client: aioredis.Redis, job: uuid.UUID) -> list[int]:
    """Three pending runs, the oldest claimed in Redis (held by a claimer)."""
    made = await runs.submit_many(store, job, [runs.BatchItem() for _ in range(3)])
    while (await outbox.Relay(store, client).once()).runs:
        pass
    queue = HotQueue(client, "default")
    epoch = await queue.epoch() or await queue.renew_epoch(store)
    [claim] = await queue.claim(epoch, lease_ms=30_000, limit=1, handlers=HANDLERS)
    ids = sorted(m.run_id for m in made)
    assert claim.id == ids[0]
    return ids


async def test_every_reader_given_the_redis_shows_a_held_run_running(
    store: pool.Pool, client: aioredis.Redis, job: uuid.UUID
) -> None:
    held, *waiting = await _one_held(store, client, job)

    recorded = {row.id: (row.state, row.attempt) for row in await history.recent(store)}
    assert recorded == {i: (RunState.PENDING, 0) for i in (held, *waiting)}

    shown = {row.id: (row.state, row.attempt) for row in await history.recent(store, hot=client)}
    assert shown == {held: (RunState.RUNNING, 1), **{i: (RunState.PENDING, 0) for i in waiting}}
    views = await history.runs(store, [held, *waiting], hot=client)
    assert (views[held].state, views[held].attempt) == (RunState.RUNNING, 1)
    assert views[held].why_it_waits() is None  # a running run does not wait
    assert {views[i].state for i in waiting} == {RunState.PENDING}

    info = await runs.get(store, held, hot=client)
    assert info is not None and (info.state, info.attempt) == (RunState.RUNNING, 1)
    assert info.lease_until is not None
    ahead = info.lease_until - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(seconds=20) < ahead <= datetime.timedelta(seconds=31)
    assert info.started_at is not None  # when Redis handed the attempt out, by its clock
    since = datetime.datetime.now(datetime.UTC) - info.started_at
    assert datetime.timedelta(seconds=-2) < since < datetime.timedelta(seconds=10)
    assert views[held].started_at == info.started_at

    running = await history.recent(store, states={"running"}, hot=client)
    assert [row.id for row in running] == [held]
    pending = await history.recent(store, states={"pending"}, hot=client)
    assert sorted(row.id for row in pending) == waiting


async def test_a_schedule_s_window_shows_its_held_run_running(
    store: pool.Pool, client: aioredis.Redis
) -> None:
    """What a ScheduledJob's status lists as active: the fired run a claimer holds, running."""
    uid = uuid.uuid4()
    now = datetime.datetime.now(datetime.UTC)
    spec = scheduled_job.ScheduledJobSpec(
        schedule="*/5 * * * *", handler=common.HandlerSpec(name="handlers.job")
    )
    await schedules.upsert(
        store, uid=uid, namespace="default", name="fired", generation=1, spec=spec, now=now
    )
    fired = [
        (await runs.submit(store, uid, schedule_id=uid, fire_time=now.replace(minute=m))).run_id
        for m in (0, 5)
    ]
    while (await outbox.Relay(store, client).once()).runs:
        pass
    queue = HotQueue(client, "default")
    epoch = await queue.epoch() or await queue.renew_epoch(store)
    [claim] = await queue.claim(epoch, lease_ms=30_000, limit=1, handlers=HANDLERS)
    request = history.WindowRequest(uid, successful=1, failed=1)

    recorded = (await history.window(store, [request]))[uid]
    assert {run.state for run in recorded.active} == {RunState.PENDING}
    shown = (await history.window(store, [request], hot=client))[uid]
    states = {run.id: (run.state, run.attempt) for run in shown.active}
    assert set(states) == set(fired) and shown.active_count == 2
    assert states[claim.id] == (RunState.RUNNING, 1)
    assert [state for run_id, state in states.items() if run_id != claim.id] == [
        (RunState.PENDING, 0)
    ]


async def test_a_redis_that_does_not_answer_leaves_the_record_as_it_is(
    store: pool.Pool, client: aioredis.Redis, job: uuid.UUID, caplog: pytest.LogCaptureFixture
) -> None:
    held, *_ = await _one_held(store, client, job)
    gone = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=1)
    try:
        rows = await history.recent(store, hot=gone)
        info = await runs.get(store, held, hot=gone)
    finally:
        await gone.aclose()
    assert {row.state for row in rows} == {RunState.PENDING}
    assert info is not None and info.state == RunState.PENDING
    assert "runs shown as recorded" in caplog.text


async def test_running_lists_every_held_run_whatever_the_backlog_around_them(
    store: pool.Pool, client: aioredis.Redis, make_job: Callable[..., uuid.UUID]
) -> None:
    """The runs a claimer holds are the oldest pending (claims take the head), and a page of
    the newest pending runs holds none of them: ``states={"running"}`` still lists them, newest
    first, a page at a time, with what the record has running (PostgreSQL's claim: Pods), and
    only the namespace asked for."""
    work = make_job("job")
    elsewhere = make_job("job", namespace="team-b")
    older = await runs.submit_many(store, work, [runs.BatchItem() for _ in range(4)])
    backlog = await runs.submit_many(store, work, [runs.BatchItem() for _ in range(200)])
    while (await outbox.Relay(store, client).once()).runs:
        pass
    queue = HotQueue(client, "default")
    epoch = await queue.epoch() or await queue.renew_epoch(store)
    claimed = await queue.claim(epoch, lease_ms=30_000, limit=4, handlers=HANDLERS)
    held = sorted(c.id for c in claimed)
    assert held == sorted(m.run_id for m in older) and len(backlog) == 200
    other = (await runs.submit(store, elsewhere)).run_id  # held too, in another namespace
    while (await outbox.Relay(store, client).once()).runs:
        pass
    [claim] = await queue.claim(
        epoch, lease_ms=30_000, limit=1, handlers=HANDLERS, held={"default": 4}
    )
    assert claim.id == other  # fair share: the namespace holding nothing goes first
    pods = make_job("pods", execution_model="pod", pod_template={})
    recorded_running = (await runs.submit(store, pods)).run_id
    [pod_claim] = await claims.claim(store, "launcher", execution_models=["pod"], limit=1)
    assert pod_claim.id == recorded_running

    page = await history.recent(store, namespace="default", states={"running"}, hot=client, limit=3)
    assert [row.id for row in page] == [recorded_running, *sorted(held, reverse=True)[:2]]
    assert {row.state for row in page} == {RunState.RUNNING}
    rest = await history.recent(
        store, namespace="default", states={"running"}, hot=client, limit=3, before=page[-1].id
    )
    assert [row.id for row in rest] == sorted(held, reverse=True)[2:]
    everywhere = await history.recent(store, states={"running"}, hot=client)
    assert [row.id for row in everywhere] == sorted([other, recorded_running, *held])[::-1]
    # Without the Redis, the record: one running run.
    assert [row.id for row in await history.recent(store, states={"running"})] == [recorded_running]
    # Pending lists the backlog, not the held runs.
    pending = await history.recent(store, states={"pending"}, hot=client, limit=1000)
    assert {row.id for row in pending} == {m.run_id for m in backlog}


async def test_a_page_of_pending_runs_is_full_whatever_claims_hold_between_them(
    store: pool.Pool, client: aioredis.Redis, make_job: Callable[..., uuid.UUID]
) -> None:
    """Claims take runs by priority, not by age: the runs Redis holds can be the newest ones,
    pending in the record. A page of pending runs leaves them out of its read (they show
    running), so it holds ``limit`` runs that wait while that many wait."""
    work = make_job("job")
    waiting = await runs.submit_many(store, work, [runs.BatchItem() for _ in range(7)])
    urgent = await runs.submit_many(store, work, [runs.BatchItem(priority=9) for _ in range(3)])
    while (await outbox.Relay(store, client).once()).runs:
        pass
    queue = HotQueue(client, "default")
    epoch = await queue.epoch() or await queue.renew_epoch(store)
    claimed = await queue.claim(epoch, lease_ms=30_000, limit=3, handlers=HANDLERS)
    assert sorted(c.id for c in claimed) == sorted(m.run_id for m in urgent)
    newest_waiting = sorted((m.run_id for m in waiting), reverse=True)

    page = await history.recent(store, states={"pending"}, hot=client, limit=5)
    assert [row.id for row in page] == newest_waiting[:5]
    assert {row.state for row in page} == {RunState.PENDING}
    rest = await history.recent(store, states={"pending"}, hot=client, limit=5, before=page[-1].id)
    assert [row.id for row in rest] == newest_waiting[5:]
    both = await history.recent(store, states={"pending", "running"}, hot=client, limit=5)
    assert [(row.id, row.state) for row in both] == [
        *((m.run_id, RunState.RUNNING) for m in reversed(urgent)),
        *((run_id, RunState.PENDING) for run_id in newest_waiting[:2]),
    ]
