"""Leader leases: one holder at a time for the trigger loop and maintenance, by database time.

A lease is a row (name, holder, epoch, expires_at). The holder renews before ``expires_at``;
if it stops, anyone may take the lease once it expired, and the epoch grows. Code that acts as
leader should be correct with two leaders anyway (fires are deduplicated by a unique key);
the epoch lets it fence its own writes when that matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from sundial.store import queries
from sundial.store.pool import Pool, store_error

__all__ = ["BlockingLeases", "LeaderLease", "acquire", "holder", "last_holder", "resign"]


@dataclass(frozen=True)
class LeaderLease:
    name: str
    holder: str
    epoch: int
    expires_at: datetime


async def acquire(pool: Pool, name: str, holder: str, *, ttl_seconds: float) -> LeaderLease | None:
    """Take or renew ``name`` for ``ttl_seconds``; ``None`` while another holder has it."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("acquire_leader_lease"),
            {"name": name, "holder": holder, "ttl_seconds": float(ttl_seconds)},
        )
        row = await cursor.fetchone()
    return None if row is None else LeaderLease(name, holder, row[0], row[1])


async def resign(pool: Pool, lease: LeaderLease) -> bool:
    """Give the lease up early so a successor need not wait; False if it was already lost."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("resign_leader_lease"),
            {"name": lease.name, "holder": lease.holder, "epoch": lease.epoch},
        )
        return cursor.rowcount == 1


async def last_holder(pool: Pool, name: str) -> str | None:
    """Who held ``name`` last, whether or not the lease has expired; ``None``: nobody ever."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("lease_last_holder"), {"name": name})
        row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def holder(pool: Pool, name: str) -> LeaderLease | None:
    """Who holds ``name`` now by the database clock, without renewing it; ``None``: nobody."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("lease_holder"), {"name": name})
        row = await cursor.fetchone()
    return None if row is None else LeaderLease(name, row[0], row[1], row[2])


class BlockingLeases:
    """``acquire`` on a blocking connection of its own, for a thread that renews a lease
    whatever the event loop beside it is doing (the operator's, ``scheduler.leadership``):
    a blocking statement takes the GIL a few times, not at every turn of an event loop.
    The connection is opened at the first call, and again after a failed one."""

    def __init__(self, dsn: str, *, connect_timeout_seconds: int = 5) -> None:
        self._dsn = dsn
        self._connect_timeout_seconds = connect_timeout_seconds
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None

    def acquire(self, name: str, holder: str, *, ttl_seconds: float) -> LeaderLease | None:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(
                    self._dsn, autocommit=True, connect_timeout=self._connect_timeout_seconds
                )
            row = self._conn.execute(
                queries.get("acquire_leader_lease"),
                {"name": name, "holder": holder, "ttl_seconds": float(ttl_seconds)},
            ).fetchone()
        except psycopg.Error as error:
            self.close()
            raise store_error(error) from error
        if row is None:
            return None
        epoch, expires_at = row
        assert isinstance(epoch, int) and isinstance(expires_at, datetime)
        return LeaderLease(name, holder, epoch, expires_at)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
