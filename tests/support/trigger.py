"""Helpers shared by the trigger tests (imported by their conftest, tests and child processes)."""

from __future__ import annotations

import io
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from sundial.api import scheduled_job
from sundial.scheduler import trigger
from sundial.scheduling import cron, spread
from sundial.store import pool as store_pool
from sundial.store import schedules

#: A Monday, 10:00 UTC: every test starts here unless it needs a particular date.
START = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)

#: No budget: tests of policies want the spread run_at untouched.
UNPACED = trigger.TriggerSettings(fires_per_second=None)


def spec(schedule: str = "* * * * *", **fields: Any) -> scheduled_job.ScheduledJobSpec:
    """A ScheduledJob spec for a no-op handler; ``fields`` in snake_case override."""
    return scheduled_job.ScheduledJobSpec.model_validate(
        {"schedule": schedule, "handler": {"name": "handlers.noop"}, **fields}
    )


async def add_schedule(
    pool: store_pool.Pool,
    now: datetime,
    schedule: str = "* * * * *",
    *,
    name: str | None = None,
    **fields: Any,
) -> uuid.UUID:
    """Upsert a ScheduledJob as the operator would; returns its uid (= schedule id)."""
    uid = uuid.uuid4()
    result = await schedules.upsert(
        pool,
        uid=uid,
        namespace="default",
        name=name or f"job-{uid.hex[:10]}",
        generation=1,
        spec=spec(schedule, **fields),
        now=now,
    )
    assert result.stalled is None, result.stalled
    return uid


def bulk_schedules(
    dsn: str,
    count: int,
    schedule: str,
    *,
    now: datetime,
    spread_seconds: int = 0,
    concurrency_policy: str = "Forbid",
    time_zone: str = "UTC",
    ids: list[uuid.UUID] | None = None,
    namespace: str = "default",
) -> list[uuid.UUID]:
    """Insert ``count`` jobs and schedules with COPY (thousands in well under a second)."""
    first = cron.parse_schedule(schedule, time_zone).next_fire_after(now)
    ids = ids or [uuid.uuid4() for _ in range(count)]
    jobs = io.StringIO()
    rows = io.StringIO()
    for uid in ids:
        offset = spread.offset_for(uid, spread_seconds) // timedelta(milliseconds=1)
        jobs.write(f"{uid}\t{namespace}\tbulk-{uid.hex}\thandlers.noop\n")
        rows.write(
            f"{uid}\t{uid}\t{schedule}\t{time_zone}\t{first.isoformat()}\t{spread_seconds}\t"
            f"{offset}\t{concurrency_policy}\n"
        )
    with psycopg.connect(dsn) as conn, conn.cursor() as cursor:
        with cursor.copy("COPY job_definitions (id, namespace, name, handler) FROM STDIN") as copy:
            copy.write(jobs.getvalue())
        with cursor.copy(
            "COPY schedules (id, job_id, cron, timezone, next_fire_time, spread_seconds, "
            "spread_offset_ms, concurrency_policy) FROM STDIN"
        ) as copy:
            copy.write(rows.getvalue())
    return ids


def fire_times(dsn: str, schedule_id: uuid.UUID) -> list[datetime]:
    with psycopg.connect(dsn) as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        rows = conn.execute(
            "SELECT fire_time FROM job_runs WHERE schedule_id = %s ORDER BY fire_time",
            (schedule_id,),
        ).fetchall()
    return [row[0] for row in rows]


def run_counts(dsn: str) -> dict[uuid.UUID, int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT schedule_id, count(*) FROM job_runs GROUP BY schedule_id"
        ).fetchall()
    return {row[0]: row[1] for row in rows}
