"""The run promises of ``spec.slo`` judged from a window PostgreSQL returns, with its own
times: a run fired two minutes ago and still pending breaks ``startLatenessSeconds`` while it
waits, and once claimed keeps it broken (it started late); a running attempt breaks
``maxDurationSeconds`` once it has run longer, and a run that ended in time keeps it."""

from __future__ import annotations

import datetime
import uuid

from sundial.api import common, scheduled_job
from sundial.attempt import finishes
from sundial.operator import slos
from sundial.store import claims, history, runs, schedules
from sundial.store import pool as store_pool


async def test_run_promises_follow_a_run_from_pending_to_ended(pool: store_pool.Pool) -> None:
    uid = uuid.uuid4()
    now = datetime.datetime.now(datetime.UTC)
    spec = scheduled_job.ScheduledJobSpec(
        schedule="*/5 * * * *", handler=common.HandlerSpec(name="handlers.ok")
    )
    await schedules.upsert(
        pool, uid=uid, namespace="default", name="nightly", generation=1, spec=spec, now=now
    )
    fired = now - datetime.timedelta(seconds=120)
    run_id = (await runs.submit(pool, uid, schedule_id=uid, fire_time=fired)).run_id
    body = {
        "metadata": {"name": "nightly", "namespace": "default", "uid": str(uid)},
        "spec": {"slo": {"startLatenessSeconds": 60, "maxDurationSeconds": 30}},
    }

    async def window() -> history.Window:
        request = history.WindowRequest(uid, successful=1, failed=1)
        return (await history.window(pool, [request]))[uid]

    def broken(found: history.Window, at: datetime.datetime) -> dict[str, str]:
        return {breach.slo: breach.message for breach in slos.breaches(body, found, None, at)}

    pending = await window()
    assert [run.id for run in pending.active] == [run_id]
    assert broken(pending, now) == {
        "startLateness": f"run {run_id}, fired at {common.rfc3339(fired)}, has not started"
        " within slo.startLatenessSeconds=60 (it is pending)"
    }

    [claimed] = await claims.claim(pool, "w", limit=1)
    assert claimed.id == run_id
    running = await window()
    [run] = running.active
    assert run.started_at is not None
    late = broken(running, run.started_at + datetime.timedelta(seconds=1))
    assert set(late) == {"startLateness"}
    assert f"run {run_id}, fired at {common.rfc3339(fired)}, started 12" in late["startLateness"]
    too_long = broken(running, run.started_at + datetime.timedelta(seconds=31))
    assert too_long["maxDuration"] == (
        f"run {run_id} started at {common.rfc3339(run.started_at)} and is still running past"
        " slo.maxDurationSeconds=30"
    )

    await claims.finish(pool, "w", [finishes.succeeded(claimed)])
    ended = await window()
    [done] = ended.successful
    assert done.finished_at is not None
    assert "maxDuration" not in broken(ended, done.finished_at + datetime.timedelta(hours=1))
