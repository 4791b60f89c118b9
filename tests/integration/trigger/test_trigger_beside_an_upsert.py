"""The trigger firing a schedule while the operator upserts the same ScheduledJob: no deadlock.

A restarted operator re-stores every ScheduledJob while the trigger fires them. The upsert
locks the job's row, then writes the schedule's; the trigger locks the schedule's row, then
its insert of the run checks the foreign key to the job (a KEY SHARE lock on the job's row).
If the upsert's lock on the job conflicts with that KEY SHARE, each waits for the other and
PostgreSQL aborts one transaction as a deadlock: a failed trigger step, or a failed upsert.
The upsert's lock must therefore be ``FOR NO KEY UPDATE``: it still serialises upserts of the
same job, and never blocks a foreign-key check.

The interleaving is forced, not hoped for: the upsert's first statement (the real query file)
holds its lock in one transaction while the real ``fires.fire_due`` runs in another.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import psycopg

from sundial.store import fires, queries, runs
from sundial.store import pool as store_pool
from support.trigger import START, bulk_schedules


async def test_a_fire_is_created_while_an_upsert_holds_its_job(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    [schedule_id] = bulk_schedules(store_dsn, 1, "* * * * *", now=START)
    due = START + timedelta(minutes=1, seconds=1)

    with psycopg.connect(store_dsn, autocommit=False) as upsert:
        # The operator's upsert, first statement: the job's row, locked for what follows.
        upsert.execute("SET lock_timeout = '20s'")
        upsert.execute(queries.get("schedule_stored_generation"), {"id": schedule_id})

        fire = asyncio.create_task(fires.fire_due(pool, now=due))
        done, _ = await asyncio.wait({fire}, timeout=10)
        assert fire in done, "the trigger waited for the upsert's lock on the job"
        report = fire.result()
        assert report.created == 1

        # The upsert's next statement writes the schedule the trigger just advanced.
        upsert.execute(
            "UPDATE schedules SET updated_at = now() WHERE id = %(id)s", {"id": schedule_id}
        )
        upsert.commit()

    with psycopg.connect(store_dsn) as conn:
        runs = conn.execute(
            "SELECT count(*) FROM job_runs WHERE schedule_id = %(id)s", {"id": schedule_id}
        ).fetchone()
    assert runs == (1,)


async def test_a_run_now_is_created_while_the_trigger_holds_its_schedule(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    """The trigger locks its batch of schedules for its whole transaction. A run-now (or any
    run of the schedule) inserted meanwhile checks its foreign key to the schedule with a KEY
    SHARE lock, after it has taken its fire key: had the trigger's lock been FOR UPDATE, the
    run-now would wait for the trigger's pass, and deadlock it if the two fire keys met."""
    [schedule_id] = bulk_schedules(store_dsn, 1, "* * * * *", now=START)
    due = START + timedelta(minutes=1, seconds=1)

    with psycopg.connect(store_dsn, autocommit=False) as trigger:
        trigger.execute("SET lock_timeout = '20s'")
        # The trigger's first statement: its batch, locked until its commit.
        [held] = trigger.execute(
            queries.get("trigger_due_schedules"), {"now": due, "limit": 10}
        ).fetchall()
        assert held[0] == schedule_id

        run_now = asyncio.create_task(
            runs.submit(
                pool, schedule_id, schedule_id=schedule_id, fire_time=due, idempotency_key="now-1"
            )
        )
        done, _ = await asyncio.wait({run_now}, timeout=10)
        assert run_now in done, "the run-now waited for the trigger's lock on the schedule"
        assert run_now.result().created
        trigger.commit()
