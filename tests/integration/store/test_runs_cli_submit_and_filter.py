"""`sundial runs submit`, `--state`, `--since`, `-o wide|json` and why a run waits, against a
real PostgreSQL; and a database that cannot be reached."""

from __future__ import annotations

import asyncio
import datetime
import json
import socket
import uuid
from typing import Any

from click.testing import CliRunner, Result

from sundial import cli
from sundial.api import common, scheduled_job
from sundial.store import claims, runs, schedules
from sundial.store import pool as store_pool

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


async def job(pool: store_pool.Pool, name: str, *, queue: str = "default") -> uuid.UUID:
    uid = uuid.uuid4()
    spec = scheduled_job.ScheduledJobSpec(
        schedule="0 0 1 1 *",
        suspend=True,
        queue=queue,
        handler=common.HandlerSpec(name="handlers.ok"),
    )
    await schedules.upsert(
        pool, uid=uid, namespace="default", name=name, generation=1, spec=spec, now=NOW
    )
    return uid


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, cli.main, list(args))


def lines_of_json(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


async def test_submit_prints_the_run_id_and_the_run_has_its_options(pool, store_dsn):
    await job(pool, "report")

    result = await invoke(
        "runs", "submit", "report", "--args", '{"day": "2026-12-01"}', "--priority", "7",
        "--queue", "gpu", "--delay", "1h", "--dsn", store_dsn,
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    run_id = int(result.stdout.strip())
    info = await runs.get(pool, run_id)
    assert info is not None
    assert (info.state, info.priority, info.args) == ("scheduled", 7, {"day": "2026-12-01"})
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT queue FROM job_runs WHERE id = %s", (run_id,))
        assert await cursor.fetchone() == ("gpu",)


async def test_submit_with_a_key_is_idempotent_and_a_conflict_exits_1(pool, store_dsn):
    await job(pool, "once")
    first = await invoke("runs", "submit", "once", "--idempotency-key", "k1", "--dsn", store_dsn)
    again = await invoke("runs", "submit", "once", "--idempotency-key", "k1", "--dsn", store_dsn)
    other = await invoke(
        "runs", "submit", "once", "--idempotency-key", "k1", "--args", '{"x": 1}',
        "--dsn", store_dsn,
    )  # fmt: skip

    assert (first.exit_code, again.exit_code) == (0, 0), (first.output, again.output)
    assert first.stdout == again.stdout
    assert "submitted before with this idempotency key" in again.stderr
    assert other.exit_code == 1 and "idempotency key 'k1'" in other.stderr
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT count(*) FROM job_runs")
        assert await cursor.fetchone() == (1,)


async def test_submit_from_a_file_submits_all_or_none(pool, store_dsn, tmp_path):
    await job(pool, "batch")
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            [
                {"args": {"n": 1}},
                {"args": {"n": 2}, "priority": 9},
                {"delaySeconds": 60, "queue": "gpu"},
            ]
        )
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"args": {"n": 3}}\n{"args": {"n": 4}, "colour": "red"}\n')

    made = await invoke("runs", "submit", "batch", "--from-file", str(good), "--dsn", store_dsn)
    refused = await invoke("runs", "submit", "batch", "--from-file", str(bad), "--dsn", store_dsn)

    assert made.exit_code == 0, made.output
    ids = [int(line) for line in made.stdout.split()]
    assert len(ids) == 3
    states = [(await runs.get(pool, run_id)).state for run_id in ids]  # type: ignore[union-attr]
    assert states == ["pending", "pending", "scheduled"]
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT id, queue FROM job_runs ORDER BY id")
        assert await cursor.fetchall() == [
            (ids[0], "default"),
            (ids[1], "default"),
            (ids[2], "gpu"),
        ]
    assert refused.exit_code == 2 and "item 2" in refused.output and "'colour'" in refused.output
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT count(*) FROM job_runs")
        assert await cursor.fetchone() == (3,)


async def test_submit_of_an_unknown_job_exits_3_and_usage_errors_exit_2(pool, store_dsn):
    unknown = await invoke("runs", "submit", "nope", "--dsn", store_dsn)
    both = await invoke(
        "runs", "submit", "nope", "--delay", "1m", "--run-at", "2027-01-01T00:00:00Z",
        "--dsn", store_dsn,
    )  # fmt: skip
    not_object = await invoke("runs", "submit", "nope", "--args", "[1]", "--dsn", store_dsn)
    duration = await invoke("runs", "submit", "nope", "--run-at", "10m", "--dsn", store_dsn)
    bad_queue = await invoke("runs", "submit", "nope", "--queue", "GPU!", "--dsn", store_dsn)

    assert unknown.exit_code == 3 and "no active job definition 'nope'" in unknown.stderr
    assert both.exit_code == 2 and "not both" in both.output
    assert bad_queue.exit_code == 2 and "is not a queue name" in bad_queue.output
    assert not_object.exit_code == 2 and "JSON object" in not_object.output
    assert duration.exit_code == 2 and "use --delay" in duration.output


async def test_a_run_due_past_a_year_is_refused_in_the_options_own_name(pool, store_dsn, tmp_path):
    uid = await job(pool, "far-off")
    delay = await invoke("runs", "submit", "far-off", "--delay", "400d", "--dsn", store_dsn)
    run_at = await invoke(
        "runs", "submit", "far-off", "--run-at", "2999-01-01T00:00:00Z", "--dsn", store_dsn
    )
    items = tmp_path / "runs.jsonl"
    items.write_text('{"delaySeconds": 60}\n{"delaySeconds": 40000000}\n')
    from_file = await invoke(
        "runs", "submit", "far-off", "--from-file", str(items), "--dsn", store_dsn
    )
    assert delay.exit_code == 2 and "--delay is at most 366 days" in delay.output
    assert run_at.exit_code == 2 and "--run-at 2999-01-01T00:00:00+00:00 is more" in run_at.output
    assert from_file.exit_code == 2
    assert "item 2" in from_file.output and "delaySeconds is at most 366" in from_file.output
    assert "delay_seconds" not in delay.output + run_at.output + from_file.output
    async with pool.connection() as conn:
        cursor = await conn.execute("SELECT count(*) FROM job_runs WHERE job_id = %s", (uid,))
        assert await cursor.fetchone() == (0,), "nothing stored, the good item neither"
    near = await invoke("runs", "submit", "far-off", "--delay", "365d", "--dsn", store_dsn)
    assert near.exit_code == 0, near.output


async def test_state_since_and_job_filter_the_list(pool, store_dsn):
    await job(pool, "a")
    await job(pool, "b")
    pending = (await runs.submit(pool, "a")).run_id
    later = (await runs.submit(pool, "a", delay_seconds=3600)).run_id
    other = (await runs.submit(pool, "b")).run_id
    async with pool.connection() as conn:  # an old run: created two days ago
        await conn.execute(
            "UPDATE job_runs SET created_at = now() - interval '2 days' WHERE id = %s", (other,)
        )

    by_state = await invoke("runs", "--state", "pending", "-o", "json", "--dsn", store_dsn)
    comma = await invoke(
        "runs", "--state", "scheduled,pending", "--job", "a", "-o", "json", "--dsn", store_dsn
    )
    recent = await invoke("runs", "--since", "1h", "-o", "json", "--dsn", store_dsn)
    bad = await invoke("runs", "--state", "waiting", "--dsn", store_dsn)

    assert [row["runId"] for row in lines_of_json(by_state)] == [str(other), str(pending)]
    assert [row["runId"] for row in lines_of_json(comma)] == [str(later), str(pending)]
    assert {row["runId"] for row in lines_of_json(recent)} == {str(pending), str(later)}
    assert bad.exit_code == 2 and "retry_wait" in bad.output and "'waiting'" in bad.output


async def test_every_waiting_run_says_why_in_json_and_wide(pool, store_dsn):
    await job(pool, "step")
    upstream = (await runs.submit(pool, "step")).run_id
    blocked = (await runs.submit(pool, "step", depends_on=[upstream])).run_id
    later = (await runs.submit(pool, "step", delay_seconds=3600)).run_id
    [claimed] = await claims.claim(pool, "worker-1", limit=1)
    assert claimed.id == upstream
    queued = (await runs.submit(pool, "step")).run_id

    listed = await invoke("runs", "-o", "json", "--dsn", store_dsn)
    wide = await invoke("runs", "-o", "wide", "--dsn", store_dsn)

    assert listed.exit_code == 0, listed.output
    waiting = {row["runId"]: row["waiting"] for row in lines_of_json(listed)}
    assert waiting[str(upstream)] is None  # running: it does not wait
    assert waiting[str(blocked)] == {
        "reason": "WaitingForUpstream",
        "message": f"waits for 1 upstream run to complete: run {upstream} (default/step, running)",
    }
    assert waiting[str(later)]["reason"] == "RunAtInFuture"
    assert waiting[str(queued)]["reason"] == "WaitingForRunner"
    assert "WAITING" in wide.stdout.splitlines()[0]
    expected = f"WaitingForUpstream: waits for 1 upstream run to complete: run {upstream}"
    assert expected in wide.stdout


async def test_an_unreachable_database_is_one_line_and_exit_4():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dsn = f"postgresql://sundial@127.0.0.1:{port}/sundial"

    for args in (("runs",), ("runs", "submit", "x"), ("runs", "cancel", "1")):
        result = await invoke(*args, "--dsn", dsn)
        assert result.exit_code == 4, (args, result.output)
        assert "Traceback" not in result.output and "PoolTimeout" not in result.output
        [line] = result.stderr.strip().splitlines()
        assert "Connection refused" in line and "check --dsn / SUNDIAL_DSN" in line
