"""Opening the connection pool every store call runs on.

Workers, the operator and the CLI share one way to connect so that settings which matter for
correctness are set once: UTC session time zone (timestamps come back aware and in UTC), and
autocommit, so a one-statement call (claim, heartbeat) costs one round trip while calls that
write several statements scope their own ``conn.transaction()``.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

import psycopg.types.json
from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

__all__ = ["Connection", "Pool", "open_pool"]

Connection: TypeAlias = AsyncConnection[TupleRow]
Pool: TypeAlias = AsyncConnectionPool[Connection]


def _load_json(data: str | bytes) -> Any:
    # json.loads on bytes first sniffs the encoding; PostgreSQL always sends UTF-8.
    return json.loads(data if isinstance(data, str) else str(data, "utf-8"))


async def _configure(conn: Connection) -> None:
    await conn.execute("SET TIME ZONE 'UTC'")
    psycopg.types.json.set_json_loads(_load_json, conn)


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
        # A single statement is its own transaction: one round trip, no BEGIN/COMMIT. Store
        # functions that write more than once open ``conn.transaction()`` explicitly.
        kwargs={"autocommit": True},
        open=False,
    )
    await pool.open(wait=True)
    return pool
