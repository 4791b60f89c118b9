"""OOMKilled attempts spend their own budget (oom.maxRetries), never maxRetries, and the job's
pod settings (oom, startTimeoutSeconds, podDeletionPolicy) reach the store from the API.

docs/failure-modes.md: "Pod OOMKilled -> failure class OOMKilled, its own retry budget";
migration 0060; docs/adr/0010-oom-budget-and-pod-deletion.md.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import Any

import psycopg

from sundial.api import common, scheduled_job
from sundial.attempt import finishes
from sundial.scheduling.failures import FailureClass
from sundial.store import claims, fires, pod_runs, reaper, runs, schedules
from sundial.store import pool as store_pool


def budget(dsn: str, run_id: int) -> dict[str, Any]:
    with psycopg.connect(dsn) as conn:
        cursor = conn.execute(
            "SELECT state, attempt, retries_used, infra_retries_used, oom_retries_used,"
            " oom_max_retries, failure_reason FROM job_runs WHERE id = %s",
            (run_id,),
        )
        row = cursor.fetchone()
        assert row is not None
        names = [column.name for column in cursor.description or []]
    return dict(zip(names, row, strict=True))


async def end_attempt(pool: store_pool.Pool, failure: FailureClass) -> str:
    """Claim the one due run and end its attempt with ``failure``; the run's state after."""
    await reaper.promote_due(pool)  # out of retry_wait: the backoff is zero
    [run] = await claims.claim(pool, "w")
    result = await claims.finish(pool, "w", [finishes.failed(run, "boom", failure)])
    return result.states[run.id]


async def test_oom_kills_within_their_budget_do_not_touch_max_retries(
    pool: store_pool.Pool, store_dsn: str, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("hungry", max_retries=0, oom_max_retries=2)
    run_id = (await runs.submit(pool, job)).run_id
    assert budget(store_dsn, run_id)["oom_max_retries"] == 2

    assert await end_attempt(pool, FailureClass.OOM) == "retry_wait"
    assert await end_attempt(pool, FailureClass.OOM) == "retry_wait"
    row = budget(store_dsn, run_id)
    assert (row["retries_used"], row["infra_retries_used"], row["oom_retries_used"]) == (0, 0, 2)

    # One more is past the OOM budget: dead-lettered with reason oom, maxRetries untouched.
    assert await end_attempt(pool, FailureClass.OOM) == "dead_lettered"
    row = budget(store_dsn, run_id)
    assert (row["state"], row["attempt"], row["failure_reason"]) == ("dead_lettered", 3, "oom")
    assert (row["retries_used"], row["oom_retries_used"]) == (0, 2)
    with psycopg.connect(store_dsn) as conn:
        reasons = conn.execute(
            "SELECT failure_reason FROM dead_letters WHERE id = %s", (run_id,)
        ).fetchall()
    assert reasons == [("oom",)]


async def test_errors_and_oom_kills_do_not_spend_each_others_budget(
    pool: store_pool.Pool, store_dsn: str, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("mixed", max_retries=1, oom_max_retries=1)
    run_id = (await runs.submit(pool, job)).run_id

    assert await end_attempt(pool, FailureClass.ERROR) == "retry_wait"
    assert await end_attempt(pool, FailureClass.OOM) == "retry_wait"
    row = budget(store_dsn, run_id)
    assert (row["retries_used"], row["oom_retries_used"]) == (1, 1)
    # Both budgets are now spent: an error ends the run as an error, not as an OOM kill.
    assert await end_attempt(pool, FailureClass.ERROR) == "dead_lettered"
    row = budget(store_dsn, run_id)
    assert (row["attempt"], row["failure_reason"]) == (3, "error")


async def test_an_oom_budget_of_zero_dead_letters_the_first_oom_kill(
    pool: store_pool.Pool, store_dsn: str, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("tight", max_retries=5, oom_max_retries=0)
    run_id = (await runs.submit(pool, job)).run_id
    assert await end_attempt(pool, FailureClass.OOM) == "dead_lettered"
    assert budget(store_dsn, run_id)["retries_used"] == 0


async def test_replay_gives_a_fresh_oom_budget(
    pool: store_pool.Pool, store_dsn: str, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("replayed", max_retries=0, oom_max_retries=0)
    run_id = (await runs.submit(pool, job)).run_id
    assert await end_attempt(pool, FailureClass.OOM) == "dead_lettered"
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        conn.execute("UPDATE job_runs SET oom_max_retries = 1 WHERE id = %s", (run_id,))
    await runs.replay(pool, run_id)
    assert budget(store_dsn, run_id)["oom_retries_used"] == 0
    assert await end_attempt(pool, FailureClass.OOM) == "retry_wait"


POD_TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}


async def test_a_scheduled_jobs_pod_settings_reach_its_runs_and_the_launcher(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    uid = uuid.uuid4()
    now = datetime.datetime.now(datetime.UTC)
    spec = scheduled_job.ScheduledJobSpec.model_validate(
        {
            "schedule": "* * * * *",
            "template": POD_TEMPLATE,
            "startTimeoutSeconds": 42,
            "oom": {"maxRetries": 4, "memoryIncreasePercent": 50, "maxMemory": "2Gi"},
            "podDeletionPolicy": "Cancel",
        }
    )
    await schedules.upsert(
        pool,
        uid=uid,
        namespace="default",
        name="pods",
        generation=1,
        spec=spec,
        now=now - datetime.timedelta(minutes=2),
    )
    # Both ways a ScheduledJob's run is made: the trigger's fire and a submit (jobRef).
    report = await fires.fire_due(pool, now=now)
    assert report.created, report
    fired = [run.id for run in await claims.claim(pool, "w", limit=10)]
    submitted = (await runs.submit(pool, uid)).run_id
    assert budget(store_dsn, fired[0])["oom_max_retries"] == 4
    assert budget(store_dsn, submitted)["oom_max_retries"] == 4

    [context] = (await pod_runs.launch_context(pool, [fired[0]])).values()
    assert context.start_timeout_seconds == 42
    assert (context.oom_memory_increase_percent, context.oom_max_memory_bytes) == (50, 2 * 2**30)
    assert context.pod_deletion_policy == "Cancel"

    # A new generation without them goes back to the defaults (NULL: the launcher's).
    plain = scheduled_job.ScheduledJobSpec.model_validate(
        {"schedule": "* * * * *", "template": POD_TEMPLATE}
    )
    await schedules.upsert(
        pool, uid=uid, namespace="default", name="pods", generation=2, spec=plain, now=now
    )
    [context] = (await pod_runs.launch_context(pool, [fired[0]])).values()
    assert context.start_timeout_seconds is None
    assert (context.oom_memory_increase_percent, context.oom_max_memory_bytes) == (None, None)
    assert context.pod_deletion_policy == "Retry"
    assert budget(store_dsn, (await runs.submit(pool, uid)).run_id)["oom_max_retries"] == 2


async def test_an_inline_jobrun_jobs_pod_settings_reach_its_run(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    uid = uuid.uuid4()
    spec = common.JobSpec.model_validate(
        {"template": POD_TEMPLATE, "startTimeoutSeconds": 7, "oom": {"maxRetries": 0}}
    )
    assert await schedules.upsert_job(
        pool, uid=uid, namespace="ns", name=f"jobrun:{uid}", generation=1, spec=spec
    )
    run_id = (await runs.submit(pool, uid, idempotency_key=str(uid))).run_id
    assert budget(store_dsn, run_id)["oom_max_retries"] == 0
    [context] = (await pod_runs.launch_context(pool, [run_id])).values()
    assert context.start_timeout_seconds == 7
    assert context.pod_deletion_policy == "Retry"
