"""A statement PostgreSQL ends over a lock (a deadlock's victim, a lock timeout) leaves the
store as ``StoreUnavailableError``, which every loop waits out and tries again, saying what
happened: not that PostgreSQL is unreachable."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import psycopg
import pytest

from sundial.store import errors
from sundial.store import pool as store_pool


async def test_a_deadlocks_victim_is_told_it_lost_a_lock(make_database: Callable[..., str]) -> None:
    dsn = make_database()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE rows (id int PRIMARY KEY); INSERT INTO rows VALUES (1), (2)")
    pool = await store_pool.open_pool(dsn, min_size=2, max_size=2)
    both_hold = asyncio.Barrier(2)

    async def lock(first: int, then: int) -> None:
        async with pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT 1 FROM rows WHERE id = %s FOR UPDATE", (first,))
            await both_hold.wait()
            await conn.execute("SELECT 1 FROM rows WHERE id = %s FOR UPDATE", (then,))

    try:
        outcomes = await asyncio.gather(lock(1, 2), lock(2, 1), return_exceptions=True)
    finally:
        await pool.close()
    [lost] = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert isinstance(lost, errors.StoreUnavailableError)
    assert "ended the statement over a lock (DeadlockDetected" in str(lost)
    assert "unreachable" not in str(lost)


async def test_a_lock_timeout_is_told_the_same(make_database: Callable[..., str]) -> None:
    dsn = make_database()
    with psycopg.connect(dsn, autocommit=True) as holder:
        holder.execute("CREATE TABLE rows (id int PRIMARY KEY); INSERT INTO rows VALUES (1)")
        with psycopg.connect(dsn) as held:
            held.execute("SELECT 1 FROM rows WHERE id = 1 FOR UPDATE")
            pool = await store_pool.open_pool(dsn, max_size=1)
            try:
                with pytest.raises(
                    errors.StoreUnavailableError, match=r"over a lock \(LockNotAvailable"
                ):
                    async with pool.connection() as conn, conn.transaction():
                        await conn.execute("SET LOCAL lock_timeout = 100")
                        await conn.execute("SELECT 1 FROM rows WHERE id = 1 FOR UPDATE")
            finally:
                await pool.close()
