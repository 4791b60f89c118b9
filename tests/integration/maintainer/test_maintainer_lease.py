"""Only the lease holder's maintainer acts, reaping and promotion are bounded per pass, and it
says in its logs when it leads and when it stands by."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from prometheus_client import REGISTRY

from sundial.scheduler import maintainer, trigger
from sundial.scheduling import clock as clocks
from sundial.store import leases
from sundial.store import pool as store_pool
from support.maintainer import HOLDER, insert_run, states


async def test_only_the_lease_holder_maintains_and_a_successor_takes_over(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sundial.scheduler.maintainer")
    old = insert_run(store_dsn, job, "completed", finished_ago=timedelta(days=1))
    settings = maintainer.MaintainerSettings(archive_retention=None)
    first = maintainer.Maintainer(pool, holder="first", settings=settings)
    second = maintainer.Maintainer(pool, holder="second", settings=settings)

    # Nobody holds the lease: nobody maintains.
    assert not (await first.step()).leading
    assert old in states(store_dsn)

    assert await leases.acquire(pool, trigger.LEASE_NAME, "first", ttl_seconds=60) is not None
    standby = await second.step()
    assert not standby.leading and standby.ran == () and old in states(store_dsn)
    leader = await first.step()
    assert leader.leading and leader.archived == 1 and old not in states(store_dsn)

    # The first holder's lease runs out; the second process's trigger takes it.
    with psycopg.connect(store_dsn) as conn:
        conn.execute("UPDATE leader_leases SET expires_at = now() - interval '1 second'")
    assert await leases.acquire(pool, trigger.LEASE_NAME, "second", ttl_seconds=60) is not None
    newer = insert_run(store_dsn, job, "failed", finished_ago=timedelta(days=1))
    assert not (await first.step()).leading
    taken = await second.step()
    assert taken.leading and taken.archived == 1 and newer not in states(store_dsn)

    said = [(r.name, r.getMessage(), getattr(r, "holder", None)) for r in caplog.records]
    logger = "sundial.scheduler.maintainer"
    assert (logger, "maintainer standing by", "second") in said
    assert (logger, "maintainer leading", "first") in said
    assert (logger, "maintainer standing by: the lease moved", "first") in said
    assert (logger, "maintainer leading", "second") in said


async def test_expired_leases_are_reaped_and_due_runs_promoted_in_bounded_passes(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    expired = {
        insert_run(store_dsn, job, "running", lease_in=-timedelta(seconds=5)) for _ in range(7)
    }
    alive = insert_run(store_dsn, job, "running", lease_in=timedelta(minutes=5))
    due = {
        insert_run(store_dsn, job, state, run_at_in=-timedelta(seconds=1))
        for state in ("scheduled", "retry_wait", "scheduled", "retry_wait", "scheduled")
    }
    later = insert_run(store_dsn, job, "scheduled", run_at_in=timedelta(hours=1))
    clock = clocks.ManualClock(datetime.now(UTC))
    settings = maintainer.MaintainerSettings(
        reap_batch=2, promote_batch=1, max_batches_per_pass=2, archive_retention=None
    )
    keeper = maintainer.Maintainer(pool, holder=HOLDER, clock=clock, settings=settings)
    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=60) is not None

    reaped, promoted = [], []
    for _ in range(5):  # the clock stands still: only tasks with work left run again
        report = await keeper.step()
        reaped.append(report.reaped)
        promoted.append(report.promoted)
    assert reaped == [4, 3, 0, 0, 0]
    assert promoted == [2, 2, 1, 0, 0]
    now = states(store_dsn)
    assert {run: now[run] for run in expired} == dict.fromkeys(expired, "pending")
    assert {run: now[run] for run in due} == dict.fromkeys(due, "pending")
    assert (now[alive], now[later]) == ("running", "scheduled")


async def test_the_backlog_gauge_follows_the_pending_runs(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    labels = {"queue": "monitored", "priority": "1", "state": "pending"}
    runs = [insert_run(store_dsn, job, "pending", queue="monitored") for _ in range(3)]
    clock = clocks.ManualClock(datetime.now(UTC))
    settings = maintainer.MaintainerSettings(archive_retention=None)
    keeper = maintainer.Maintainer(pool, holder=HOLDER, clock=clock, settings=settings)
    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=60) is not None
    await keeper.step()
    assert REGISTRY.get_sample_value("sundial_pending_runs", labels) == 3
    with psycopg.connect(store_dsn) as conn:
        conn.execute(
            "UPDATE job_runs SET state = 'cancelled', finished_at = now() WHERE id = ANY(%s)",
            (runs,),
        )
    await keeper.step()  # the clock stands still: the gauge is not read again
    assert REGISTRY.get_sample_value("sundial_pending_runs", labels) == 3
    clock.advance(settings.monitor_interval)
    await keeper.step()
    assert REGISTRY.get_sample_value("sundial_pending_runs", labels) == 0
