"""The status mirror's reads: a bounded window per schedule, across hot and archived runs."""

from __future__ import annotations

import asyncio
import datetime
import uuid

import psycopg
from click.testing import CliRunner

from sundial import cli
from sundial.api import common, scheduled_job
from sundial.attempt import finishes
from sundial.scheduling import failures
from sundial.store import claims, history, maintenance, pod_runs, runs, schedules
from sundial.store import pool as store_pool

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


async def make_schedule(pool: store_pool.Pool, name: str = "windowed") -> uuid.UUID:
    uid = uuid.uuid4()
    spec = scheduled_job.ScheduledJobSpec(
        schedule="*/5 * * * *", handler=common.HandlerSpec(name="handlers.ok")
    )
    await schedules.upsert(
        pool, uid=uid, namespace="default", name=name, generation=3, spec=spec, now=NOW
    )
    return uid


async def fire(pool: store_pool.Pool, schedule_id: uuid.UUID, minute: int) -> int:
    submitted = await runs.submit(
        pool, schedule_id, schedule_id=schedule_id, fire_time=NOW.replace(minute=minute)
    )
    return submitted.run_id


async def finish_all(pool: store_pool.Pool, failing: set[int]) -> None:
    claimed = await claims.claim(pool, "w", limit=100)
    outcomes = [
        finishes.failed(run, "boom") if run.id in failing else finishes.succeeded(run)
        for run in claimed
    ]
    await claims.finish(pool, "w", outcomes)


async def test_the_window_holds_active_runs_and_the_newest_of_each_outcome(
    pool: store_pool.Pool, store_dsn: str
):
    schedule_id = await make_schedule(pool)
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        conn.execute("UPDATE job_definitions SET max_retries = 0 WHERE id = %s", (schedule_id,))
    finished = [await fire(pool, schedule_id, minute) for minute in range(5)]
    await finish_all(pool, failing={finished[1], finished[3]})
    # Archive every finished run: the window must still find them in the partitions.
    await maintenance.ensure_partitions(pool)
    assert await maintenance.archive_finished(pool, older_than_seconds=0) == 5
    active = await fire(pool, schedule_id, 10)

    window = (
        await history.window(pool, [history.WindowRequest(schedule_id, successful=2, failed=1)])
    )[schedule_id]
    assert [run.id for run in window.active] == [active]
    assert [run.id for run in window.successful] == [finished[4], finished[2]]
    assert [run.id for run in window.failed] == [finished[3]]
    assert window.failed[0].state == "dead_lettered"  # max_retries 0: no retry left

    views = await history.schedules(pool, [schedule_id])
    assert views[schedule_id].generation == 3
    found = await history.runs(pool, [finished[0], active, 999_999])
    assert set(found) == {finished[0], active}
    recent = await history.recent(pool, namespace="default", job="windowed", limit=3)
    assert [row.id for row in recent] == [active, finished[4], finished[3]]


async def test_an_inline_job_definition_is_submittable_by_its_uid(pool: store_pool.Pool):
    uid = uuid.uuid4()
    spec = common.JobSpec(handler=common.HandlerSpec(name="handlers.once"))
    assert await schedules.upsert_job(
        pool, uid=uid, namespace="ns", name=f"jobrun:{uid}", generation=1, spec=spec
    )
    submitted = await runs.submit(pool, uid, idempotency_key=str(uid))
    again = await runs.submit(pool, uid, idempotency_key=str(uid))
    assert submitted.created and not again.created
    assert again.run_id == submitted.run_id


async def test_the_window_and_runs_by_id_carry_the_pod_of_the_latest_attempt(
    pool: store_pool.Pool,
):
    schedule_id = await make_schedule(pool)
    pod_run = await fire(pool, schedule_id, 1)
    plain_run = await fire(pool, schedule_id, 2)
    claimed = {run.id: run for run in await claims.claim(pool, "launcher", limit=10)}
    assert await pod_runs.record_pod(
        pool, "launcher", pod_run, claimed[pod_run].attempt, pod_name="windowed-abc-1"
    )
    assert await pod_runs.record_pod(
        pool,
        "launcher",
        pod_run,
        claimed[pod_run].attempt,
        pod_name="windowed-abc-1",
        exit_code=137,
        reason="OOMKilled",
    )

    window = (
        await history.window(pool, [history.WindowRequest(schedule_id, successful=1, failed=1)])
    )[schedule_id]
    by_id = {run.id: run for run in window.active}
    assert (by_id[pod_run].pod_name, by_id[pod_run].pod_exit_code, by_id[pod_run].pod_reason) == (
        "windowed-abc-1",
        137,
        "OOMKilled",
    )
    assert by_id[plain_run].pod_name is None
    found = await history.runs(pool, [pod_run])
    assert found[pod_run].pod_reason == "OOMKilled"


async def test_archived_runs_keep_the_pod_of_their_latest_attempt(
    pool: store_pool.Pool, store_dsn: str
):
    schedule_id = await make_schedule(pool)
    pod_run = await fire(pool, schedule_id, 1)
    plain_run = await fire(pool, schedule_id, 2)
    claimed = {run.id: run for run in await claims.claim(pool, "launcher", limit=10)}
    assert await pod_runs.record_pod(
        pool,
        "launcher",
        pod_run,
        claimed[pod_run].attempt,
        pod_name="windowed-abc-1",
        exit_code=137,
        reason="OOMKilled",
    )
    outcomes = [
        finishes.failed(claimed[pod_run], "OOMKilled", failures.FailureClass.PERMANENT),
        finishes.succeeded(claimed[plain_run]),
    ]
    await claims.finish(pool, "launcher", outcomes)
    await maintenance.ensure_partitions(pool)
    assert await maintenance.archive_finished(pool, older_than_seconds=0) == 2
    with psycopg.connect(store_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM job_runs").fetchone() == (0,)

    archived = await history.runs(pool, [pod_run, plain_run])
    assert (archived[pod_run].state, archived[pod_run].pod_name) == ("failed", "windowed-abc-1")
    assert (archived[pod_run].pod_exit_code, archived[pod_run].pod_reason) == (137, "OOMKilled")
    assert archived[plain_run].pod_name is None
    window = (
        await history.window(pool, [history.WindowRequest(schedule_id, successful=1, failed=1)])
    )[schedule_id]
    assert [(run.id, run.pod_reason) for run in window.failed] == [(pod_run, "OOMKilled")]
    recent = {row.id: row for row in await history.recent(pool, namespace="default")}
    assert (recent[pod_run].pod_name, recent[pod_run].pod_exit_code) == ("windowed-abc-1", 137)
    assert recent[pod_run].pod_reason == "OOMKilled"

    # `sundial runs` prints them, read from the month partition.
    printed = await asyncio.to_thread(
        CliRunner().invoke, cli.main, ["runs", "--dsn", store_dsn, "--job", "windowed"]
    )
    assert printed.exit_code == 0, printed.output
    header, *lines = printed.output.splitlines()
    assert header.split()[-4:] == ["POD", "EXIT", "POD", "REASON"]
    [pod_line] = [line for line in lines if line.startswith(f"{pod_run} ")]
    assert pod_line.split()[-3:] == ["windowed-abc-1", "137", "OOMKilled"]


async def test_active_count_is_exact_beyond_the_listed_runs(pool: store_pool.Pool):
    schedule_id = await make_schedule(pool)
    listed_at_most = history.MAX_ACTIVE_LISTED
    for second in range(listed_at_most + 20):
        await runs.submit(
            pool,
            schedule_id,
            schedule_id=schedule_id,
            fire_time=NOW + datetime.timedelta(seconds=second),
        )
    small = await make_schedule(pool, "small")
    await fire(pool, small, 1)

    windows = await history.window(
        pool,
        [
            history.WindowRequest(schedule_id, successful=1, failed=1),
            history.WindowRequest(small, successful=1, failed=1),
        ],
    )
    assert len(windows[schedule_id].active) == listed_at_most
    assert windows[schedule_id].active_count == listed_at_most + 20
    assert windows[small].active_count == 1


async def test_a_digest_changes_exactly_when_the_mirror_would_read_something_new(
    pool: store_pool.Pool,
):
    quiet, busy = await make_schedule(pool, "quiet"), await make_schedule(pool, "busy")
    requests = [history.WindowRequest(uid, successful=2, failed=1) for uid in (quiet, busy)]

    async def digests() -> dict[uuid.UUID, history.Digest]:
        return await history.digests(pool, requests)

    first = await digests()
    assert set(first) == {quiet, busy}
    assert await digests() == first  # nothing happened, nothing read anew

    changes = []
    await fire(pool, busy, 5)  # a fire: a new active run
    changes.append(await digests())
    claimed = await claims.claim(pool, "w", limit=10)  # it starts
    changes.append(await digests())
    await claims.finish(pool, "w", [finishes.succeeded(run) for run in claimed])  # it ends
    changes.append(await digests())
    await schedules.set_suspended(pool, busy, True)  # the schedule row changes
    changes.append(await digests())

    seen = [first[busy], *(found[busy] for found in changes)]
    assert len({digest.value for digest in seen}) == len(seen), seen
    # The other schedule's digest never moved.
    assert all(found[quiet] == first[quiet] for found in changes)
    assert not any(digest.capped for digest in seen)


async def test_a_digest_says_when_the_window_lists_as_many_active_runs_as_it_may(
    pool: store_pool.Pool,
):
    schedule_id = await make_schedule(pool)
    for minute in range(history.MAX_ACTIVE_LISTED):
        await runs.submit(
            pool,
            schedule_id,
            schedule_id=schedule_id,
            fire_time=NOW + datetime.timedelta(minutes=minute),
        )
    [digest] = (
        await history.digests(pool, [history.WindowRequest(schedule_id, successful=1, failed=1)])
    ).values()
    assert digest.capped


async def test_the_change_number_holds_at_rest_and_moves_after_each_write(
    pool: store_pool.Pool,
) -> None:
    """What lets the mirror skip a whole pass at rest: the number stays while nothing is
    written, and moves, within seconds, after a fire, a claim and a finish."""
    schedule_id = await make_schedule(pool)

    async def settled() -> int:
        # A backend reports its counters when it goes idle, at once if its last report is a
        # second old, else within PostgreSQL's idle interval (10 s).
        last = await history.changes(pool)
        for _ in range(10):
            await asyncio.sleep(11)
            now = await history.changes(pool)
            if now == last:
                assert now is not None
                return now
            last = now
        raise AssertionError("the change number never settled")

    async def moved_from(before: int) -> int:
        for _ in range(250):
            now = await history.changes(pool)
            if now != before:
                assert now is not None
                return now
            await asyncio.sleep(0.1)
        raise AssertionError("the change number did not move after a write")

    at_rest = await settled()
    await asyncio.sleep(1.5)
    assert await history.changes(pool) == at_rest
    await fire(pool, schedule_id, 5)
    fired = await moved_from(at_rest)
    claimed = await claims.claim(pool, "w", limit=10)
    assert claimed
    started = await moved_from(fired)
    await claims.finish(pool, "w", [finishes.succeeded(run) for run in claimed])
    await moved_from(started)
