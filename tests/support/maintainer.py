"""Helpers for the maintainer tests: runs written straight into the hot table in any state,
finished any time ago by the database clock, and the history partitions as they are."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import psycopg

ACTIVE = ("scheduled", "blocked", "pending", "running", "retry_wait")
FINISHED = ("completed", "failed", "timed_out", "cancelled", "dead_lettered")
HOLDER = "maintainer-test"


def insert_run(
    dsn: str,
    job: uuid.UUID,
    state: str,
    *,
    finished_ago: timedelta | None = None,
    run_at_in: timedelta = timedelta(0),
    lease_in: timedelta = timedelta(seconds=30),
    queue: str = "default",
) -> int:
    """One run of ``job`` in ``state``; an ended one finished ``finished_ago`` before the
    database's now, a running one holds a lease that ends ``lease_in`` from now."""
    assert (state in FINISHED) == (finished_ago is not None), state
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds, state,
                                  priority, run_at, dispatch_key, attempt, lease_owner,
                                  lease_until, pending_dependencies, started_at, finished_at)
            SELECT %(job)s, %(queue)s, 'handlers.job', 'async', 60, 3, 0, 0, %(state)s, 1,
                   now() + %(run_at_in)s::interval,
                   sundial_dispatch_key(now() + %(run_at_in)s::interval, 1::smallint),
                   CASE WHEN %(state)s = 'running' THEN 1 ELSE 0 END,
                   CASE WHEN %(state)s = 'running' THEN 'gone-worker' END,
                   CASE WHEN %(state)s = 'running' THEN now() + %(lease_in)s::interval END,
                   CASE WHEN %(state)s = 'blocked' THEN 1 ELSE 0 END,
                   CASE WHEN %(state)s IN ('running', 'completed', 'failed', 'timed_out',
                                           'dead_lettered') THEN now() - interval '1 second' END,
                   now() - %(finished_ago)s::interval
            RETURNING id
            """,
            {
                "job": job,
                "queue": queue,
                "state": state,
                "run_at_in": run_at_in,
                "lease_in": lease_in,
                "finished_ago": finished_ago,
            },
        ).fetchone()
    assert row is not None
    return int(row[0])


def hot_ids(dsn: str) -> set[int]:
    with psycopg.connect(dsn) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM job_runs").fetchall()}


def archived_ids(dsn: str) -> set[int]:
    with psycopg.connect(dsn) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM finished_runs").fetchall()}


def states(dsn: str) -> dict[int, str]:
    with psycopg.connect(dsn) as conn:
        return dict(conn.execute("SELECT id, state FROM job_runs").fetchall())


def month_start(moment: datetime, months: int = 0) -> datetime:
    """The first instant (UTC) of the month ``months`` after ``moment``'s."""
    index = moment.astimezone(UTC).year * 12 + moment.astimezone(UTC).month - 1 + months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def create_partition(dsn: str, month: datetime) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT sundial_ensure_month_partition(%s)", (month,))


def partition_months(dsn: str) -> dict[str, set[datetime]]:
    """Parent table -> the months of its attached partitions."""
    found: dict[str, set[datetime]] = {"finished_runs": set(), "job_run_attempts": set()}
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT p.relname, c.relname FROM pg_inherits i"
            " JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent"
            " WHERE p.relname IN ('finished_runs', 'job_run_attempts')"
        ).fetchall()
    for parent, name in rows:
        suffix = name.rsplit("_", 1)[1]
        found[parent].add(datetime(int(suffix[:4]), int(suffix[4:]), 1, tzinfo=UTC))
    return found
