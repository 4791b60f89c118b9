"""Keeping the hot table small: archive finished runs to month partitions; drop old months.

``archive_finished`` moves finished runs (after the hot window, so recent ones stay in the
table the status mirror and ``sundial runs replay`` read first) from ``job_runs`` to
``finished_runs``, a table partitioned by month of ``finished_at``. Retention is then
``drop_partitions_before``: dropping a month is instant and leaves no dead tuples, where a large
DELETE would bloat the table. Fire keys and idempotency keys are not dropped with their runs:
``expire_keys`` deletes them on their own retention (docs/adr/0034-key-retention.md), after a
window longer than any repeat of a fire or a submit they guard against, and never while their
run is still in the hot table.

Every call is bounded: ``archive_finished`` moves at most ``batch_size`` rows in one
transaction (migration 0100), ``expire_keys`` deletes at most ``batch_size`` keys of each kind
in one statement each (migration 0170's index on ``created_at``), and
``drop_partitions_before`` drops each partition in its own short transaction with a lock
timeout, so a backlog or a busy history reader never turns into a long lock.
``sundial.scheduler.maintainer`` calls them on schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from psycopg import errors as pg_errors

from sundial.store import queries
from sundial.store.pool import Pool

__all__ = [
    "DroppedPartitions",
    "ExpiredKeys",
    "archive_finished",
    "drop_partitions_before",
    "ensure_partitions",
    "expire_keys",
    "partitions",
]

#: How long a DROP waits for its lock on the history table before it gives up until the next
#: pass: while it waits, readers of that table queue behind it.
DROP_LOCK_TIMEOUT_MS = 2000


@dataclass(frozen=True)
class DroppedPartitions:
    """What one ``drop_partitions_before`` did: the partitions dropped, oldest first, and
    those left because their lock was not granted in time (a later call retries them)."""

    dropped: tuple[str, ...] = ()
    busy: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExpiredKeys:
    """What one ``expire_keys`` deleted: idempotency keys and schedule fire keys."""

    idempotency_keys: int = 0
    schedule_fires: int = 0


async def ensure_partitions(
    pool: Pool, *, months_ahead: int = 2, now: datetime | None = None
) -> None:
    """Create the partitions of ``now``'s month (default: the database's) and of the next
    ``months_ahead`` months (idempotent)."""
    async with pool.connection() as conn:
        await conn.execute(
            "SELECT sundial_ensure_month_partition("
            "coalesce(%(now)s::timestamptz, now()) + make_interval(months => m))"
            " FROM generate_series(0, %(ahead)s) AS m",
            {"ahead": months_ahead, "now": now},
        )


async def archive_finished(
    pool: Pool, *, older_than_seconds: float = 60.0, batch_size: int = 5000
) -> int:
    """Move up to ``batch_size`` runs finished longer than ``older_than_seconds`` ago (by the
    database clock, which wrote ``finished_at``); return how many moved."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT sundial_archive_finished_runs(make_interval(secs => %(older)s), %(batch)s)",
            {"older": float(older_than_seconds), "batch": batch_size},
        )
        row = await cursor.fetchone()
    return 0 if row is None else int(row[0])


async def expire_keys(
    pool: Pool, *, older_than_seconds: float, batch_size: int = 5000
) -> ExpiredKeys:
    """Delete up to ``batch_size`` idempotency keys and up to ``batch_size`` fire keys written
    longer than ``older_than_seconds`` ago (by the database clock, which wrote ``created_at``)
    whose run has left ``job_runs``, oldest first, each kind in one short statement.

    A submission with a deleted key makes a new run, and so would a fire whose key is gone if it
    were fired again: the window must be longer than any retry of a submission (see
    ``MaintainerSettings.key_retention``)."""
    params = {"older": timedelta(seconds=float(older_than_seconds)), "batch": batch_size}
    async with pool.connection() as conn:  # autocommit: one transaction per statement
        keys = await conn.execute(queries.get("expire_idempotency_keys"), params)
        fire_keys = await conn.execute(queries.get("expire_schedule_fires"), params)
        return ExpiredKeys(keys.rowcount, fire_keys.rowcount)


async def drop_partitions_before(
    pool: Pool, cutoff: datetime, *, limit: int = 24
) -> DroppedPartitions:
    """Drop up to ``limit`` history partitions whose month ends on or before ``cutoff``,
    oldest first, one transaction each. A partition whose lock is not granted within
    ``DROP_LOCK_TIMEOUT_MS`` is left for a later call and reported in ``busy``."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("expired_partitions"), {"cutoff": cutoff, "limit": limit}
        )
        expired = [(str(row[0]), str(row[1])) for row in await cursor.fetchall()]
    dropped: list[str] = []
    busy: list[str] = []
    for name, _parent in expired:
        async with pool.connection() as conn:
            try:
                async with conn.transaction():
                    await conn.execute(f"SET LOCAL lock_timeout = {DROP_LOCK_TIMEOUT_MS}")
                    # As the owner: the maintainer's own role may not drop tables.
                    await conn.execute("SELECT sundial_drop_month_partition(%s)", (name,))
            except pg_errors.LockNotAvailable:
                busy.append(name)
                continue
        dropped.append(name)
    return DroppedPartitions(tuple(dropped), tuple(busy))


async def partitions(pool: Pool) -> list[str]:
    """The names of every month partition of the history tables."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("history_partitions"))
        return [str(row[0]) for row in await cursor.fetchall()]
