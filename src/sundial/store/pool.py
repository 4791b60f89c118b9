"""Opening the connection pool every store call runs on.

Workers, the operator and the CLI share one way to connect so that settings which matter for
correctness are set once: UTC session time zone (timestamps come back aware and in UTC), and
transactions that the store functions scope themselves (``pool.connection()`` commits on a
clean exit and rolls back on an exception).
"""

from __future__ import annotations

from typing import TypeAlias

from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

__all__ = ["Connection", "Pool", "open_pool"]

Connection: TypeAlias = AsyncConnection[TupleRow]
Pool: TypeAlias = AsyncConnectionPool[Connection]


async def _configure(conn: Connection) -> None:
    await conn.execute("SET TIME ZONE 'UTC'")
    await conn.commit()


async def open_pool(
    dsn: str, *, min_size: int = 1, max_size: int = 4, name: str = "sundial"
) -> Pool:
    """Open and return a pool; close it with ``await pool.close()``."""
    pool: Pool = AsyncConnectionPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        name=name,
        configure=_configure,
        open=False,
    )
    await pool.open(wait=True)
    return pool
