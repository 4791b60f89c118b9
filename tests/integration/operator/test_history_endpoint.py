"""``GET /history`` of the operator: PostgreSQL's full history, paged, hot and archived runs."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import AsyncIterator

import pytest
from aiohttp import test_utils, web

from sundial.api import common, scheduled_job
from sundial.operator import history_endpoint
from sundial.store import claims, history, maintenance, runs, schedules
from sundial.store import pool as store_pool

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


@pytest.fixture
async def client(pool: store_pool.Pool) -> AsyncIterator[test_utils.TestClient]:
    app = web.Application()
    app.router.add_routes(history_endpoint.routes(pool))
    async with test_utils.TestClient(test_utils.TestServer(app)) as opened:
        yield opened


async def _runs(pool: store_pool.Pool, name: str, count: int) -> list[int]:
    uid = uuid.uuid4()
    spec = scheduled_job.ScheduledJobSpec(
        schedule="*/5 * * * *", handler=common.HandlerSpec(name="handlers.ok")
    )
    await schedules.upsert(
        pool, uid=uid, namespace="default", name=name, generation=1, spec=spec, now=NOW
    )
    made = [
        (await runs.submit(pool, uid, schedule_id=uid, fire_time=NOW.replace(minute=minute))).run_id
        for minute in range(count)
    ]
    claimed = await claims.claim(pool, "w", limit=100)
    await claims.finish(pool, "w", [claims.Outcome.succeeded(run) for run in claimed])
    return made


async def test_pages_walk_every_run_newest_first_hot_and_archived(
    pool: store_pool.Pool, client: test_utils.TestClient
) -> None:
    made = await _runs(pool, "nightly", 5)
    await _runs(pool, "other", 2)
    await maintenance.ensure_partitions(pool)
    assert await maintenance.archive_finished(pool, older_than_seconds=0) == 7
    live = (await runs.submit(pool, "default/nightly")).run_id  # still in the hot table

    seen: list[str] = []
    before: str | None = None
    for _ in range(10):
        query = {"namespace": "default", "job": "nightly", "limit": "2"}
        if before:
            query["before"] = before
        response = await client.get("/history", params=query)
        assert response.status == 200
        page = await response.json()
        seen += [item["runId"] for item in page["items"]]
        assert all(item["job"] == "nightly" for item in page["items"])
        before = page["before"]
        if before is None:
            break
    assert seen == [str(run_id) for run_id in sorted([*made, live], reverse=True)]


async def test_bad_queries_say_what_to_send(client: test_utils.TestClient) -> None:
    for query, words in [
        ({}, "give namespace=NS"),
        ({"namespace": "default", "limit": "0"}, "limit must be a whole number from 1 to 1000"),
        ({"namespace": "default", "limit": "x"}, "limit must be"),
        ({"namespace": "default", "before": "-3"}, "before must be"),
    ]:
        response = await client.get("/history", params=query)
        assert response.status == 400
        assert words in (await response.json())["error"]


async def test_another_namespace_sees_none_of_these_runs(
    pool: store_pool.Pool, client: test_utils.TestClient
) -> None:
    await _runs(pool, "nightly", 2)
    response = await client.get("/history", params={"namespace": "elsewhere", "job": "nightly"})
    assert (await response.json()) == {"items": [], "before": None}


async def test_error_text_stays_out_of_the_endpoint_but_not_out_of_the_store(
    pool: store_pool.Pool, client: test_utils.TestClient
) -> None:
    """A handler's message can carry what it was handling; the endpoint answers whoever the API
    server lets through, so it gives the failure's class, never the text."""
    uid = uuid.uuid4()
    spec = scheduled_job.ScheduledJobSpec(
        schedule="*/5 * * * *",
        handler=common.HandlerSpec(name="handlers.fails"),
        retry=common.RetrySpec(max_retries=0),
    )
    await schedules.upsert(
        pool, uid=uid, namespace="default", name="charges", generation=1, spec=spec, now=NOW
    )
    await runs.submit(pool, uid, schedule_id=uid, fire_time=NOW)
    (claimed,) = await claims.claim(pool, "w", limit=1)
    secret = "card 4111-1111-1111-1111 declined for customer 42"
    await claims.finish(pool, "w", [claims.Outcome.failed(claimed, secret)])

    response = await client.get("/history", params={"namespace": "default", "job": "charges"})
    (item,) = (await response.json())["items"]
    assert item["failureReason"] is not None and item["lastError"] is None
    assert secret not in await response.text()

    (row,) = await history.recent(pool, namespace="default", job="charges", limit=1)
    assert secret in (history_endpoint.row_json(row)["lastError"] or "")
