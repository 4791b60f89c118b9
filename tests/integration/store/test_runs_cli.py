"""`sundial runs cancel` and `sundial runs replay` against a real PostgreSQL; `sundial runs`
itself still lists."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

from click.testing import CliRunner, Result

from sundial import cli
from sundial.api import common, scheduled_job
from sundial.attempt import finishes
from sundial.scheduling import failures
from sundial.store import claims, runs, schedules
from sundial.store import pool as store_pool

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


async def submit(pool: store_pool.Pool, *, max_retries: int = 0) -> int:
    uid = uuid.uuid4()
    spec = scheduled_job.ScheduledJobSpec(
        schedule="0 0 1 1 *",
        suspend=True,
        handler=common.HandlerSpec(name="handlers.ok"),
        retry={"maxRetries": max_retries},
    )
    await schedules.upsert(
        pool,
        uid=uid,
        namespace="default",
        name=f"j-{uid.hex[:6]}",
        generation=1,
        spec=spec,
        now=NOW,
    )
    return (await runs.submit(pool, uid)).run_id


async def claim(pool: store_pool.Pool, run_id: int) -> claims.ClaimedRun:
    [claimed] = await claims.claim(pool, "worker-1", limit=1)
    assert claimed.id == run_id
    return claimed


async def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, cli.main, list(args), env=env)


async def row(pool: store_pool.Pool, run_id: int) -> dict[str, Any]:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT state, attempt, cancel_requested, cancel_reason, failure_reason, last_error,"
            " retries_used FROM job_runs WHERE id = %s",
            (run_id,),
        )
        values = await cursor.fetchone()
        assert values is not None
        names = [column.name for column in cursor.description or []]
    return dict(zip(names, values, strict=True))


async def test_cancel_ends_a_pending_run_with_the_reason(pool, store_dsn):
    run_id = await submit(pool)

    result = await invoke(
        "runs", "cancel", str(run_id), "--reason", "bad input", "--dsn", store_dsn
    )

    assert result.exit_code == 0, result.output
    assert f"run {run_id} cancelled" in result.output
    after = await row(pool, run_id)
    assert (after["state"], after["failure_reason"]) == ("cancelled", "cancelled")
    assert after["last_error"] == "cancelled: bad input"


async def test_cancel_asks_a_running_run_to_stop_and_its_worker_records_the_reason(pool, store_dsn):
    run_id = await submit(pool)
    claimed = await claim(pool, run_id)

    result = await invoke("runs", "cancel", str(run_id), env={"SUNDIAL_DSN": store_dsn})

    assert result.exit_code == 0, result.output
    assert "cancel requested" in result.output and "worker-1" in result.output
    after = await row(pool, run_id)
    assert (after["state"], after["cancel_requested"]) == ("running", True)
    beat = await claims.heartbeat(pool, "worker-1", [(run_id, claimed.attempt)])
    assert run_id in beat.cancel_requested
    await claims.finish(pool, "worker-1", [finishes.cancelled(claimed)])
    ended = await row(pool, run_id)
    assert (ended["state"], ended["last_error"]) == ("cancelled", "cancelled: sundial runs cancel")


async def test_cancel_refuses_a_finished_run_and_says_what_to_do(pool, store_dsn):
    run_id = await submit(pool)
    claimed = await claim(pool, run_id)
    failed = finishes.failed(claimed, "boom", failures.FailureClass.PERMANENT)
    await claims.finish(pool, "worker-1", [failed])

    result = await invoke("runs", "cancel", str(run_id), "--dsn", store_dsn)

    assert result.exit_code == cli.EXIT_RUN_REFUSED == 1
    assert f"run {run_id} cannot be cancelled: it already ended failed" in result.output
    assert f"sundial runs replay {run_id}" in result.output
    assert (await row(pool, run_id))["state"] == "failed"


async def test_cancel_and_replay_of_an_unknown_run_exit_3(store_dsn):
    for command in ("cancel", "replay"):
        result = await invoke("runs", command, "987654", "--dsn", store_dsn)
        assert result.exit_code == cli.EXIT_NO_SUCH_RUN == 3, (command, result.output)
        assert "there is no run 987654" in result.output
        assert "`sundial runs` lists them" in result.output


async def test_replay_requeues_a_dead_lettered_run_with_a_fresh_budget(pool, store_dsn):
    run_id = await submit(pool, max_retries=0)
    claimed = await claim(pool, run_id)
    crashed = finishes.failed(claimed, "boom", failures.FailureClass.ERROR)
    await claims.finish(pool, "worker-1", [crashed])
    assert (await row(pool, run_id))["state"] == "dead_lettered"

    # The DSN given to `sundial runs` reaches its command.
    result = await invoke("runs", "--dsn", store_dsn, "replay", str(run_id))

    assert result.exit_code == 0, result.output
    assert f"run {run_id} replayed" in result.output and "attempt 2" in result.output
    after = await row(pool, run_id)
    assert (after["state"], after["attempt"], after["retries_used"]) == ("pending", 1, 0)
    again = await claim(pool, run_id)
    assert again.attempt == 2


async def test_replay_refuses_a_run_that_did_not_fail(pool, store_dsn):
    run_id = await submit(pool)

    result = await invoke("runs", "replay", str(run_id), "--dsn", store_dsn)

    assert result.exit_code == cli.EXIT_RUN_REFUSED
    assert f"run {run_id} cannot be replayed: it is pending" in result.output
    assert "only dead_lettered, failed or timed_out" in result.output
    assert (await row(pool, run_id))["state"] == "pending"


async def test_runs_without_a_command_still_lists_and_still_needs_a_dsn(pool, store_dsn):
    run_id = await submit(pool)

    listed = await invoke("runs", "--dsn", store_dsn, "--limit", "5")
    missing = await invoke("runs")
    missing_in_command = await invoke("runs", "cancel", str(run_id))

    assert listed.exit_code == 0, listed.output
    header, *lines = listed.output.splitlines()
    assert header.split()[:3] == ["ID", "JOB", "STATE"]
    assert [line.split()[0] for line in lines] == [str(run_id)]
    for result in (missing, missing_in_command):
        assert result.exit_code == 2
        assert "Missing option '--dsn'" in result.output


async def test_the_help_documents_the_exit_codes():
    for command in ("cancel", "replay"):
        result = await invoke("runs", command, "--help")
        assert result.exit_code == 0
        assert "Exit codes:" in result.output
        assert "3  there is no run with that id" in result.output
