"""A ScheduledJob applied under a name a job defined from Python already holds in the namespace
cannot be stored (one active definition owns a name). It becomes Stalled with reason NameTaken,
a Warning Event says what to do, nothing is stored and the client's job is untouched; renamed,
it is stored. A name still held by a deleted ScheduledJob's schedule is waited for instead:
once that one is deactivated, the next try stores it. Real PostgreSQL; the Kubernetes side
only records."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sundial import client as sundial_client
from sundial.operator import context, events, scheduled_jobs, status
from sundial.scheduling import clock
from sundial.store import errors as store_errors
from sundial.store import pool as store_pool
from sundial.store import schedules
from support.recording_api import RecordingApi

NOW = datetime.datetime(2026, 12, 4, 9, 0, tzinfo=datetime.UTC)


@pytest.fixture
async def ctx(store_dsn: str) -> AsyncIterator[context.Context]:
    pool = await store_pool.open_pool(store_dsn, min_size=1, max_size=2)
    api = RecordingApi()
    manual = clock.ManualClock(NOW)
    try:
        yield context.Context(pool, api, events.EventRecorder(api, manual), manual)
    finally:
        await pool.close()


def scheduled(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": str(uuid.uuid4()),
            "generation": 1,
        },
        "spec": {"schedule": "*/5 * * * *", "handler": {"name": "reports.build"}},
    }


def stalled(ctx: context.Context, body: dict[str, Any]) -> dict[str, Any]:
    reason, problem = ctx.unstorable[body["metadata"]["uid"]]
    result = status.scheduled_job_status(
        body,
        spec_error=problem,
        spec_error_reason=reason,
        schedule=None,
        window=None,
        missed=None,
        now=NOW,
    )
    [condition] = [c for c in result["conditions"] if c["type"] == "Stalled"]
    return condition


async def test_a_name_defined_from_python_stalls_the_scheduled_job(
    ctx: context.Context, store_dsn: str
) -> None:
    async with sundial_client.Client(store_dsn) as python:
        job_id = await python.define_job("team-a", "nightly", handler="reports.build")
    body = scheduled("nightly")

    await scheduled_jobs.reconcile_once(ctx, body)  # does not raise, and is not retried
    await ctx.recorder.flush()

    assert await schedules.get(ctx.pool, uuid.UUID(body["metadata"]["uid"])) is None
    assert await schedules.active_job_id(ctx.pool, "team-a", "nightly") == job_id
    condition = stalled(ctx, body)
    assert (condition["status"], condition["reason"]) == ("True", "NameTaken")
    assert (
        "the job name 'nightly' in namespace 'team-a' belongs to another active job"
        in (condition["message"])
    )
    assert "give this ScheduledJob another name" in condition["message"]
    recorded = ctx.api.events  # type: ignore[attr-defined]
    assert [(e.event_type, e.reason) for e in recorded] == [("Warning", "NameTaken")]
    assert ctx.reconciled[body["metadata"]["uid"]] == 1

    renamed = scheduled("nightly-report")
    await scheduled_jobs.reconcile_once(ctx, renamed)
    assert await schedules.get(ctx.pool, uuid.UUID(renamed["metadata"]["uid"])) is not None
    assert renamed["metadata"]["uid"] not in ctx.unstorable


async def test_a_name_held_by_a_deleted_scheduled_jobs_schedule_is_waited_for(
    ctx: context.Context,
) -> None:
    old, new = scheduled("hourly"), scheduled("hourly")
    await scheduled_jobs.reconcile_once(ctx, old)

    with pytest.raises(store_errors.NameTakenError) as raised:
        await scheduled_jobs.reconcile_once(ctx, new)
    assert raised.value.by_schedule
    assert new["metadata"]["uid"] not in ctx.reconciled  # the next pass tries again
    assert new["metadata"]["uid"] not in ctx.unstorable  # and it is not reported Stalled

    await scheduled_jobs.delete(ctx, old)
    await scheduled_jobs.reconcile_once(ctx, new)
    info = await schedules.get(ctx.pool, uuid.UUID(new["metadata"]["uid"]))
    assert info is not None and info.active
