"""The store's error columns hold whatever ``error_text.truncate`` lets through."""

from __future__ import annotations

import re
import uuid

import psycopg
import pytest

from sundial.api import error_text
from sundial.attempt import finishes
from sundial.store import claims, releases, runs
from sundial.store import pool as store_pool

_BOUND = re.compile(r"octet_length\((\w+)\) <= (\d+)")


def test_every_error_column_is_bounded_at_max_error_bytes(store_dsn: str) -> None:
    with psycopg.connect(store_dsn) as conn:
        rows = conn.execute(
            "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE contype = 'c' AND pg_get_constraintdef(oid) LIKE '%%octet_length%%'"
        ).fetchall()
    bounds = {
        (table, column): int(limit)
        for table, definition in rows
        for column, limit in _BOUND.findall(definition)
        if column in ("last_error", "cancel_reason")
    }
    assert ("job_runs", "last_error") in bounds, rows
    assert set(bounds.values()) == {error_text.MAX_ERROR_BYTES}, bounds


@pytest.mark.parametrize("character", ["x", "€", "𝄞"])
async def test_a_long_wide_error_is_stored_cut(
    pool: store_pool.Pool, job: uuid.UUID, character: str
) -> None:
    """Before one limit, 4,000 characters of '€' (12,000 bytes) broke the 8 KiB CHECK."""
    failing = await runs.submit(pool, job)
    released = await runs.submit(pool, job)
    by_id = {run.id: run for run in await claims.claim(pool, "w1", limit=2)}
    error = "Traceback (most recent call last)\n" + character * 20_000 + "\nValueError: boom"
    await claims.finish(pool, "w1", [finishes.failed(by_id[failing.run_id], error)])
    await releases.release(
        pool, "w1", [releases.Release(released.run_id, by_id[released.run_id].attempt, 0.0, error)]
    )
    for run_id in (failing.run_id, released.run_id):
        info = await runs.get(pool, run_id)
        assert info is not None and info.last_error is not None
        assert info.last_error.startswith("Traceback") and info.last_error.endswith("boom")
        assert len(info.last_error.encode()) <= error_text.MAX_ERROR_BYTES
