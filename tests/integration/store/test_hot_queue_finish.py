"""Finishing an attempt the hot queue handed out, against a real PostgreSQL and a real Redis:
the outcome is written with its token, a failure is retried through the outbox under the next
attempt, a finisher that lost its lease writes nothing in either place, a token older than the
one recorded is refused by PostgreSQL itself, and a completed upstream releases its dependents
to Redis."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
import redis.asyncio as aioredis

from sundial.scheduling.failures import FailureClass
from sundial.store import claims, pool, reaper, runs
from sundial.store.hot_queue import Claim, DueRun, HotQueue, finishes, outbox

HANDLERS = [("handlers.work", ""), ("handlers.work", "async")]


class Bed:
    """A database with the hot queue on, a Redis, and a relay and queue between them."""

    def __init__(self, store: pool.Pool, dsn: str, client: aioredis.Redis) -> None:
        self.store, self.dsn, self.client = store, dsn, client
        self.queue = HotQueue(client, "default")
        self.relay = outbox.Relay(store, client)
        self.epoch = 0

    async def claim(self, limit: int = 100, lease_ms: int = 30_000) -> list[Claim]:
        while (await self.relay.once()).runs:
            pass
        if not self.epoch:
            self.epoch = await self.queue.renew_epoch(self.store)
        return await self.queue.claim(self.epoch, lease_ms=lease_ms, limit=limit, handlers=HANDLERS)

    async def finish(self, *done: tuple[Claim, claims.Finish]) -> claims.FinishResult:
        return await finishes.finish(
            self.store,
            self.queue,
            "runner-1",
            [finishes.HotFinish(outcome, claim) for claim, outcome in done],
        )

    def row(self, run_id: int) -> dict[str, Any]:
        with psycopg.connect(self.dsn) as conn:
            cursor = conn.execute(
                "SELECT state, attempt, hot_epoch, retries_used, started_at, last_error"
                " FROM job_runs WHERE id = %s",
                (run_id,),
            )
            names = [c.name for c in cursor.description or ()]
            found = cursor.fetchone()
            assert found is not None
            return dict(zip(names, found, strict=True))


@pytest.fixture
async def bed(store_dsn: str, client: aioredis.Redis) -> AsyncIterator[Bed]:
    store = await pool.open_pool(store_dsn, max_size=4)
    outbox.switch(store_dsn, on=True)
    yield Bed(store, store_dsn, client)
    await store.close()


def _ok(claim: Claim) -> claims.Finish:
    return claims.Finish(claim.id, claim.token.attempt)


async def test_an_outcome_is_written_with_its_token_and_its_lease_ends(
    bed: Bed, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("work")
    made = await runs.submit_many(bed.store, job, [runs.BatchItem() for _ in range(100)])
    claimed = await bed.claim()
    assert len(claimed) == 100
    before = datetime.now(UTC) - timedelta(seconds=5)
    result = await bed.finish(*((c, _ok(c)) for c in claimed))
    assert result.states == {m.run_id: "completed" for m in made} and not result.lost
    row = bed.row(claimed[0].id)
    assert (row["state"], row["attempt"], row["hot_epoch"]) == ("completed", 1, bed.epoch)
    assert row["started_at"] > before
    assert await bed.client.zcard("{sundial:default}:leases") == 0


async def test_a_failure_is_retried_through_the_outbox_under_the_next_attempt(
    bed: Bed, make_job: Callable[..., uuid.UUID]
) -> None:
    run_id = (await runs.submit(bed.store, make_job("work", max_retries=2))).run_id
    [first] = await bed.claim()
    failed = claims.Finish(run_id, 1, FailureClass.ERROR, "boom", 0.0)
    assert (await bed.finish((first, failed))).states == {run_id: "retry_wait"}
    row = bed.row(run_id)
    assert (row["attempt"], row["retries_used"], row["last_error"]) == (1, 1, "boom")
    assert await reaper.promote_due(bed.store) == 1
    [second] = await bed.claim()
    assert second.id == run_id and second.token.attempt == 2
    assert (await bed.finish((second, _ok(second)))).states == {run_id: "completed"}
    assert bed.row(run_id)["attempt"] == 2


async def test_a_finisher_that_lost_its_lease_writes_nothing_anywhere(
    bed: Bed, make_job: Callable[..., uuid.UUID]
) -> None:
    run_id = (await runs.submit(bed.store, make_job("work"))).run_id
    [late] = await bed.claim(lease_ms=100)
    await asyncio.sleep(0.3)
    assert await bed.queue.expire(10) == [(run_id, late.token)]
    # The lost attempt is retried (here made due directly, as the retry path would).
    row = bed.row(run_id)
    assert row["state"] == "pending"
    await bed.queue.enqueue(
        [DueRun(run_id, 0, "default", "handlers.work", "", attempt=late.token.attempt)]
    )
    [retry] = await bed.claim()
    assert retry.token.attempt == 2
    result = await bed.finish((late, _ok(late)))
    assert result.lost == {run_id} and not result.states
    assert bed.row(run_id)["state"] == "pending", "PostgreSQL untouched"
    assert (await bed.finish((retry, _ok(retry)))).states == {run_id: "completed"}


async def test_postgresql_refuses_a_token_older_than_the_one_recorded(
    bed: Bed, make_job: Callable[..., uuid.UUID]
) -> None:
    """As after the reconciler raised the row's token (its Redis lost the run, which another
    epoch may hand out again): a finisher of the old epoch that got through Redis is refused."""
    run_id = (await runs.submit(bed.store, make_job("work"))).run_id
    [claim] = await bed.claim()
    with psycopg.connect(bed.dsn) as conn:
        conn.execute("UPDATE job_runs SET hot_epoch = %s WHERE id = %s", (bed.epoch + 1, run_id))
    result = await bed.finish((claim, _ok(claim)))
    assert result.lost == {run_id}
    assert bed.row(run_id)["state"] == "pending"


async def test_a_completed_upstream_releases_its_dependents_to_redis(
    bed: Bed, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("work")
    upstream = (await runs.submit(bed.store, job)).run_id
    downstream = (await runs.submit(bed.store, job, depends_on=[upstream])).run_id
    [claim] = await bed.claim()
    assert claim.id == upstream
    result = await bed.finish((claim, _ok(claim)))
    assert result.released == {downstream: "pending"}
    [next_one] = await bed.claim()
    assert next_one.id == downstream


_COMPARED = (
    "state, attempt, retries_used, infra_retries_used, oom_retries_used, failure_reason,"
    " failure_detail, last_error, finished_at IS NULL AS unfinished, lease_until IS NULL AS free"
)


async def test_each_outcome_leaves_the_row_postgresqls_own_finish_leaves(
    bed: Bed, make_job: Callable[..., uuid.UUID]
) -> None:
    """The hot queue's finish writes an outcome in one row version with its own fenced update;
    for every kind of end it must leave what PostgreSQL's claim and finish leave: the next
    state, the retry counters, the failure, the error, the attempt history."""
    ends: list[tuple[FailureClass | None, str | None]] = [(None, None)]
    ends += [(failure, f"{failure.value} happened") for failure in FailureClass]
    hot_job, pg_job = make_job("work", max_retries=1), make_job("pg", max_retries=1)
    hot_runs = [(await runs.submit(bed.store, hot_job)).run_id for _ in ends]
    pg_runs = [(await runs.submit(bed.store, pg_job)).run_id for _ in ends]

    by_id = {c.id: c for c in await bed.claim()}
    assert set(by_id) == set(hot_runs)
    await bed.finish(
        *(
            (by_id[run_id], claims.Finish(run_id, 1, failure, error, 5.0, "Detail"))
            for run_id, (failure, error) in zip(hot_runs, ends, strict=True)
        )
    )
    held = await claims.claim(bed.store, "runner-1", handlers=["handlers.pg"], limit=100)
    assert {c.id for c in held} == set(pg_runs)
    await claims.finish(
        bed.store,
        "runner-1",
        [
            claims.Finish(run_id, 1, failure, error, 5.0, "Detail")
            for run_id, (failure, error) in zip(pg_runs, ends, strict=True)
        ],
    )

    with psycopg.connect(bed.dsn) as conn:

        def row(run_id: int) -> tuple[Any, ...]:
            found = conn.execute(f"SELECT {_COMPARED} FROM job_runs WHERE id = %s", (run_id,))
            return tuple(found.fetchone() or ())

        def history(run_id: int) -> list[tuple[Any, ...]]:
            return list(
                conn.execute(
                    "SELECT attempt, worker, outcome, failure_reason, error, started_at IS NULL"
                    " FROM job_run_attempts WHERE run_id = %s ORDER BY attempt",
                    (run_id,),
                )
            )

        for hot, pg, end in zip(hot_runs, pg_runs, ends, strict=True):
            assert row(hot) == row(pg), end
            assert history(hot) == history(pg), end
