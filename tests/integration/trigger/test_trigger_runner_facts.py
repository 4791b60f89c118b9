"""What the trigger leader's process does for runners: its maintainer says why pending runs
wait when no runner is alive to say it, and the trigger copies the job's lost-lease budget onto
every run it fires."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from sundial.api import common
from sundial.scheduler import maintainer, trigger
from sundial.store import pool as store_pool
from sundial.store import runs, schedules


async def test_the_leader_marks_runs_no_live_runner_serves(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    spec = common.JobSpec.model_validate({"handler": {"name": "reports.build"}})
    assert await schedules.upsert_job(
        pool, uid="3a4c4f5e-0000-4000-8000-000000000001", namespace="d", name="once",
        generation=1, spec=spec,
    )  # fmt: skip
    run_id = (
        await runs.submit(pool, "d/once", run_at=datetime.now(UTC) - timedelta(minutes=1))
    ).run_id

    loop = trigger.TriggerLoop(pool)
    await loop.step()  # takes the lease; the maintainer acts under it
    assert (await maintainer.Maintainer(pool, holder=loop.holder).step()).leading

    with psycopg.connect(store_dsn) as conn:
        row = conn.execute(
            "SELECT state, unclaimable_reason FROM job_runs WHERE id = %s", (run_id,)
        ).fetchone()
    assert row is not None and row[0] == "pending"
    assert row[1].startswith("no live runner serves handler reports.build on queue default")


async def test_fired_and_submitted_runs_carry_the_jobs_lost_lease_budget(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    from sundial.scheduling import clock
    from support.trigger import START, UNPACED, add_schedule

    uid = await add_schedule(pool, START, "* * * * *", name="crashy", retry={"maxLostLeases": 1})
    [fired] = (
        await trigger.TriggerLoop(
            pool, clock=clock.ManualClock(START + timedelta(minutes=1)), settings=UNPACED
        ).tick()
    ).runs
    submitted = (await runs.submit(pool, uid)).run_id
    default = await add_schedule(pool, START, "* * * * *", name="plain")
    plain = (await runs.submit(pool, default)).run_id

    with psycopg.connect(store_dsn) as conn:
        budgets = dict(
            conn.execute(
                "SELECT id, max_lost_leases FROM job_runs WHERE id = ANY(%s)",
                ([fired.run_id, submitted, plain],),
            ).fetchall()
        )
    assert budgets == {fired.run_id: 1, submitted: 1, plain: 3}
