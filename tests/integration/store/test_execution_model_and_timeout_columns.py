"""The execution model is defined once (the enum equals the SQL CHECKs); a job's timeout and
model may be unset (NULL: the registration decides); migration 0080 reads the old defaults as
unset; only claimers that register the handler take runs with no model."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import psycopg
import pytest
from psycopg.types.json import Jsonb

from sundial.api import execution_model
from sundial.store import claims, migrate, runs
from sundial.store import pool as store_pool


@pytest.mark.parametrize("table", ["job_definitions", "job_runs"])
def test_the_enum_equals_the_sql_check(store_dsn: str, table: str) -> None:
    with psycopg.connect(store_dsn) as conn:
        definitions = [
            row[0]
            for row in conn.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid = %s::regclass AND contype = 'c'"
                "   AND pg_get_constraintdef(oid) LIKE '%%execution_model = ANY%%'",
                (table,),
            )
        ]
    assert len(definitions) == 1, definitions
    allowed = set(re.findall(r"'([a-z]+)'::text", definitions[0]))
    assert allowed == {model.value for model in execution_model.ExecutionModel}


def test_migration_0080_reads_the_old_defaults_as_unset(make_database: Callable[..., str]) -> None:
    dsn = make_database()
    migrate.migrate(dsn, target=70)
    defaulted, explicit, pod = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO job_definitions (id, namespace, name, handler) VALUES (%s, 'd', 'a', 'h')",
            (defaulted,),
        )
        conn.execute(
            "INSERT INTO job_definitions (id, namespace, name, handler, execution_model,"
            " timeout_seconds) VALUES (%s, 'd', 'b', 'h', 'thread', 600)",
            (explicit,),
        )
        conn.execute(
            "INSERT INTO job_definitions (id, namespace, name, handler, execution_model,"
            " pod_template) VALUES (%s, 'd', 'c', 'h', 'pod', %s)",
            (pod, Jsonb({})),
        )
        runs_of = {}
        for state in ("pending", "running"):
            runs_of[state] = conn.execute(
                "INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,"
                " max_retries, backoff_base_seconds, backoff_cap_seconds, state, priority,"
                " run_at, dispatch_key, lease_owner, lease_until)"
                " VALUES (%s, 'default', 'h', 'async', 300, 0, 0, 0, %s, 1, now(), 0,"
                " CASE WHEN %s = 'running' THEN 'w' END,"
                " CASE WHEN %s = 'running' THEN now() END) RETURNING id",
                (defaulted, state, state, state),
            ).fetchone()[0]  # type: ignore[index]

    migrate.migrate(dsn)

    with psycopg.connect(dsn) as conn:
        jobs = dict(
            (row[0], row[1:])
            for row in conn.execute(
                "SELECT id, execution_model, timeout_seconds FROM job_definitions"
            )
        )
        run_rows = dict(
            (row[0], row[1:])
            for row in conn.execute("SELECT id, execution_model, timeout_seconds FROM job_runs")
        )
    assert jobs[defaulted] == (None, None)
    assert jobs[explicit] == ("thread", 600)
    assert jobs[pod] == ("pod", None)
    assert run_rows[runs_of["pending"]] == (None, None)
    assert run_rows[runs_of["running"]] == ("async", 300)  # claimed already: left as it ran


def test_a_pod_job_still_needs_its_template(store_dsn: str) -> None:
    with psycopg.connect(store_dsn) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "INSERT INTO job_definitions (id, namespace, name, handler, execution_model)"
            " VALUES (%s, 'd', 'nopod', 'h', 'pod')",
            (uuid.uuid4(),),
        )


async def test_only_a_claimer_that_registers_the_handler_takes_a_run_with_no_model(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("unset", execution_model=None, timeout_seconds=None)
    run_id = (await runs.submit(pool, job)).run_id

    pod_launcher = await claims.claim(pool, "launcher", execution_models=["pod"], limit=5)
    other_model = await claims.claim(
        pool, "r", handlers=["handlers.unset"], execution_models=["thread"], limit=5
    )
    assert pod_launcher == [] and other_model == []  # neither said it registers the handler

    [claimed] = await claims.claim(
        pool,
        "r",
        handlers=["handlers.unset"],
        execution_models=["thread"],
        registered_model=True,
        limit=5,
    )
    assert (claimed.id, claimed.execution_model, claimed.timeout_seconds) == (run_id, None, None)


@pytest.mark.parametrize(
    ("handler", "timeout_seconds", "stored"),
    [
        ({"name": "reports.build"}, None, (None, None)),
        ({"name": "reports.build", "executionModel": "thread"}, 600, ("thread", 600)),
        ({"name": "reports.build", "executionModel": "async"}, 300, ("async", 300)),
    ],
)
async def test_a_scheduled_job_stores_only_what_its_manifest_says(
    pool: store_pool.Pool,
    store_dsn: str,
    handler: dict[str, object],
    timeout_seconds: int | None,
    stored: tuple[str | None, int | None],
) -> None:
    from datetime import UTC, datetime

    from sundial.api import scheduled_job
    from sundial.store import schedules

    manifest: dict[str, object] = {"schedule": "@daily", "handler": handler}
    if timeout_seconds is not None:
        manifest["timeoutSeconds"] = timeout_seconds
    spec = scheduled_job.ScheduledJobSpec.model_validate(manifest)
    uid = uuid.uuid4()
    now = datetime(2026, 6, 1, tzinfo=UTC)
    await schedules.upsert(pool, uid=uid, namespace="d", name="j", generation=1, spec=spec, now=now)
    with psycopg.connect(store_dsn) as conn:
        row = conn.execute(
            "SELECT execution_model, timeout_seconds FROM job_definitions WHERE id = %s", (uid,)
        ).fetchone()
    assert row == stored
