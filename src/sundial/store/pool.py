"""Opening the connection pool every store call runs on.

Workers, the operator and the CLI share one way to connect so that settings which matter for
correctness are set once: UTC session time zone (timestamps come back aware and in UTC), and
autocommit, so a one-statement call (claim, heartbeat) costs one round trip while calls that
write several statements scope their own ``conn.transaction()``.

It is also the store's edge for errors: whatever psycopg raises inside ``Pool.connection()``
(or while ``open_pool`` waits for its first connection) leaves as a store error, so callers
above the store never import psycopg to know that the database is away::

    psycopg.OperationalError, InterfaceError, PoolTimeout -> errors.StoreUnavailableError
    psycopg.DataError (a NUL, a number out of range)      -> errors.RefusedValueError
    the active-run quota's check violation                -> errors.QuotaExceededError
    InsufficientPrivilege (a login's role lacks a grant)  -> errors.PermissionDeniedError
    any other psycopg.Error (a constraint, a bug)         -> errors.StatementError

``RefusedValueError`` is a refused submission, not a bug: the models refuse such values
first (docs/adr/0015), so it means a caller that bypassed them, and it is reported to them.

Store code that expects a particular psycopg error catches it inside the block, before the
edge sees it. The translation costs one generator frame per connection checkout (a batch of
runs, never one job).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any, TypeAlias

import psycopg
import psycopg.types.json
from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from sundial.store import dsn as dsns
from sundial.store import errors

__all__ = ["UNAVAILABLE", "Connection", "Pool", "check_reachable", "open_pool", "store_error"]

Connection: TypeAlias = AsyncConnection[TupleRow]

#: What psycopg raises when the database is away (``PoolTimeout`` is an OperationalError).
UNAVAILABLE: tuple[type[psycopg.Error], ...] = (psycopg.OperationalError, psycopg.InterfaceError)


# psycopg_pool logs libpq's errors, which can repeat a connection string, on every retry.
for _logger in ("psycopg", "psycopg.pool"):
    logging.getLogger(_logger).addFilter(dsns.LogFilter())


#: A statement ended by a lock, not by the database going away: the deadlock's victim, a lock
#: timeout, a serialization failure (a migration beside serving runners can cause the first).
_LOCK_LOST: tuple[type[psycopg.Error], ...] = (
    psycopg.errors.DeadlockDetected,
    psycopg.errors.LockNotAvailable,
    psycopg.errors.SerializationFailure,
)


#: The name the quota trigger raises its refusal under (migration 0270).
QUOTA_CONSTRAINT = "namespace_quotas_active_runs"


def store_error(error: psycopg.Error, dsn: str = "") -> errors.StoreError:
    """The store error a psycopg error becomes at the edge; never with a password in it."""
    text = dsns.redact(str(error), dsn).strip().splitlines()
    message = f"{type(error).__name__}: {text[0] if text else ''}"
    if isinstance(error, _LOCK_LOST):
        # Also an OperationalError, and as passing: the caller's loop waits and tries again.
        return errors.StoreUnavailableError(
            f"PostgreSQL ended the statement over a lock ({message}); it is tried again"
        )
    if isinstance(error, UNAVAILABLE):
        return errors.StoreUnavailableError(f"PostgreSQL is unreachable ({message})")
    if isinstance(error, psycopg.DataError):
        return errors.RefusedValueError(error.diag.message_primary or message)
    if (
        isinstance(error, psycopg.errors.CheckViolation)
        and error.diag.constraint_name == QUOTA_CONSTRAINT
        and error.diag.message_detail
    ):
        return errors.QuotaExceededError.from_detail(error.diag.message_detail)
    if isinstance(error, psycopg.errors.InsufficientPrivilege):
        return errors.PermissionDeniedError(
            f"PostgreSQL refused a statement: this login may not do it ({message}); connect"
            " with a login whose role is granted it (docs/operations.md, Database roles)"
        )
    return errors.StatementError(f"PostgreSQL refused a statement ({message})")


class Pool(AsyncConnectionPool[Connection]):
    """psycopg's pool, whose connections raise store errors instead of psycopg's."""

    def _dsn_text(self) -> str:
        return self.conninfo if isinstance(self.conninfo, str) else ""

    @contextlib.asynccontextmanager
    async def connection(
        self,
        timeout: float | None = None,  # noqa: ASYNC109 - psycopg_pool's signature, overridden
    ) -> AsyncIterator[Connection]:
        try:
            async with super().connection(timeout) as conn:
                yield conn
        except psycopg.Error as error:
            raise store_error(error, self._dsn_text()) from error


def _load_json(data: str | bytes) -> Any:
    # json.loads on bytes first sniffs the encoding; PostgreSQL always sends UTF-8.
    return json.loads(data if isinstance(data, str) else str(data, "utf-8"))


async def _configure(conn: Connection) -> None:
    # JIT off: the store's statements are short probes, but over a deep backlog their cost
    # estimates pass jit_above_cost, and compiling took 50 ms of a 2 ms claim
    # (docs/adr/0050-claims-under-a-deep-backlog.md).
    await conn.execute("SET TIME ZONE 'UTC'; SET jit = off")
    psycopg.types.json.set_json_loads(_load_json, conn)


async def open_pool(
    dsn: str, *, min_size: int = 1, max_size: int = 4, name: str = "sundial"
) -> Pool:
    """Open and return a pool; close it with ``await pool.close()``."""
    dsns.remember(dsn)
    pool = Pool(
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
    try:
        await pool.open(wait=True)
    except psycopg.Error as error:
        await pool.close()
        # Not chained: libpq's own text may repeat the DSN, password and all.
        raise store_error(error, dsn) from None
    return pool


async def check_reachable(dsn: str, *, timeout_seconds: int = 10) -> None:
    """Connect once, now, and close; raise the store error that says why not.

    A pool that cannot connect only times out ("pool initialization incomplete after 30.0
    sec") and keeps libpq's reason to its log. A command a person runs calls this first, so
    the error names the cause instead: connection refused, no such host, a password refused,
    a database that does not exist."""
    dsns.remember(dsn)
    try:
        conn = await AsyncConnection.connect(dsn, connect_timeout=max(1, timeout_seconds))
    except psycopg.ProgrammingError as error:
        text = dsns.redact(str(error), dsn).strip().splitlines()
        raise errors.InvalidDsnError(
            f"not a libpq connection string or URL ({text[0] if text else type(error).__name__}):"
            " write it like postgresql://USER:PASSWORD@HOST:5432/DATABASE"
        ) from None
    except psycopg.Error as error:
        raise store_error(error, dsn) from None
    await conn.close()
