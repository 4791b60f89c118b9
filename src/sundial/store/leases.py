"""Leader leases: one holder at a time for the trigger loop and maintenance, by database time.

A lease is a row (name, holder, epoch, expires_at). The holder renews before ``expires_at``;
if it stops, anyone may take the lease once it expired, and the epoch grows. Code that acts as
leader should be correct with two leaders anyway (fires are deduplicated by a unique key);
the epoch lets it fence its own writes when that matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sundial.store import queries
from sundial.store.pool import Pool

__all__ = ["LeaderLease", "acquire", "holder", "release"]


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


async def release(pool: Pool, lease: LeaderLease) -> bool:
    """Give the lease up early so a successor need not wait; False if it was already lost."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("release_leader_lease"),
            {"name": lease.name, "holder": lease.holder, "epoch": lease.epoch},
        )
        return cursor.rowcount == 1


async def holder(pool: Pool, name: str) -> LeaderLease | None:
    """Who holds ``name`` now by the database clock, without renewing it; ``None``: nobody."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("lease_holder"), {"name": name})
        row = await cursor.fetchone()
    return None if row is None else LeaderLease(name, row[0], row[1], row[2])
