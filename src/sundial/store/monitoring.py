"""The queries behind the monitoring table.

Each function reads, never writes, and covers live and archived runs where it matters; the
observability layer turns the results into Prometheus metrics. Windows are measured on the
database clock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sundial.scheduling.run_state import RunState, coerce_state
from sundial.store import queries
from sundial.store.pool import Pool

__all__ = [
    "PendingDepth",
    "ScheduleLag",
    "attempts_per_completed_run",
    "failed_attempts_by_reason",
    "finished_runs_by_job",
    "finished_runs_by_job_name",
    "lease_expiries",
    "pending_depth",
    "schedule_lag",
]


@dataclass(frozen=True)
class ScheduleLag:
    """started_at - run_at, in seconds: the SLO metric. Rising lag means too few workers."""

    runs: int
    p50_seconds: float | None
    p99_seconds: float | None


@dataclass(frozen=True)
class PendingDepth:
    queue: str
    priority: int
    state: RunState
    runs: int

    def __post_init__(self) -> None:
        coerce_state(self)


async def schedule_lag(pool: Pool, *, window_seconds: float = 300.0) -> ScheduleLag:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("schedule_lag"), {"window_seconds": float(window_seconds)}
        )
        row = await cursor.fetchone()
    assert row is not None
    return ScheduleLag(int(row[0]), row[1], row[2])


async def pending_depth(pool: Pool, *, hot: Any = None) -> list[PendingDepth]:
    """The backlog by queue, priority and waiting state. ``hot``: the hot queue's Redis
    client, where the database's hot queue is on: the runs a claimer holds there are pending
    in the record while they run, and are left out (an autoscaler reading the backlog would
    otherwise count every run in flight as waiting)."""
    async with pool.connection() as conn:
        held: list[int] | None = None
        if hot is not None:
            from sundial.store.hot_queue import overlay

            held = sorted(await overlay.held_anywhere(conn, hot))
        cursor = await conn.execute(queries.get("pending_depth"), {"held": held})
        return [PendingDepth(*row) for row in await cursor.fetchall()]


async def finished_runs_by_job(
    pool: Pool, *, window_seconds: float = 3600.0
) -> dict[tuple[uuid.UUID, str], int]:
    """(job id, state it ended in) -> runs that ended in the window: error rate, poison jobs."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("finished_runs_by_job"), {"window_seconds": float(window_seconds)}
        )
        return {(row[0], row[1]): int(row[2]) for row in await cursor.fetchall()}


async def finished_runs_by_job_name(
    pool: Pool, *, window_seconds: float = 3600.0
) -> dict[tuple[str, str, str], int]:
    """(namespace, job name, state it ended in) -> runs that ended in the window: the names a
    metric label can carry (a job id means nothing on a dashboard)."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("finished_runs_by_job_name"), {"window_seconds": float(window_seconds)}
        )
        return {(row[0], row[1], row[2]): int(row[3]) for row in await cursor.fetchall()}


async def failed_attempts_by_reason(
    pool: Pool, *, window_seconds: float = 3600.0
) -> dict[str, int]:
    """failure reason -> attempts that failed with it in the window."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("failed_attempts_by_reason"), {"window_seconds": float(window_seconds)}
        )
        return {str(row[0]): int(row[1]) for row in await cursor.fetchall()}


async def attempts_per_completed_run(
    pool: Pool, *, window_seconds: float = 3600.0
) -> dict[int, int]:
    """attempt number -> completed runs that needed it: the flakiness of dependencies."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("attempts_per_completed_run"), {"window_seconds": float(window_seconds)}
        )
        return {int(row[0]): int(row[1]) for row in await cursor.fetchall()}


async def lease_expiries(pool: Pool, *, window_seconds: float = 3600.0) -> int:
    """Leases that ran out in the window: worker crashes or long pauses."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("lease_expiries"), {"window_seconds": float(window_seconds)}
        )
        row = await cursor.fetchone()
    return 0 if row is None else int(row[0])
