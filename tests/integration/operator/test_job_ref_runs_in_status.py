"""A JobRun with ``jobRef`` (``kubectl sundial run SJ``, a backfill) is not one of the
ScheduledJob's own runs, as a Job made by ``kubectl create job --from=cronjob/x`` is not the
CronJob's: it leaves ``lastSuccessfulTime``, ``active`` and ``consecutiveFailures`` alone. A
``sundial.dev/run-now`` fire is the schedule's own and counts."""

from __future__ import annotations

import datetime
import uuid

from sundial.api import common, scheduled_job
from sundial.attempt import finishes
from sundial.operator import status
from sundial.store import claims, history, runs, schedules
from sundial.store import pool as store_pool

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


async def finish(pool: store_pool.Pool, run_id: int, *, succeed: bool) -> datetime.datetime:
    [run] = await claims.claim(pool, "w", limit=1)
    assert run.id == run_id
    outcome = finishes.succeeded(run) if succeed else finishes.failed(run, "boom")
    await claims.finish(pool, "w", [outcome])
    info = await runs.get(pool, run_id)
    assert info is not None and info.finished_at is not None
    return info.finished_at


async def test_job_ref_runs_do_not_count_as_the_scheduled_jobs_own(pool: store_pool.Pool) -> None:
    uid = uuid.uuid4()
    spec = scheduled_job.ScheduledJobSpec(
        schedule="*/5 * * * *",
        handler=common.HandlerSpec(name="handlers.ok"),
        retry=common.RetrySpec(max_retries=0),
    )
    await schedules.upsert(
        pool, uid=uid, namespace="default", name="nightly", generation=1, spec=spec, now=NOW
    )
    # As the operator submits them: a run-now fire carries the schedule, a jobRef run only
    # the job definition (operator.scheduled_jobs.run_now, operator.job_runs._submit).
    run_now = (await runs.submit(pool, uid, schedule_id=uid, fire_time=NOW)).run_id
    own_success = await finish(pool, run_now, succeed=True)
    by_ref = (await runs.submit(pool, uid, idempotency_key="jobrun-a")).run_id
    assert await finish(pool, by_ref, succeed=True) > own_success  # newer, yet not counted
    failed_by_ref = (await runs.submit(pool, uid, idempotency_key="jobrun-b")).run_id
    await finish(pool, failed_by_ref, succeed=False)
    active_by_ref = (await runs.submit(pool, uid, idempotency_key="jobrun-c")).run_id

    request = history.WindowRequest(uid, successful=3, failed=3)
    window = (await history.window(pool, [request]))[uid]
    view = (await history.schedules(pool, [uid]))[uid]
    body = {
        "metadata": {"name": "nightly", "namespace": "default", "generation": 1, "uid": str(uid)}
    }
    result = status.scheduled_job_status(
        body, spec_error=None, schedule=view, window=window, missed=None, now=NOW
    )

    assert [run.id for run in window.successful] == [run_now]
    assert window.failed == [] and window.active == []
    assert result["lastSuccessfulTime"] == status.rfc3339(own_success)
    assert (result["active"], result["activeCount"], result["consecutiveFailures"]) == (None, 0, 0)
    assert active_by_ref not in {run.id for run in window.active}
