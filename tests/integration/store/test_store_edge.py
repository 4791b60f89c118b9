"""psycopg's errors stop at the store's edge: a caller sees store errors only."""

from __future__ import annotations

import socket
import uuid

import psycopg
import pytest
from click.testing import CliRunner

from sundial import cli
from sundial.store import errors, runs
from sundial.store import pool as store_pool


async def test_a_dropped_connection_is_store_unavailable(pool: store_pool.Pool) -> None:
    with pytest.raises(errors.StoreUnavailableError) as raised:
        async with pool.connection() as conn:
            await conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)
    async with pool.connection() as conn:  # the pool replaces the connection
        cursor = await conn.execute("SELECT 1")
        assert await cursor.fetchone() == (1,)


async def test_a_refused_statement_is_a_statement_error(pool: store_pool.Pool) -> None:
    with pytest.raises(errors.StatementError, match="CheckViolation") as raised:
        async with pool.connection() as conn:
            await conn.execute("INSERT INTO idempotency_keys VALUES ('', 'h', 1)")
    assert isinstance(raised.value.__cause__, psycopg.errors.CheckViolation)


async def test_no_such_run_and_not_replayable_are_different_errors(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    pending = await runs.submit(pool, job)
    with pytest.raises(errors.RunNotReplayableError, match="it is pending"):
        await runs.replay(pool, pending.run_id)
    with pytest.raises(errors.NoSuchRunError, match="there is no run 999999"):
        await runs.replay(pool, 999_999)
    with pytest.raises(errors.NoSuchRunError):
        await runs.cancel(pool, 999_999)


def test_sundial_migrate_says_when_postgres_is_unreachable() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = CliRunner().invoke(
        cli.main, ["migrate", "--dsn", f"postgresql://127.0.0.1:{port}/sundial?connect_timeout=2"]
    )
    assert result.exit_code == 1, result.output
    assert "Error: PostgreSQL is unreachable (OperationalError: " in result.output
