"""A runner's database login kept to its namespaces (`sundial migrate --login-namespaces`):
handler code running with that login can neither read nor change another namespace's runs,
whatever SQL it writes, while the runner serves its own namespace as before."""

from __future__ import annotations

import json
import pathlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg.types.json import Jsonb

from sundial.store import errors as store_errors
from sundial.store import pool as store_pool
from sundial.store import roles, runners, runs
from support import runner_loop
from support.database_logins import drop_roles, login_dsn, sundial_migrate
from support.databases import PostgresServer
from support.maintainer import create_partition, month_start

PASSWORD = "kept-login-password"


@dataclass(frozen=True)
class Tenants:
    kept_dsn: str  # the runner login of team-b, kept to team-b
    login: str
    group: str
    team_a: uuid.UUID  # a job of each namespace
    team_b: uuid.UUID


@pytest.fixture
def tenants(store_dsn: str, postgres_server: PostgresServer) -> Iterator[Tenants]:
    prefix = f"k{uuid.uuid4().hex[:8]}"
    login = f"{prefix}_runner_team_b"
    try:
        done = sundial_migrate(
            store_dsn,
            "--role-prefix", prefix,
            "--login", f"runner={login}",
            "--login-namespaces", f"{login}=team-b",
            env={"SUNDIAL_LOGIN_PASSWORD_RUNNER": PASSWORD},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"login {login} sees and changes only the runs of team-b" in done.stdout
        team_a = runner_loop.create_job(store_dsn, "loop.noop", namespace="team-a")
        team_b = runner_loop.create_job(
            store_dsn, "loop.trespass", namespace="team-b", execution_model="thread"
        )
        yield Tenants(
            login_dsn(store_dsn, login, PASSWORD),
            login,
            roles.role_name("runner", prefix),
            team_a,
            team_b,
        )
    finally:
        groups = [roles.role_name(c, prefix) for c in roles.COMPONENTS]
        drop_roles(postgres_server.admin_dsn, store_dsn, [login, f"{login}_operator", *groups])


def test_handler_code_with_its_runners_login_cannot_read_cancel_or_add_anothers_runs(
    tenants: Tenants, store_dsn: str, tmp_path: pathlib.Path
) -> None:
    """A real runner of team-b, its thread handler using the runner's own DSN: the neighbour's
    run stays unread, pending and alone; team-b's own run completes."""
    (victim,) = runner_loop.submit(store_dsn, tenants.team_a, args={"secret": "team-a's"})
    out = tmp_path / "trespass.json"
    (own,) = runner_loop.submit(
        store_dsn,
        tenants.team_b,
        args={"victim": victim, "victim_namespace": "team-a", "out": str(out)},
    )
    started = runner_loop.Runners(tmp_path)
    try:
        started.start(
            tenants.kept_dsn, "--namespace", "team-b", "--concurrency", "thread=2",
            maintenance=False,
        )  # fmt: skip
        runner_loop.eventually(
            lambda: runner_loop.run_row(store_dsn, own)["state"] == "completed",
            what="team-b's run to complete",
        )
    finally:
        for _ in started.close():
            pass
    got = json.loads(out.read_text())
    assert got == {
        "read": [],
        "cancelled": 0,
        "cancelled_as_group": 0,
        "inserted": "InsufficientPrivilege",
    }
    assert runner_loop.run_row(store_dsn, victim)["state"] == "pending"
    with psycopg.connect(store_dsn) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM job_runs WHERE namespace = 'team-a'"
        ).fetchone()  # type: ignore[misc]
    assert count == 1


def test_a_kept_login_sees_no_archived_run_attempt_key_or_dependency_of_another_namespace(
    tenants: Tenants, store_dsn: str
) -> None:
    now = datetime.now(UTC)
    create_partition(store_dsn, month_start(now))
    (live_a,) = runner_loop.submit(store_dsn, tenants.team_a)
    (live_b,) = runner_loop.submit(store_dsn, tenants.team_b)
    with psycopg.connect(store_dsn) as conn:
        for job, run_id in ((tenants.team_a, 9_000_001), (tenants.team_b, 9_000_002)):
            conn.execute(
                "INSERT INTO finished_runs (id, job_id, queue, handler, state, priority, run_at,"
                " attempt, retries_used, infra_retries_used, lease_expiries, args, last_error,"
                " created_at, finished_at)"
                " VALUES (%s, %s, 'default', 'h', 'failed', 1, now(), 1, 0, 0, 0, %s,"
                " 'secret error', now(), now())",
                (run_id, job, Jsonb({"secret": 1})),
            )
        for run_id in (live_a, live_b, 9_000_001, 9_000_002):
            conn.execute(
                "INSERT INTO job_run_attempts (run_id, attempt, ended_at, outcome, error)"
                " VALUES (%s, 1, now(), 'failed', 'secret error')",
                (run_id,),
            )
            conn.execute(
                "INSERT INTO idempotency_keys (key, args_hash, run_id) VALUES (%s, 'x', %s)",
                (f"key-{run_id}", run_id),
            )
        conn.execute(
            "INSERT INTO job_run_deps (run_id, depends_on) VALUES (%s, %s), (%s, %s)",
            (live_a, 9_000_001, live_b, 9_000_002),
        )
    with psycopg.connect(tenants.kept_dsn, autocommit=True) as conn:
        seen = {
            table: sorted(row[0] for row in conn.execute(f"SELECT {column} FROM {table}"))  # type: ignore[arg-type]
            for table, column in (
                ("job_runs", "id"),
                ("finished_runs", "id"),
                ("job_run_attempts", "run_id"),
                ("idempotency_keys", "run_id"),
                ("job_run_deps", "run_id"),
            )
        }
        assert seen == {
            "job_runs": [live_b],
            "finished_runs": [9_000_002],
            "job_run_attempts": sorted([live_b, 9_000_002]),
            "idempotency_keys": sorted([live_b, 9_000_002]),
            "job_run_deps": [live_b],
        }
        for statement in (
            f"INSERT INTO job_run_deps (run_id, depends_on) VALUES ({live_a}, {live_b})",
            f"INSERT INTO job_run_attempts (run_id, attempt, ended_at, outcome)"
            f" VALUES ({live_a}, 2, now(), 'failed')",
            f"INSERT INTO idempotency_keys (key, args_hash, run_id) VALUES ('k', 'x', {live_a})",
            # Keys shaped as the operator makes them for team-a's JobRuns and run-nows.
            f"INSERT INTO idempotency_keys (key, args_hash, run_id)"
            f" VALUES ('team-a/nightly', 'x', {live_b})",
            f"INSERT INTO idempotency_keys (key, args_hash, run_id)"
            f" VALUES ('run-now:{uuid.uuid4()}:1', 'x', {live_b})",
            "UPDATE login_namespaces SET namespaces = '{team-a,team-b}'",
            "SELECT * FROM login_namespaces",
        ):
            with pytest.raises(pg_errors.InsufficientPrivilege):
                conn.execute(statement)
        # Its own keys, plain or in its namespace's shape, it may add.
        conn.execute(
            "INSERT INTO idempotency_keys (key, args_hash, run_id)"
            " VALUES ('team-b/mine', 'x', %s), ('plain', 'x', %s)",
            (live_b, live_b),
        )


async def test_a_run_waiting_in_another_namespace_is_released_by_a_kept_runners_finish(
    tenants: Tenants, store_dsn: str, tmp_path: pathlib.Path
) -> None:
    """Ending a run releases what waits on it in any namespace; a kept login cannot release a
    run that waits on someone else's run by calling the release itself."""
    upstream = runner_loop.create_job(store_dsn, "loop.noop", namespace="team-b")
    other = runner_loop.create_job(store_dsn, "loop.noop", namespace="team-a")
    pool = await store_pool.open_pool(store_dsn, min_size=1, max_size=2)
    try:
        parent = await runs.submit(pool, upstream)
        foreign_parent = await runs.submit(
            pool, other, run_at=datetime.now(UTC) + timedelta(days=300)
        )
        child = await runs.submit(pool, tenants.team_a, depends_on=[parent.run_id])
        held = await runs.submit(pool, tenants.team_a, depends_on=[foreign_parent.run_id])
    finally:
        await pool.close()
    with psycopg.connect(tenants.kept_dsn, autocommit=True) as conn:
        released = conn.execute(
            "SELECT * FROM sundial_release_dependents(ARRAY[%s]::bigint[])",
            (foreign_parent.run_id,),
        ).fetchall()
        failed = conn.execute(
            "SELECT * FROM sundial_fail_dependents(ARRAY[%s]::bigint[], ARRAY['failed'])",
            (foreign_parent.run_id,),
        ).fetchall()
    assert (released, failed) == ([], [])
    assert runner_loop.run_row(store_dsn, held.run_id)["state"] == "blocked"

    started = runner_loop.Runners(tmp_path)
    try:
        started.start(tenants.kept_dsn, "--namespace", "team-b", maintenance=False)
        runner_loop.eventually(
            lambda: runner_loop.run_row(store_dsn, child.run_id)["state"] == "pending",
            what="team-a's child to be released by team-b's finished parent",
        )
    finally:
        for _ in started.close():
            pass
    assert runner_loop.run_row(store_dsn, parent.run_id)["state"] == "completed"
    assert runner_loop.run_row(store_dsn, held.run_id)["state"] == "blocked"


def _unclaimable(dsn: str, run_id: int) -> str | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT unclaimable_reason FROM job_runs WHERE id = %s", (run_id,)
        ).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


async def test_a_kept_runners_maintenance_and_the_maintainer_say_the_same_of_a_run(
    tenants: Tenants, store_dsn: str
) -> None:
    """A kept login sees only the runners that serve its namespaces, so both verdicts read only
    those: the two passes never rewrite each other's reason, and neither tells team-b that
    team-a runs the handler it asked for."""
    charge = runner_loop.create_job(store_dsn, "billing.charge", namespace="team-b")
    (waiting,) = runner_loop.submit(store_dsn, charge)
    owner = await store_pool.open_pool(store_dsn, min_size=1, max_size=1)
    kept = await store_pool.open_pool(tenants.kept_dsn, min_size=1, max_size=1)
    try:
        await runners.announce(
            owner,
            "team-a-runner",
            queues=["default"],
            handlers={"billing.charge": "async"},
            ttl_seconds=60,
            namespaces=["team-a"],
        )
        blamed = await runners.mark_unclaimable(kept, grace_seconds=0)
        assert [change.run_id for change in blamed] == [waiting]
        reason = _unclaimable(store_dsn, waiting)
        assert reason.startswith(
            "no live runner serves handler billing.charge on queue default in namespace team-b"
        )
        assert "--namespace team-b" in reason
        assert "team-a" not in reason
        assert await runners.mark_unclaimable(owner, grace_seconds=0) == []  # the same reason
        assert await runners.mark_unclaimable(kept, grace_seconds=0) == []

        await runners.announce(
            owner,
            "every-namespace",
            queues=["default"],
            handlers={"billing.charge": "async"},
            ttl_seconds=60,
            namespaces=None,
        )
        assert [c.run_id for c in await runners.mark_unclaimable(kept, grace_seconds=0)] == [
            waiting
        ]
        assert _unclaimable(store_dsn, waiting) is None
    finally:
        await owner.close()
        await kept.close()


@pytest.mark.parametrize(
    ("served", "says"),
    [
        ((), "serves every namespace: start it with --namespace team-b"),
        (("--namespace", "team-a,team-b"), "kept to the namespaces team-b, not team-a"),
    ],
)
def test_a_runner_serving_more_than_its_login_may_see_refuses_to_start_and_says_how(
    tenants: Tenants, tmp_path: pathlib.Path, served: tuple[str, ...], says: str
) -> None:
    started = runner_loop.Runners(tmp_path)
    try:
        runner = started.start(tenants.kept_dsn, *served, maintenance=False)
        assert runner.process.wait(60) == 1
        output = runner.log_path.read_text()
    finally:
        for _ in started.close():
            pass
    assert "sundial runner does not start" in output and says in output, output
    assert PASSWORD not in output


async def test_require_login_serves_passes_an_unlisted_login_and_a_subset(
    tenants: Tenants, store_dsn: str
) -> None:
    owner = await store_pool.open_pool(store_dsn, min_size=1, max_size=1)
    kept = await store_pool.open_pool(tenants.kept_dsn, min_size=1, max_size=1)
    try:
        await runners.require_login_serves(owner, None)
        await runners.require_login_serves(kept, ["team-b"])
        with pytest.raises(store_errors.LoginNamespacesError, match="migrate --login-namespaces"):
            await runners.require_login_serves(kept, None)
    finally:
        await owner.close()
        await kept.close()


def test_lifting_a_login_and_bad_values_say_what_to_write(tenants: Tenants, store_dsn: str) -> None:
    for value, says in (
        ("no-equals-sign", "write LOGIN=NAMESPACE"),
        (f"{tenants.login}=Team_A", "'Team_A' is not a namespace name"),
        (f"{tenants.login}=", "lists no namespace"),
        (f"{tenants.group}=team-a", "is a group role"),
    ):
        done = sundial_migrate(store_dsn, "--no-roles", "--login-namespaces", value)
        assert done.returncode != 0 and says in done.stderr, (value, done.stderr)
    done = sundial_migrate(
        store_dsn,
        "--role-prefix", tenants.group.removesuffix("_runner"),
        "--login", f"operator={tenants.login}_operator",
        "--login-namespaces", f"{tenants.login}_operator=team-a",
        env={"SUNDIAL_LOGIN_PASSWORD_OPERATOR": PASSWORD},
    )  # fmt: skip
    assert done.returncode != 0 and "the operator acts for every namespace" in done.stderr
    done = sundial_migrate(store_dsn, "--no-roles", "--login-namespaces", f"{tenants.login}=*")
    assert done.returncode == 0, done.stderr
    assert f"login {tenants.login} is kept to no namespace" in done.stdout
    with psycopg.connect(tenants.kept_dsn) as conn:
        assert conn.execute("SELECT sundial_login_namespaces()").fetchone() == (None,)


def test_a_kept_login_reads_only_its_jobs_and_runners_and_writes_only_its_own_runners_rows(
    tenants: Tenants, store_dsn: str
) -> None:
    """Jobs and schedules carry templates and default arguments; announcements and circuits
    steer every runner's "unclaimable" reasons and the ScheduledJobs' Degraded condition, and
    say what other teams run."""
    with psycopg.connect(store_dsn) as conn:
        for job in (tenants.team_a, tenants.team_b):
            conn.execute(
                "INSERT INTO schedules (id, job_id, cron, next_fire_time)"
                " VALUES (%s, %s, '* * * * *', now())",
                (uuid.uuid4(), job),
            )
        conn.execute(
            "INSERT INTO runners (worker_id, queues, handlers, expires_at, namespaces) VALUES"
            " ('a-runner', '{default}', '{}', now() + interval '1 hour', '{team-a}'),"
            " ('every-runner', '{default}', '{}', now() + interval '1 hour', NULL)"
        )
        conn.execute(
            "INSERT INTO circuits (worker_id, dependency, state, since)"
            " VALUES ('a-runner', 'stripe', 'closed', now())"
        )
    with psycopg.connect(tenants.kept_dsn, autocommit=True) as conn:
        jobs = {row[0] for row in conn.execute("SELECT id FROM job_definitions")}
        schedule_jobs = {row[0] for row in conn.execute("SELECT job_id FROM schedules")}
        assert (jobs, schedule_jobs) == ({tenants.team_b}, {tenants.team_b})
        # Another team's runner, what it serves and its circuits are not team-b's to read;
        # a runner of every namespace could claim team-b's runs, so it is.
        assert [row[0] for row in conn.execute("SELECT worker_id FROM runners")] == ["every-runner"]
        assert conn.execute("SELECT count(*) FROM circuits").fetchone() == (0,)
        changed = [
            conn.execute(statement).rowcount
            for statement in (
                "UPDATE runners SET expires_at = now() WHERE worker_id = 'a-runner'",
                "UPDATE runners SET expires_at = now() WHERE worker_id = 'every-runner'",
                "DELETE FROM runners WHERE worker_id = 'every-runner'",
                "UPDATE circuits SET state = 'open' WHERE worker_id = 'a-runner'",
                "DELETE FROM circuits",
            )
        ]
        assert changed == [0, 0, 0, 0, 0]
        for statement in (
            "INSERT INTO runners (worker_id, queues, handlers, expires_at, namespaces)"
            " VALUES ('b-fake', '{default}', '{}', now() + interval '1 hour', '{team-a}')",
            "INSERT INTO runners (worker_id, queues, handlers, expires_at, namespaces)"
            " VALUES ('b-all', '{default}', '{}', now() + interval '1 hour', NULL)",
            "INSERT INTO circuits (worker_id, dependency, state, since)"
            " VALUES ('a-runner', 'payments', 'open', now())",
        ):
            with pytest.raises(pg_errors.InsufficientPrivilege):
                conn.execute(statement)
        conn.execute(
            "INSERT INTO runners (worker_id, queues, handlers, expires_at, namespaces)"
            " VALUES ('b-runner', '{default}', '{}', now() + interval '1 hour', '{team-b}')"
        )
        conn.execute(
            "INSERT INTO circuits (worker_id, dependency, state, since)"
            " VALUES ('b-runner', 'stripe', 'open', now())"
        )
        # Its own announcement is read back (an announcement is an upsert) with its circuit.
        seen = {row[0] for row in conn.execute("SELECT worker_id FROM runners")}
        assert seen == {"every-runner", "b-runner"}
        assert conn.execute("SELECT worker_id, dependency FROM circuits").fetchall() == [
            ("b-runner", "stripe")
        ]


def test_a_teams_reader_login_kept_to_its_namespace_reads_only_its_runs_and_writes_none(
    tenants: Tenants, store_dsn: str, postgres_server: PostgresServer
) -> None:
    """A read-only login for one team's dashboards: the reader's grants, the team's rows."""
    prefix = tenants.group.removesuffix("_runner")
    reader = f"{prefix}_reader_team_b"
    try:
        done = sundial_migrate(
            store_dsn,
            "--role-prefix", prefix,
            "--login", f"reader={reader}",
            "--login-namespaces", f"{reader}=team-b",
            env={"SUNDIAL_LOGIN_PASSWORD_READER": PASSWORD},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (run_a,) = runner_loop.submit(store_dsn, tenants.team_a)
        (run_b,) = runner_loop.submit(store_dsn, tenants.team_b)
        with psycopg.connect(login_dsn(store_dsn, reader, PASSWORD), autocommit=True) as conn:
            assert [row[0] for row in conn.execute("SELECT id FROM job_runs")] == [run_b]
            assert [row[0] for row in conn.execute("SELECT id FROM job_definitions")] == [
                tenants.team_b
            ]
            for statement in (
                f"UPDATE job_runs SET state = 'cancelled' WHERE id = {run_b}",
                "SELECT * FROM login_namespaces",
            ):
                with pytest.raises(pg_errors.InsufficientPrivilege):
                    conn.execute(statement)
        with psycopg.connect(store_dsn) as conn:
            states = dict(conn.execute("SELECT id, state FROM job_runs").fetchall())
        assert (states[run_a], states[run_b]) == ("pending", "pending")
    finally:
        drop_roles(postgres_server.admin_dsn, store_dsn, [reader])


def test_a_kept_login_reads_only_its_namespaces_fires_and_quotas_and_the_default(
    tenants: Tenants, store_dsn: str
) -> None:
    """Which schedule fired when, and another team's limit and active count, are that team's."""
    schedules = {job: uuid.uuid4() for job in (tenants.team_a, tenants.team_b)}
    with psycopg.connect(store_dsn) as conn:
        for job, schedule in schedules.items():
            conn.execute(
                "INSERT INTO schedules (id, job_id, cron, next_fire_time)"
                " VALUES (%s, %s, '* * * * *', now())",
                (schedule, job),
            )
            conn.execute(
                "INSERT INTO schedule_fires (schedule_id, fire_time, run_id) VALUES (%s, now(), 1)",
                (schedule,),
            )
        conn.execute(
            "INSERT INTO namespace_quotas (namespace, max_active_runs, explicit)"
            " VALUES ('*', 100, true), ('team-a', 5, true), ('team-b', 7, true)"
        )
    with psycopg.connect(tenants.kept_dsn, autocommit=True) as conn:
        fired = [row[0] for row in conn.execute("SELECT schedule_id FROM schedule_fires")]
        quotas = sorted(conn.execute("SELECT namespace, max_active_runs FROM namespace_quotas"))
    assert fired == [schedules[tenants.team_b]]
    assert quotas == [("*", 100), ("team-b", 7)]
    with psycopg.connect(store_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM schedule_fires").fetchone() == (2,)
        assert conn.execute("SELECT count(*) FROM namespace_quotas").fetchone() == (3,)
