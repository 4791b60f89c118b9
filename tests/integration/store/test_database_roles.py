"""Database roles per component: ``sundial migrate --login`` makes logins for the operator, the
runner and the history reader, each does its whole job with its own grants, and none can do
more (alter the schema, delete runs, change jobs, write as a reader)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg import sql

from sundial.client import Client
from sundial.store import errors as store_errors
from sundial.store import history as store_history
from sundial.store import maintenance, migrate, roles, runs
from sundial.store import pool as store_pool
from sundial.store.hot_queue import outbox
from support import runner_loop
from support.database_logins import drop_roles, sundial_migrate
from support.databases import PostgresServer
from support.maintainer import create_partition, month_start
from support.store import create_job

PASSWORD = "p4ss-word-not-in-logs"


@dataclass(frozen=True)
class Logins:
    prefix: str
    dsns: dict[str, str]  # component -> DSN of its login


@pytest.fixture
def logins(store_dsn: str, postgres_server: PostgresServer) -> Iterator[Logins]:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    names = {component: f"{prefix}_{component}_login" for component in roles.COMPONENTS}
    env = {f"SUNDIAL_LOGIN_PASSWORD_{c.upper()}": PASSWORD for c in roles.COMPONENTS}
    args = ["--role-prefix", prefix]
    for component, login in names.items():
        args += ["--login", f"{component}={login}"]
    try:
        done = sundial_migrate(store_dsn, *args, env=env)
        assert done.returncode == 0, done.stderr
        assert PASSWORD not in done.stdout + done.stderr
        info = psycopg.conninfo.conninfo_to_dict(store_dsn)
        dsns = {}
        for component, login in names.items():
            dsns[component] = psycopg.conninfo.make_conninfo(
                **{**info, "user": login, "password": PASSWORD}  # type: ignore[arg-type]
            )
        yield Logins(prefix, dsns)
    finally:
        groups = [roles.role_name(c, prefix) for c in roles.COMPONENTS]
        drop_roles(postgres_server.admin_dsn, store_dsn, [*names.values(), *groups])


def refused(dsn: str, statement: str) -> bool:
    """Whether PostgreSQL refuses ``statement`` for lack of privilege (or ownership)."""
    with psycopg.connect(dsn) as conn:
        try:
            conn.execute(statement)
        except pg_errors.InsufficientPrivilege:
            return True
    return False


async def test_a_runner_login_runs_jobs_with_retries_and_dependencies(
    logins: Logins, store_dsn: str, tmp_path: pathlib.Path
) -> None:
    """A real `sundial runner --maintenance` as the runner's login; its runs are submitted
    through the store's API as that login too (as handler code would)."""
    noop = create_job(store_dsn, "noop", handler="loop.noop", execution_model="async")
    explode = create_job(
        store_dsn, "explode", handler="loop.raise", execution_model="async", max_retries=1
    )
    runner_dsn = logins.dsns["runner"]
    pool = await store_pool.open_pool(runner_dsn, min_size=1, max_size=2)
    try:
        first = await runs.submit(pool, noop, idempotency_key="first")
        again = await runs.submit(pool, noop, idempotency_key="first")
        after = await runs.submit(pool, noop, depends_on=[first.run_id])
        failing = await runs.submit(pool, explode)
    finally:
        await pool.close()
    assert again.run_id == first.run_id

    started = runner_loop.Runners(tmp_path)
    try:
        runner = started.start(runner_dsn)
        ended = ("completed", "failed", "dead_lettered")
        for run_id in (first.run_id, after.run_id, failing.run_id):
            runner_loop.eventually(
                lambda run_id=run_id: runner_loop.run_row(store_dsn, run_id)["state"] in ended,
                what=f"run {run_id} to end",
            )
        rows = {i: runner_loop.run_row(store_dsn, i) for i in (first.run_id, after.run_id)}
        assert [row["state"] for row in rows.values()] == ["completed", "completed"], rows
        row = runner_loop.run_row(store_dsn, failing.run_id)
        assert (row["state"], row["attempt"], row["retries_used"]) == ("dead_lettered", 2, 1), row
        denied = [e for e in runner.logs() if "permission denied" in str(e)]
        assert not denied, denied
        assert not any(PASSWORD in str(e) for e in runner.logs())
    finally:
        for _ in started.close():
            pass


async def test_a_runner_refused_a_statement_stops_and_says_why(
    logins: Logins, store_dsn: str, tmp_path: pathlib.Path
) -> None:
    """Without a grant its finish needs, a runner used to go on claiming nothing, silently.
    Now the part that failed is logged with PostgreSQL's refusal and the runner exits 1."""
    group = roles.role_name("runner", logins.prefix)
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        assert conn.execute(  # the month's partition is made by the first failed attempt
            "SELECT to_regclass('job_run_attempts_' || to_char(now() AT TIME ZONE 'UTC',"
            " 'YYYYMM')) IS NULL"
        ).fetchone() == (True,)
        conn.execute(
            sql.SQL(
                "REVOKE EXECUTE ON FUNCTION sundial_ensure_month_partition(timestamptz) FROM {}"
            ).format(sql.Identifier(group))
        )
    explode = create_job(store_dsn, "explode", handler="loop.raise", execution_model="async")
    runner_loop.submit(store_dsn, explode)
    started = runner_loop.Runners(tmp_path)
    try:
        runner = started.start(logins.dsns["runner"])
        assert runner.process.wait(60) == 1
        failed = runner.logged("a part of the runner failed; stopping", part="finisher")
        assert failed and "permission denied" in str(failed[0]), runner.logs()[-5:]
    finally:
        for _ in started.close():
            pass


async def test_an_operator_login_keeps_the_history_and_a_reader_login_reads_it(
    logins: Logins, store_dsn: str
) -> None:
    job = create_job(store_dsn, "kept")
    long_ago = month_start(datetime.now(UTC), -14)
    create_partition(store_dsn, long_ago)  # as the owner: a partition from before the roles
    operator = await store_pool.open_pool(logins.dsns["operator"], min_size=1, max_size=2)
    try:
        await maintenance.ensure_partitions(operator, months_ahead=2)
        submitted = await runs.submit(operator, job, idempotency_key="kept-1")
        cancelled = await runs.cancel(operator, submitted.run_id)
        assert cancelled is not None
        assert await maintenance.archive_finished(operator, older_than_seconds=0) == 1
        dropped = await maintenance.drop_partitions_before(
            operator, month_start(datetime.now(UTC), -6)
        )
        assert set(dropped.dropped) == {
            f"finished_runs_{long_ago:%Y%m}",
            f"job_run_attempts_{long_ago:%Y%m}",
        }
        expired = await maintenance.expire_keys(operator, older_than_seconds=0)
        assert expired.idempotency_keys == 1
    finally:
        await operator.close()

    reader = await store_pool.open_pool(logins.dsns["reader"], min_size=1, max_size=2)
    try:
        rows = await store_history.recent(reader, namespace="default")
        assert [row.id for row in rows] == [submitted.run_id]
        # What the history API reads at start: whether the database's hot queue is on.
        assert await outbox.mode_problem(reader, url_given=False, component="reader") is None
    finally:
        await reader.close()
    writes = [
        f"UPDATE job_runs SET priority = 9 WHERE id = {submitted.run_id}",
        "DELETE FROM finished_runs",
        "INSERT INTO runners (worker_id) VALUES ('me')",
        f"SELECT sundial_ensure_month_partition(now() + interval '{24} months')",
    ]
    assert [w for w in writes if not refused(logins.dsns["reader"], w)] == []


@pytest.mark.parametrize("component", ["runner", "reader", "operator"])
def test_no_component_can_alter_the_schema(logins: Logins, store_dsn: str, component: str) -> None:
    with psycopg.connect(store_dsn, autocommit=True) as conn:  # this month's partitions
        conn.execute("SELECT sundial_ensure_month_partition(now())")
    statements = [
        "DROP TABLE job_runs",
        "ALTER TABLE job_runs ADD COLUMN stolen text",
        "TRUNCATE job_runs",
        "CREATE TABLE stolen (x int)",
        "DROP FUNCTION sundial_finish",
        "CREATE INDEX stolen_idx ON job_runs (args)",
        f"DROP TABLE finished_runs_{datetime.now(UTC):%Y%m}",
    ]
    assert [s for s in statements if not refused(logins.dsns[component], s)] == []


def test_a_runner_login_cannot_delete_runs_or_change_jobs(logins: Logins, store_dsn: str) -> None:
    job = create_job(store_dsn, "guarded")
    with psycopg.connect(store_dsn, autocommit=True) as conn:  # this month's partitions
        conn.execute("SELECT sundial_ensure_month_partition(now())")
    statements = [
        "DELETE FROM job_runs",
        "DELETE FROM finished_runs",
        "DELETE FROM job_run_attempts",
        f"UPDATE job_definitions SET handler = 'evil.handler' WHERE id = '{job}'",
        "UPDATE schedules SET timezone = 'UTC'",
        "DELETE FROM idempotency_keys",
        "UPDATE leader_leases SET holder = 'me'",
        f"SELECT sundial_drop_month_partition('finished_runs_{datetime.now(UTC):%Y%m}')",
    ]
    assert [s for s in statements if not refused(logins.dsns["runner"], s)] == []


async def test_the_python_client_defines_jobs_as_the_operator_and_submits_as_the_runner(
    logins: Logins,
) -> None:
    """Defining a job writes a definition, which the runner's role may not (handler code must
    not rewrite jobs): refused with the reason and the fix. Submitting and reading need only
    the runner's role."""
    async with Client(logins.dsns["runner"]) as client:
        with pytest.raises(store_errors.PermissionDeniedError) as denied:
            await client.define_job("team-a", "report", handler="reports.daily")
    assert "permission denied for table job_definitions" in str(denied.value)
    assert "Database roles" in str(denied.value) and PASSWORD not in str(denied.value)
    async with Client(logins.dsns["operator"]) as client:
        await client.define_job("team-a", "report", handler="reports.daily")
    async with Client(logins.dsns["runner"]) as client:
        submitted = await client.submit("team-a/report", args={"day": 1})
        run = await client.get(submitted.run_id)
    assert run is not None and run.state == "pending"


def test_migrating_again_keeps_the_logins_and_a_new_password_takes(
    logins: Logins, store_dsn: str
) -> None:
    login = f"{logins.prefix}_reader_login"
    env = {"SUNDIAL_LOGIN_PASSWORD_READER": "another-one"}
    args = ["--role-prefix", logins.prefix, "--login", f"reader={login}"]
    done = sundial_migrate(store_dsn, *args, env=env)
    assert done.returncode == 0, done.stderr
    assert "another-one" not in done.stdout + done.stderr
    info = psycopg.conninfo.conninfo_to_dict(logins.dsns["reader"])
    renewed = psycopg.conninfo.make_conninfo(**{**info, "password": "another-one"})  # type: ignore[arg-type]
    with psycopg.connect(renewed) as conn:
        assert conn.execute("SELECT count(*) FROM job_runs").fetchone() == (0,)
    assert refused(logins.dsns["runner"], "DELETE FROM job_runs")


@pytest.mark.parametrize(
    ("login", "env", "says"),
    [
        ("runner", {}, "write COMPONENT=NAME"),
        ("runner=", {}, "write COMPONENT=NAME"),
        ("scheduler=x", {}, "COMPONENT one of operator, runner, reader"),
        ("runner=x", {}, "set the login's password in SUNDIAL_LOGIN_PASSWORD_RUNNER"),
    ],
)
def test_a_bad_login_is_a_usage_error_that_says_what_to_write(
    store_dsn: str, login: str, env: dict[str, str], says: str
) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SUNDIAL_LOGIN_")}
    done = subprocess.run(
        [sys.executable, "-m", "sundial", "migrate", "--dsn", store_dsn, "--login", login],
        capture_output=True,
        text=True,
        env={**environment, **env},
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert says in done.stderr


def test_an_owner_without_createrole_migrates_and_is_told_how_to_make_the_roles(
    postgres_server: PostgresServer, make_database: object
) -> None:
    owner = f"t{uuid.uuid4().hex[:8]}_owner"
    database = f"t_{uuid.uuid4().hex[:12]}"
    prefix = f"t{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(owner), sql.Literal(PASSWORD)
            )
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(database), sql.Identifier(owner)
            )
        )
    info = psycopg.conninfo.conninfo_to_dict(postgres_server.dsn_for(database))
    dsn = psycopg.conninfo.make_conninfo(**{**info, "user": owner, "password": PASSWORD})  # type: ignore[arg-type]
    try:
        done = sundial_migrate(dsn, "--role-prefix", prefix)
        assert done.returncode == 0, done.stderr
        assert f"{prefix}_operator" in done.stderr and "CREATEROLE" in done.stderr
        # The warning does not hide what the run changed.
        last = migrate.available()[-1]
        assert f"applied {last.version:04d}_{last.name}" in done.stdout, done.stdout
        assert "schema is up to date" not in done.stdout, done.stdout
        assert migrate.applied_versions(dsn)[-1] == migrate.available()[-1].version
        asked = sundial_migrate(
            dsn,
            "--role-prefix",
            prefix,
            "--login",
            f"runner={prefix}_r",
            env={"SUNDIAL_LOGIN_PASSWORD_RUNNER": "x"},
        )
        assert asked.returncode == 1 and "CREATEROLE" in asked.stderr
    finally:
        postgres_server.drop_database(database)
        with psycopg.connect(postgres_server.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(owner)))


def test_the_drop_function_drops_only_history_month_partitions(store_dsn: str) -> None:
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        with pytest.raises(pg_errors.InvalidParameterValue, match="not a month partition"):
            conn.execute("SELECT sundial_drop_month_partition('job_runs')")
        gone = conn.execute("SELECT sundial_drop_month_partition('finished_runs_199001')")
        assert gone.fetchone() == (False,)
        assert conn.execute("SELECT to_regclass('job_runs') IS NOT NULL").fetchone() == (True,)


def test_a_runner_may_take_a_hot_queue_epoch_and_never_rewrite_one(logins: Logins) -> None:
    """Epochs only grow: a runner takes the next one (a failover of the hot queue's Redis),
    and no component rewrites or removes one; a reader takes none."""
    runner, reader = logins.dsns["runner"], logins.dsns["reader"]
    with psycopg.connect(runner, autocommit=True) as conn:
        conn.execute("INSERT INTO hot_queue_epochs (queue) VALUES ('default')")
    for statement in (
        "UPDATE hot_queue_epochs SET queue = 'other'",
        "DELETE FROM hot_queue_epochs",
    ):
        assert refused(runner, statement), statement
    with psycopg.connect(runner) as conn, pytest.raises(pg_errors.GeneratedAlways):
        conn.execute("INSERT INTO hot_queue_epochs (epoch, queue) VALUES (1000000, 'default')")
    assert refused(reader, "INSERT INTO hot_queue_epochs (queue) VALUES ('default')")


def test_the_outbox_is_written_by_its_triggers_for_any_writer_and_emptied_by_the_relay(
    logins: Logins, store_dsn: str
) -> None:
    """A runner that makes a run pending gets its entry written (the triggers run as the
    owner), may take entries off (it relays) but not write them itself; a reader neither."""
    runner, reader = logins.dsns["runner"], logins.dsns["reader"]
    job = create_job(store_dsn)
    outbox.switch(store_dsn, on=True)

    async def submit_as_runner() -> int:
        opened = await store_pool.open_pool(runner, min_size=1, max_size=1)
        try:
            return (await runs.submit(opened, job)).run_id
        finally:
            await opened.close()

    run_id = asyncio.run(submit_as_runner())
    with psycopg.connect(runner, autocommit=True) as conn:
        taken = conn.execute("DELETE FROM hot_queue_outbox RETURNING run_id").fetchall()
    assert taken == [(run_id,)]
    assert refused(runner, f"INSERT INTO hot_queue_outbox (run_id) VALUES ({run_id})")
    assert refused(reader, "DELETE FROM hot_queue_outbox")
