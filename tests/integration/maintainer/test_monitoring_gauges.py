"""The monitoring table of docs/operations.md as gauges: read from PostgreSQL by the leading
maintainer alone, over a sliding window, with bounded labels, and dropped when this process
stops leading."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from prometheus_client import REGISTRY

from sundial.observability import maintainer_metrics
from sundial.scheduler import maintainer, trigger
from sundial.scheduling import clock as clocks
from sundial.store import leases, maintenance
from sundial.store import pool as store_pool
from support.maintainer import HOLDER, insert_run
from support.store import create_job


def _finished(namespace: str, name: str, state: str) -> float | None:
    return REGISTRY.get_sample_value(
        "sundial_window_finished_runs", {"namespace": namespace, "name": name, "state": state}
    )


def _attempt(dsn: str, run: int, attempt: int, reason: str | None) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE job_runs SET attempt = %s WHERE id = %s", (attempt, run))
        conn.execute(
            "INSERT INTO job_run_attempts (run_id, attempt, worker, started_at, ended_at,"
            " outcome, failure_reason) VALUES (%s, %s, 'w', now() - interval '2 seconds',"
            " now() - interval '1 second', %s, %s)",
            (run, attempt, "failed" if reason else "completed", reason),
        )


async def _leader(pool: store_pool.Pool, holder: str = HOLDER) -> maintainer.Maintainer:
    clock = clocks.ManualClock(datetime.now(UTC))
    settings = maintainer.MaintainerSettings(archive_retention=None)
    keeper = maintainer.Maintainer(pool, holder=holder, clock=clock, settings=settings)
    assert await leases.acquire(pool, trigger.LEASE_NAME, holder, ttl_seconds=60) is not None
    return keeper


async def test_the_leader_exports_the_window_by_job_reason_and_attempts(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    await maintenance.ensure_partitions(pool, months_ahead=1)  # for the attempts written
    nightly = create_job(store_dsn, "nightly")
    minute = timedelta(minutes=1)
    for _ in range(2):
        _attempt(
            store_dsn, insert_run(store_dsn, nightly, "completed", finished_ago=minute), 1, None
        )
    flaky = insert_run(store_dsn, nightly, "completed", finished_ago=minute)
    _attempt(store_dsn, flaky, 12, None)
    dead = insert_run(store_dsn, nightly, "dead_lettered", finished_ago=minute)
    _attempt(store_dsn, dead, 4, "lease_expired")
    failed = insert_run(store_dsn, job, "failed", finished_ago=minute)
    _attempt(store_dsn, failed, 1, "exception")
    insert_run(store_dsn, job, "pending", queue="gauged")
    # Outside the window: counted nowhere.
    insert_run(store_dsn, job, "timed_out", finished_ago=timedelta(hours=2))

    keeper = await _leader(pool)
    report = await keeper.step()
    assert "monitor" in report.ran and report.failed == ()

    assert REGISTRY.get_sample_value("sundial_window_seconds") == 3600
    assert _finished("default", "nightly", "completed") == 3
    assert _finished("default", "nightly", "dead_lettered") == 1
    assert _finished("default", "job", "failed") == 1
    assert _finished("default", "job", "timed_out") is None
    reasons = {
        reason: REGISTRY.get_sample_value("sundial_window_failed_attempts", {"reason": reason})
        for reason in ("exception", "lease_expired")
    }
    assert reasons == {"exception": 1, "lease_expired": 1}
    by_attempts = {
        attempts: REGISTRY.get_sample_value(
            "sundial_window_completed_runs_by_attempts", {"attempts": attempts}
        )
        for attempts in ("1", "10+")
    }
    assert by_attempts == {"1": 2, "10+": 1}
    assert REGISTRY.get_sample_value("sundial_window_lease_expiries") == 1
    pending = {"queue": "gauged", "priority": "1", "state": "pending"}
    assert REGISTRY.get_sample_value("sundial_pending_runs", pending) == 1

    # Another process takes the lease: this one no longer speaks for the database.
    with psycopg.connect(store_dsn) as conn:
        conn.execute("UPDATE leader_leases SET expires_at = now() - interval '1 second'")
    assert await leases.acquire(pool, trigger.LEASE_NAME, "other", ttl_seconds=60) is not None
    assert not (await keeper.step()).leading
    assert _finished("default", "nightly", "completed") is None
    assert REGISTRY.get_sample_value("sundial_window_lease_expiries") is None
    assert REGISTRY.get_sample_value("sundial_pending_runs", pending) is None


async def test_jobs_past_the_cap_are_summed_under_other(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintainer_metrics, "MAX_JOB_SERIES", 1)
    busiest = create_job(store_dsn, "busiest")
    quiet = create_job(store_dsn, "quiet")
    minute = timedelta(minutes=1)
    for _ in range(3):
        insert_run(store_dsn, busiest, "completed", finished_ago=minute)
    insert_run(store_dsn, quiet, "failed", finished_ago=minute)
    insert_run(store_dsn, job, "completed", finished_ago=minute)

    await (await _leader(pool)).step()
    assert _finished("default", "busiest", "completed") == 3
    assert _finished("default", "quiet", "failed") is None
    assert _finished("", "(other)", "failed") == 1
    assert _finished("", "(other)", "completed") == 1
