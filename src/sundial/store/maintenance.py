"""Keeping the hot table small: archive finished runs to month partitions; drop old months.

``archive_finished`` moves terminal runs (after a grace period, so the status mirror can still
find them cheaply) from ``job_runs`` to ``finished_runs``, a table partitioned by month of
``finished_at``. Retention is then ``drop_partitions_before``: dropping a month is instant and
leaves no dead tuples, where a large DELETE would bloat the table. Fire keys and idempotency
keys are NOT dropped with their runs, so a fire or a submit is never repeated.
"""

from __future__ import annotations

from datetime import datetime

from sundial.store.pool import Pool

__all__ = ["archive_finished", "drop_partitions_before", "ensure_partitions"]


async def ensure_partitions(pool: Pool, *, months_ahead: int = 2) -> None:
    """Create this month's partitions and the next ``months_ahead`` months' (idempotent)."""
    async with pool.connection() as conn:
        await conn.execute(
            "SELECT sundial_ensure_month_partition(now() + make_interval(months => m))"
            " FROM generate_series(0, %(ahead)s) AS m",
            {"ahead": months_ahead},
        )


async def archive_finished(
    pool: Pool, *, older_than_seconds: float = 60.0, batch_size: int = 5000
) -> int:
    """Move up to ``batch_size`` runs finished longer than ``older_than_seconds`` ago."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT sundial_archive_finished_runs(make_interval(secs => %(older)s), %(batch)s)",
            {"older": float(older_than_seconds), "batch": batch_size},
        )
        row = await cursor.fetchone()
    return 0 if row is None else int(row[0])


async def drop_partitions_before(pool: Pool, cutoff: datetime) -> list[str]:
    """Drop every history partition whose month ends on or before ``cutoff``."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT sundial_drop_partitions_before(%(cutoff)s)", {"cutoff": cutoff}
        )
        return [row[0] for row in await cursor.fetchall()]
