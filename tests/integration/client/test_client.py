"""``sundial.client``: an integrator defines a job from Python, submits runs of it, reads and
cancels them, against a real PostgreSQL; a definition that breaks a rule is refused with the
argument named and nothing stored."""

from __future__ import annotations

import uuid

import psycopg
import pytest
import redis.asyncio as aioredis

from sundial.client import BatchItem, CancelResult, Client, InvalidJobError, JobNameTakenError
from sundial.localdev.redis_server import ThrowawayRedis
from sundial.store import errors as store_errors
from sundial.store.hot_queue import outbox
from sundial.store.hot_queue.dispatch import HotDispatch
from support.store import create_job


async def test_a_defined_job_takes_runs_and_a_redefinition_changes_later_ones(store_dsn: str):
    async with Client(store_dsn) as client:
        job = await client.define_job("billing", "charge", handler="billing.charge", priority=4)
        one = await client.submit("billing/charge", args={"invoice": 1})
        again = await client.define_job(
            "billing", "charge", handler="billing.charge", queue="slow", priority=7
        )
        many = await client.submit_many(job, [{"invoice": 2}, BatchItem(args={"invoice": 3})])
        first = await client.get(one.run_id)
    assert again == job
    assert one.created and [m.created for m in many] == [True, True]
    assert first is not None and first.job_id == job and first.args == {"invoice": 1}
    with psycopg.connect(store_dsn) as conn:
        rows = conn.execute(
            "SELECT id, queue, priority FROM job_runs WHERE job_id = %s ORDER BY id", (job,)
        ).fetchall()
        definitions = conn.execute(
            "SELECT count(*) FROM job_definitions WHERE namespace = 'billing'"
        ).fetchone()
    assert [(queue, priority) for _, queue, priority in rows] == [
        ("default", 4),
        ("slow", 7),
        ("slow", 7),
    ]
    assert definitions == (1,)


async def test_an_idempotent_submission_returns_the_first_run(store_dsn: str):
    async with Client(store_dsn) as client:
        await client.define_job("team-a", "report", handler="reports.daily")
        first = await client.submit("team-a/report", args={"day": 1}, idempotency_key="d1")
        second = await client.submit("team-a/report", args={"day": 1}, idempotency_key="d1")
    assert first.created is True
    assert (second.run_id, second.created) == (first.run_id, False)


async def test_cancel_and_wait_on_a_run_that_had_not_started(store_dsn: str):
    async with Client(store_dsn) as client:
        await client.define_job("team-a", "later", handler="reports.later")
        run = await client.submit("team-a/later", delay_seconds=3600)
        with pytest.raises(TimeoutError, match="still scheduled"):
            await client.wait(run.run_id, within=0.3, poll_seconds=0.05)
        assert await client.cancel(run.run_id) == CancelResult.CANCELLED
        ended = await client.wait(run.run_id, within=10)
        with pytest.raises(store_errors.NoSuchRunError):
            await client.wait(10**12, within=1)
    assert ended.state == "cancelled"


@pytest.mark.parametrize(
    ("changes", "names"),
    [
        ({"handler": "has space"}, "handler='has space'"),
        ({"priority": 10}, "priority=10"),
        ({"queue": "Not_A_Label"}, "queue='Not_A_Label'"),
        ({"timeout_seconds": 0}, "timeout_seconds=0"),
        ({"max_retries": -1}, "max_retries=-1"),
        ({"backoff_base_seconds": 10, "backoff_cap_seconds": 5}, "backoff_cap_seconds"),
        ({"execution_model": "gpu"}, "execution_model='gpu'"),
        ({"dependency": "Upper"}, "dependency='Upper'"),
    ],
)
async def test_a_bad_definition_names_the_argument_and_stores_nothing(
    store_dsn: str, changes: dict[str, object], names: str
):
    arguments: dict[str, object] = {"handler": "ok.handler", **changes}
    async with Client(store_dsn) as client:
        with pytest.raises(InvalidJobError) as refused:
            await client.define_job("team-a", "bad", **arguments)  # type: ignore[arg-type]
    assert names in str(refused.value)
    assert "nothing stored" in str(refused.value)
    with psycopg.connect(store_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM job_definitions").fetchone() == (0,)


@pytest.mark.parametrize(
    ("namespace", "name", "says"),
    [
        ("Team-A", "job", "namespace 'Team-A' is not a Kubernetes name"),
        ("team-a", "job_1", "name 'job_1' is not a Kubernetes name"),
        ("team-a", "", "name '' is not a Kubernetes name"),
        ("x" * 64, "job", "at most 63 characters"),
    ],
)
async def test_a_bad_namespace_or_name_is_refused(
    store_dsn: str, namespace: str, name: str, says: str
):
    async with Client(store_dsn) as client:
        with pytest.raises(InvalidJobError, match=says):
            await client.define_job(namespace, name, handler="ok.handler")


async def test_a_scheduled_jobs_name_is_not_taken_over(store_dsn: str):
    scheduled = create_job(store_dsn, "nightly")  # a ScheduledJob's definition, by its uid
    with psycopg.connect(store_dsn) as conn:
        namespace, handler = conn.execute(
            "SELECT namespace, handler FROM job_definitions WHERE id = %s", (scheduled,)
        ).fetchone()  # type: ignore[misc]
    async with Client(store_dsn) as client:
        with pytest.raises(JobNameTakenError, match="belongs to another job"):
            await client.define_job(namespace, "nightly", handler="something.else")
    with psycopg.connect(store_dsn) as conn:
        row = conn.execute(
            "SELECT id, handler FROM job_definitions WHERE namespace = %s AND name = 'nightly'",
            (namespace,),
        ).fetchall()
    assert row == [(scheduled, handler)]
    assert isinstance(scheduled, uuid.UUID)


async def test_a_closed_client_says_how_to_open_it(store_dsn: str):
    client = Client(store_dsn)
    with pytest.raises(RuntimeError, match="not open"):
        await client.get(1)


async def test_on_the_hot_queue_a_held_run_reads_running_and_is_asked_to_stop(
    store_dsn: str, redis_server: ThrowawayRedis
) -> None:
    """Given the hot queue's Redis, the client reads a run a runner holds there as running
    (the record says pending while it runs) and cancels it as a running run."""
    outbox.switch(store_dsn, on=True)
    async with Client(store_dsn, hot_queue_url=redis_server.url) as client:
        await client.define_job("billing", "charge", handler="billing.charge")
        run_id = (await client.submit("billing/charge")).run_id
        redis = aioredis.Redis.from_url(redis_server.url)
        try:
            await redis.flushall()
            while (await outbox.Relay(client.pool, redis).once()).runs:
                pass
            claimed = await HotDispatch(lambda: client.pool, redis).claim(
                "runner-1",
                queues=["default"],
                handlers=["billing.charge"],
                execution_models=["async"],
                registered_model=True,
                limit=1,
                lease_seconds=30.0,
                namespaces=None,
            )
        finally:
            await redis.aclose()
        assert [run.id for run in claimed] == [run_id]
        seen = await client.get(run_id)
        assert seen is not None and (seen.state, seen.attempt) == ("running", 1)
        assert await client.cancel(run_id) is CancelResult.REQUESTED
        after = await client.get(run_id)
        assert after is not None and after.state == "running" and after.cancel_requested
