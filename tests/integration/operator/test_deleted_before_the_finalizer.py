"""A ScheduledJob deleted before kopf added its finalizer stops firing all the same.

Such an object is gone at once: kopf's delete handler never runs for it, and only the watch's
DELETED event says it went. The operator's handlers are called here as kopf calls them, on a
real PostgreSQL; the Kubernetes side only records (the object is already gone)."""

from __future__ import annotations

import datetime
import types
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sundial.operator import context, events, handlers, job_runs, scheduled_jobs
from sundial.scheduling import clock
from sundial.store import pool as store_pool
from sundial.store import schedules
from support.recording_api import RecordingApi

NOW = datetime.datetime(2026, 12, 3, 9, 0, tzinfo=datetime.UTC)


@pytest.fixture
async def ctx(store_dsn: str) -> AsyncIterator[context.Context]:
    pool = await store_pool.open_pool(store_dsn, min_size=1, max_size=2)
    api = RecordingApi()
    manual = clock.ManualClock(NOW)
    try:
        yield context.Context(pool, api, events.EventRecorder(api, manual), manual)
    finally:
        await pool.close()


def _body() -> dict[str, Any]:
    """A ScheduledJob as the watch delivers it before kopf's first patch: no finalizer."""
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {
            "name": "short-lived",
            "namespace": "team-a",
            "uid": str(uuid.uuid4()),
            "generation": 1,
            "resourceVersion": "1",
        },
        "spec": {"schedule": "* * * * *", "handler": {"name": "tests.ok"}},
    }


async def _active(ctx: context.Context, body: dict[str, Any]) -> bool | None:
    info = await schedules.get(ctx.pool, uuid.UUID(body["metadata"]["uid"]))
    return None if info is None else info.active


async def test_the_deleted_event_deactivates_a_schedule_stored_without_a_finalizer(
    ctx: context.Context,
) -> None:
    body = _body()
    await scheduled_jobs.reconcile(ctx, body)  # a mirror pass stored it
    assert await _active(ctx, body) is True

    memo = types.SimpleNamespace(context=ctx)
    await handlers.scheduled_job_event(event={"type": "DELETED"}, body=body, memo=memo)

    assert await _active(ctx, body) is False


async def test_a_store_under_way_when_the_deletion_arrives_leaves_it_inactive(
    ctx: context.Context,
) -> None:
    """The mirror read the object, the deletion arrived, then the mirror's upsert ran."""
    body = _body()
    memo = types.SimpleNamespace(context=ctx)
    await handlers.scheduled_job_event(event={"type": "DELETED"}, body=body, memo=memo)
    await scheduled_jobs.reconcile(ctx, body)
    assert await _active(ctx, body) is False


def _job_run() -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {
            "name": "one-off",
            "namespace": "team-a",
            "uid": str(uuid.uuid4()),
            "generation": 1,
            "resourceVersion": "1",
        },
        "spec": {"job": {"handler": {"name": "tests.ok"}}},
    }


async def _run_state(ctx: context.Context, body: dict[str, Any]) -> str | None:
    async with ctx.pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT state FROM job_runs WHERE idempotency_key = %s", (body["metadata"]["uid"],)
        )
        row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def test_a_job_run_deleted_before_the_finalizer_has_its_run_cancelled(
    ctx: context.Context,
) -> None:
    body = _job_run()
    api = ctx.api
    assert isinstance(api, RecordingApi)
    api.put("jobruns", body)
    await job_runs.reconcile(ctx, body)
    assert await _run_state(ctx, body) == "pending"

    api.objects.clear()  # gone at once: no finalizer held it
    memo = types.SimpleNamespace(context=ctx)
    await handlers.job_run_event(event={"type": "DELETED"}, body=body, memo=memo)

    assert await _run_state(ctx, body) == "cancelled"


async def test_a_job_run_gone_while_its_run_is_submitted_has_that_run_cancelled(
    ctx: context.Context,
) -> None:
    """Its DELETED event came before the insert committed; the runId's write finds it gone."""
    body = _job_run()  # never in the API: the status write after the submit gets a 404
    await job_runs.reconcile(ctx, body)
    assert await _run_state(ctx, body) == "cancelled"
