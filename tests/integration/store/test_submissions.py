"""Submitting: idempotency keys, fire keys, delays, priorities with aging, and bad input."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from sundial.api import validate
from sundial.attempt import finishes
from sundial.store import claims, errors, reaper, runs
from sundial.store import pool as store_pool

TABLES = ("job_runs", "job_run_deps", "idempotency_keys", "schedule_fires", "job_run_attempts")


def snapshot(dsn: str) -> dict[str, Any]:
    """Everything a submission could write, to prove a refused one wrote nothing."""
    with psycopg.connect(dsn) as conn:
        counts = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # type: ignore[arg-type]
            for table in TABLES
        }
        counts["runs"] = conn.execute(
            "SELECT id, state, has_dependents, pending_dependencies FROM job_runs ORDER BY id"
        ).fetchall()
    return counts


async def test_concurrent_retried_submits_with_one_key_make_one_run(
    store_dsn: str, job: uuid.UUID
) -> None:
    wide = await store_pool.open_pool(store_dsn, min_size=8, max_size=8)
    try:
        barrier = asyncio.Barrier(8)

        async def submit() -> runs.Submitted:
            await barrier.wait()
            return await runs.submit(wide, job, args={"order": 42}, idempotency_key="order-42")

        results = await asyncio.gather(*(submit() for _ in range(8)))
    finally:
        await wide.close()
    assert len({r.run_id for r in results}) == 1
    assert sum(r.created for r in results) == 1
    with psycopg.connect(store_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM job_runs").fetchone() == (1,)


async def test_a_key_outlives_its_archived_run(pool: store_pool.Pool, job: uuid.UUID) -> None:
    from sundial.store import maintenance

    first = await runs.submit(pool, job, idempotency_key="k")
    [run] = await claims.claim(pool, "w")
    await claims.finish(pool, "w", [finishes.succeeded(run)])
    assert await maintenance.archive_finished(pool, older_than_seconds=0) == 1
    again = await runs.submit(pool, job, idempotency_key="k")
    assert (again.run_id, again.created, again.state) == (first.run_id, False, "completed")
    info = await runs.get(pool, first.run_id)
    assert info is not None and info.archived and info.state == "completed"


async def test_a_schedule_fires_once_per_fire_time(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    schedule = uuid.uuid4()
    with psycopg.connect(store_dsn) as conn:
        conn.execute(
            "INSERT INTO schedules (id, job_id, cron, next_fire_time) VALUES (%s, %s, %s, now())",
            (schedule, job, "* * * * *"),
        )
    fire = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    first = await runs.submit(pool, job, schedule_id=schedule, fire_time=fire)
    second = await runs.submit(pool, job, schedule_id=schedule, fire_time=fire)
    assert first.created and not second.created and second.run_id == first.run_id
    [run] = await claims.claim(pool, "w")
    assert (run.schedule_id, run.fire_time) == (schedule, fire)


async def test_a_fire_time_alone_is_a_one_off_runs_logical_time(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    """A backfilled day: the job gets the fire time, and no schedule fire is reserved."""
    fire = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    first = await runs.submit(pool, job, fire_time=fire, idempotency_key="backfill.x.1")
    second = await runs.submit(pool, job, fire_time=fire, idempotency_key="backfill.x.2")
    assert first.created and second.created and first.run_id != second.run_id
    claimed = await claims.claim(pool, "w", limit=10)
    assert {(run.schedule_id, run.fire_time) for run in claimed} == {(None, fire)}
    with psycopg.connect(store_dsn) as conn:
        row = conn.execute("SELECT count(*) FROM schedule_fires").fetchone()
    assert row is not None and row[0] == 0
    before = snapshot(store_dsn)
    with pytest.raises(errors.InvalidSubmissionError, match="needs the fire_time"):
        await runs.submit(pool, job, schedule_id=uuid.uuid4())
    assert snapshot(store_dsn) == before


async def test_a_run_may_wait_up_to_366_days(pool: store_pool.Pool, job: uuid.UUID) -> None:
    """The bound on how far ahead a run may be due refuses only past it."""
    by_time = await runs.submit(pool, job, run_at=datetime.now(UTC) + timedelta(days=365))
    by_delay = await runs.submit(pool, job, delay_seconds=366 * 86400)
    assert (by_time.state, by_delay.state) == ("scheduled", "scheduled")


async def test_future_runs_wait_outside_the_dispatch_index(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    later = await runs.submit(pool, job, delay_seconds=3600)
    assert later.state == "scheduled"
    assert await claims.claim(pool, "w") == []
    with psycopg.connect(store_dsn) as conn:
        conn.execute("UPDATE job_runs SET run_at = now() - interval '1 second'")
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            "EXPLAIN SELECT id FROM job_runs WHERE state = 'pending' ORDER BY dispatch_key"
        ).fetchall()
    assert await reaper.promote_due(pool) == 1
    [run] = await claims.claim(pool, "w")
    assert run.id == later.run_id
    assert "job_runs_dispatch_idx" in " ".join(line for (line,) in plan)


async def test_priority_is_strict_but_old_runs_age_past_fresh_ones(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    now = datetime.now(UTC)
    low = await runs.submit(pool, job, priority=0, run_at=now - timedelta(seconds=5))
    high = await runs.submit(pool, job, priority=9)
    middle = await runs.submit(pool, job, priority=5)
    # 9 levels * 60 s: a priority-0 run that has waited 10 minutes beats a fresh priority 9.
    aged = await runs.submit(pool, job, priority=0, run_at=now - timedelta(minutes=10))
    order = [run.id for run in await claims.claim(pool, "w", limit=10)]
    assert order == [aged.run_id, high.run_id, middle.run_id, low.run_id]


async def test_claim_serves_only_the_queues_and_handlers_asked_for(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    mail = make_job("mail", queue="mail")
    report = make_job("report", queue="reports")
    mail_run = await runs.submit(pool, mail)
    await runs.submit(pool, report)
    assert await claims.claim(pool, "w", queues=["default"]) == []
    assert await claims.claim(pool, "w", queues=["mail"], handlers=["handlers.other"]) == []
    [run] = await claims.claim(pool, "w", queues=["mail", "reports"], handlers=["handlers.mail"])
    assert run.id == mail_run.run_id
    named = await runs.submit(pool, "default/mail")  # jobs can be named instead of by uid
    info = await runs.get(pool, named.run_id)
    assert info is not None and info.job_id == mail


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"job": "default/nope"}, errors.UnknownJobError, "no active job definition"),
        ({"job": uuid.UUID(int=7)}, errors.UnknownJobError, "apply its ScheduledJob"),
        ({"args": {"blob": "x" * 70_000}}, errors.ArgsTooLargeError, "more than the limit"),
        ({"args": {"when": datetime.now(UTC)}}, errors.InvalidSubmissionError, "JSON"),
        ({"priority": 10}, errors.InvalidPriorityError, "from 0 .lowest. to 9"),
        ({"priority": -1}, errors.InvalidPriorityError, "priority -1 is invalid"),
        ({"priority": True}, errors.InvalidPriorityError, "invalid"),
        ({"depends_on": [999_999]}, errors.MissingDependencyError, "submit the upstream"),
        ({"run_at": datetime(2030, 1, 1)}, errors.InvalidSubmissionError, "timezone-aware"),
        ({"delay_seconds": -1}, errors.InvalidSubmissionError, "delay_seconds"),
        ({"delay_seconds": 367 * 86400}, errors.InvalidSubmissionError, "at most 31622400"),
        (
            {"run_at": datetime.now(UTC) + timedelta(days=367)},
            errors.InvalidSubmissionError,
            "more than 366 days ahead",
        ),
    ],
)
async def test_bad_input_is_refused_and_nothing_changes(
    pool: store_pool.Pool,
    store_dsn: str,
    job: uuid.UUID,
    kwargs: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    parent = await runs.submit(pool, job, idempotency_key="existing")
    before = snapshot(store_dsn)
    target = kwargs.pop("job", job)
    depends = kwargs.pop("depends_on", [])
    with pytest.raises(error, match=message):
        await runs.submit(
            pool, target, idempotency_key="fresh", depends_on=[parent.run_id, *depends], **kwargs
        )
    assert snapshot(store_dsn) == before


async def test_reused_key_with_different_args_is_refused(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    first = await runs.submit(pool, job, args={"n": 1}, idempotency_key="k")
    before = snapshot(store_dsn)
    with pytest.raises(
        errors.IdempotencyConflictError, match=f"already used for run {first.run_id}"
    ):
        await runs.submit(pool, job, args={"n": 2}, idempotency_key="k")
    assert snapshot(store_dsn) == before


def test_every_submission_error_is_a_store_error() -> None:
    for error in (
        errors.UnknownJobError("x"),
        errors.ArgsTooLargeError(2, 1),
        errors.InvalidPriorityError(10, 0, 9),
        errors.MissingDependencyError([1]),
        errors.CyclicDependencyError(["a", "a"]),
        errors.IdempotencyConflictError("k", 1),
    ):
        assert isinstance(error, errors.InvalidSubmissionError)
        assert isinstance(error, errors.StoreError)


async def test_args_the_models_admit_are_stored_whatever_their_jsonb_text_weighs(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    """The bound is measured once, as compact JSON: the API's edge and the store agree. A list
    of 30,000 zeros is about 60 KB compact and 90 KB as jsonb prints it (", " between items)."""
    args = {"k": [0] * 30_000}
    assert validate.args_size(args) <= validate.MAX_ARGS_BYTES
    submitted = await runs.submit(pool, job, args=args)
    assert submitted.created
    over = {"k": [0] * 33_000}
    with pytest.raises(errors.ArgsTooLargeError, match=f"{validate.args_size(over)} bytes"):
        await runs.submit(pool, job, args=over)
