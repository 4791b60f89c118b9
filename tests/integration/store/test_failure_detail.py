"""A failure's detail is stored next to its class, survives archiving, and is cleared when
something other than a worker's finish ends or requeues the run."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import psycopg
import pytest

from sundial.attempt import finishes
from sundial.scheduling.failures import FailureClass
from sundial.store import claims, errors, history, maintenance, migrate, runs
from sundial.store import pool as store_pool


async def test_the_detail_is_kept_live_and_archived(pool: store_pool.Pool, job: uuid.UUID) -> None:
    submitted = await runs.submit(pool, job)
    [run] = await claims.claim(pool, "w")
    outcome = finishes.failed(run, "bad args", FailureClass.PERMANENT, detail="BadArgs")
    done = await claims.finish(pool, "w", [outcome])
    assert done.states == {run.id: "failed"}
    live = await runs.get(pool, submitted.run_id)
    assert live is not None and (live.failure_reason, live.failure_detail) == (
        "permanent",
        "BadArgs",
    )
    await maintenance.ensure_partitions(pool)
    assert await maintenance.archive_finished(pool, older_than_seconds=0) == 1
    archived = await runs.get(pool, submitted.run_id)
    assert archived is not None and archived.archived
    assert (archived.failure_reason, archived.failure_detail) == ("permanent", "BadArgs")
    [listed] = await history.recent(pool)
    assert (listed.failure_reason, listed.failure_detail) == ("permanent", "BadArgs")


async def test_a_cancel_clears_the_detail_of_an_earlier_attempt(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    submitted = await runs.submit(pool, job)
    [run] = await claims.claim(pool, "w")
    outcome = finishes.failed(run, "boom", FailureClass.ERROR, detail="HandlerError")
    assert (await claims.finish(pool, "w", [outcome])).states == {run.id: "retry_wait"}
    await runs.cancel(pool, submitted.run_id, reason="cancelled: test")
    info = await runs.get(pool, submitted.run_id)
    assert info is not None and (info.state, info.failure_reason, info.failure_detail) == (
        "cancelled",
        "cancelled",
        None,
    )


def test_0110_refuses_to_revert_a_change_it_does_not_know(
    make_database: Callable[..., str],
) -> None:
    """0110 rewrites two functions from their earlier bodies; a change merged in between must
    fail the migration loudly rather than be reverted."""
    dsn = make_database()
    migrate.migrate(dsn, target=109)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION sundial_archive_finished_runs("
            "older_than interval, batch_size integer) RETURNS integer"
            " LANGUAGE sql AS $$ SELECT 0 $$"
        )
    with pytest.raises(errors.MigrationError, match="merge the other migration's change"):
        migrate.migrate(dsn)
