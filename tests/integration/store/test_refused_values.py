"""The store's backstop: a value PostgreSQL refuses (from a caller that bypassed the models)
is ``RefusedValueError`` after a rollback, not a raw psycopg error; nothing is stored."""

from __future__ import annotations

import datetime
import uuid

import pytest

from sundial.api import common, scheduled_job
from sundial.store import errors, runs, schedules
from sundial.store import pool as store_pool

NOW = datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.UTC)


def unchecked_spec(args: dict[str, object]) -> scheduled_job.ScheduledJobSpec:
    """A valid spec whose args are then set without validation, as a caller bypassing the
    models could (pydantic does not validate plain assignment)."""
    spec = scheduled_job.ScheduledJobSpec(schedule="@daily", handler=common.HandlerSpec(name="h"))
    assert spec.handler is not None
    spec.handler.args = args
    return spec


async def test_a_nul_in_args_is_refused_and_nothing_is_stored(pool: store_pool.Pool) -> None:
    uid = uuid.uuid4()
    with pytest.raises(errors.RefusedValueError) as caught:
        await schedules.upsert(
            pool,
            uid=uid,
            namespace="default",
            name="nul",
            generation=1,
            spec=unchecked_spec({"k": "a\x00b"}),
            now=NOW,
        )
    assert "PostgreSQL refused a value" in str(caught.value)
    assert await schedules.get(pool, uid) is None


async def test_a_nul_in_submitted_args_is_refused(pool: store_pool.Pool) -> None:
    uid = uuid.uuid4()
    await schedules.upsert(
        pool,
        uid=uid,
        namespace="default",
        name="ok",
        generation=1,
        spec=scheduled_job.ScheduledJobSpec(
            schedule="@daily", handler=common.HandlerSpec(name="h")
        ),
        now=NOW,
    )
    with pytest.raises(errors.RefusedValueError):
        await runs.submit(pool, uid, args={"k": "\x00"})
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT count(*) FROM job_runs")
        assert (await cursor.fetchone()) == (0,)
