"""The operator's lease is renewed while its event loop is busy.

An operator starting beside thousands of objects keeps its event loop busy for seconds at a
time; a renewal that waited for the loop came after a short lease had expired, and the
operator exited. The renewals run on a thread of their own (``Leadership.keep_apart``): here
the loop is blocked for twice the TTL, and the lease must still be held, unexpired, by the
same epoch, with ``lost`` never set. (With the renewals on the event loop, as before, the
lease expired during the first block.)
"""

from __future__ import annotations

import asyncio
import time

import psycopg

from sundial.scheduler import leadership
from sundial.store import pool as store_pool

TTL_SECONDS = 1.5


def _unexpired_epoch(dsn: str) -> int | None:
    """The lease's epoch if it has not expired, read without the event loop."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT epoch FROM leader_leases WHERE name = %s AND expires_at > now()",
            (leadership.LEASE_NAME,),
        ).fetchone()
    return None if row is None else int(row[0])


async def test_the_operator_lease_is_renewed_while_the_event_loop_is_blocked(
    store_dsn: str, pool: store_pool.Pool
) -> None:
    lead = leadership.Leadership(pool, "operator-a", ttl_seconds=TTL_SECONDS)
    stop = asyncio.Event()
    assert await lead.acquire(stop)
    assert lead.lease is not None
    epoch = lead.lease.epoch
    keeper = asyncio.create_task(lead.keep_apart(store_dsn, stop))
    await asyncio.sleep(TTL_SECONDS / 3)
    try:
        for _ in range(2):
            time.sleep(TTL_SECONDS)  # noqa: ASYNC251 - the point: nothing on this loop runs
            assert _unexpired_epoch(store_dsn) == epoch, "the lease expired under a live leader"
        await asyncio.sleep(TTL_SECONDS)
        assert not lead.lost.is_set()
        assert lead.lease.epoch == epoch
    finally:
        stop.set()
        await asyncio.wait_for(keeper, timeout=10)
    assert not lead.lost.is_set()


async def test_a_lease_taken_over_while_kept_apart_is_lost(
    store_dsn: str, pool: store_pool.Pool
) -> None:
    lead = leadership.Leadership(pool, "operator-a", ttl_seconds=TTL_SECONDS)
    stop = asyncio.Event()
    assert await lead.acquire(stop)
    keeper = asyncio.create_task(lead.keep_apart(store_dsn, stop))
    # Another holder takes the lease by force (as after an expiry): the next renewal sees a
    # new epoch, and the keeper must report the lease lost and end.
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE leader_leases SET holder = 'operator-b', epoch = epoch + 1 WHERE name = %s",
            (leadership.LEASE_NAME,),
        )
    await asyncio.wait_for(keeper, timeout=10)
    assert lead.lost.is_set()
    stop.set()


async def test_a_leader_knows_whom_it_took_the_lease_over_from(pool: store_pool.Pool) -> None:
    """What a predecessor left running (its Pods) is the new leader's to adopt."""
    never = asyncio.Event()
    first = leadership.Leadership(pool, "operator-a", ttl_seconds=TTL_SECONDS)
    assert await first.acquire(never)
    assert first.previous is None  # nobody held it before
    await first.resign()
    second = leadership.Leadership(pool, "operator-b", ttl_seconds=TTL_SECONDS)
    assert await second.acquire(never)
    assert second.previous == "operator-a"
    await second.resign()
    again = leadership.Leadership(pool, "operator-b", ttl_seconds=TTL_SECONDS)
    assert await again.acquire(never)
    assert again.previous is None  # a restart under its own name takes its own back
