"""Telling why runs wait reads a bounded set of runs, and says what a full reading would say.

``mark_unclaimable_runs`` reads the ``scan`` unblamed runs due longest and the runs that
already have a reason, never the whole backlog (migration 0190). Three checks:

* an oracle written in Python from the rule itself (a run's (queue, handler, model) against
  the live runners' announcements) agrees with the statement on random backlogs and runners
  whenever the backlog fits in ``scan``; with a smaller ``scan`` every reason written is still
  the oracle's, only fewer are written;
* over a backlog of claimable runs many times ``scan``, the statement reads at most ``scan``
  rows of it (EXPLAIN ANALYZE's row counts), so it costs the same at any depth;
* a run nobody can claim, queued behind more than ``scan`` claimable runs, is blamed once the
  runs before it are claimed.

Each hypothesis example runs in one transaction that is rolled back, so examples share the
test's database and leave nothing behind; ``now()`` is that transaction's start, the same for
every statement in it.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sundial.store import claims, queries, runners
from sundial.store import pool as store_pool
from sundial.store import runs as store_runs
from support.store import create_job

QUEUES = ("default", "batch")
HANDLERS = ("h.a", "h.b", "h.c")
MODELS = ("async", "thread", "process", "pod")


@dataclasses.dataclass(frozen=True)
class Run:
    queue: str
    handler: str
    model: str | None
    due_seconds_ago: int
    reason: str | None


@dataclasses.dataclass(frozen=True)
class Runner:
    queues: tuple[str, ...]
    handlers: dict[str, str]
    alive: bool


def nobody_serves(handler: str, queue: str) -> str:
    return (
        f"no live runner serves handler {handler} on queue {queue}: start a runner with "
        f"--queue {queue} and --handlers naming the module that registers {handler} with "
        "@sundial.job"
    )


def wrong_model(handler: str, model: str, registered: set[str]) -> str:
    return (
        f"no runner serves handler {handler} with executionModel {model}: the live runners "
        f"register it as {', '.join(sorted(registered))}. Remove executionModel from the job "
        "(the registration decides) or set it to the registered model"
    )


def verdict(run: Run, live: list[Runner]) -> str | None:
    """The rule: who could claim this run, from the live announcements alone."""
    registered = {
        r.handlers[run.handler] for r in live if run.queue in r.queues and run.handler in r.handlers
    }
    if not registered:
        return nobody_serves(run.handler, run.queue)
    if run.model is not None and run.model not in registered:
        return wrong_model(run.handler, run.model, registered)
    return None


def oracle(runs: list[Run], runners_: list[Runner], grace: int) -> list[str | None]:
    """Every run's reason after one complete reading of the backlog."""
    live = [r for r in runners_ if r.alive]
    after = []
    for run in runs:
        reason = run.reason
        if run.model != "pod":
            wanted = verdict(run, live)
            if wanted != reason and (wanted is None or run.due_seconds_ago >= grace):
                reason = wanted
        after.append(reason)
    return after


stale_reasons = st.sampled_from([None, None, None, "an old reason"])
run_strategy = st.builds(
    Run,
    queue=st.sampled_from(QUEUES),
    handler=st.sampled_from(HANDLERS),
    model=st.none() | st.sampled_from(MODELS),
    due_seconds_ago=st.integers(0, 120),
    reason=stale_reasons,
)
runner_strategy = st.builds(
    Runner,
    queues=st.lists(st.sampled_from(QUEUES), min_size=1, max_size=2, unique=True).map(tuple),
    handlers=st.dictionaries(
        st.sampled_from(HANDLERS), st.sampled_from(MODELS[:3]), max_size=len(HANDLERS)
    ),
    alive=st.booleans(),
)


#: One job definition per test database (each test has its own).
_JOBS: dict[str, uuid.UUID] = {}


def _job(dsn: str) -> uuid.UUID:
    if dsn not in _JOBS:
        _JOBS[dsn] = create_job(dsn, "bounded")
    return _JOBS[dsn]


def _insert(conn: psycopg.Connection[Any], job: uuid.UUID, runs: list[Run]) -> list[int]:
    ids = []
    for run in runs:
        row = conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds,
                                  state, priority,
                                  run_at, dispatch_key, unclaimable_reason)
            VALUES (%(job)s, %(queue)s, %(handler)s, %(model)s, 60, 3, 0, 0, 'pending', 1,
                    now() - make_interval(secs => %(ago)s),
                    sundial_dispatch_key(now() - make_interval(secs => %(ago)s), 1::smallint),
                    %(reason)s)
            RETURNING id
            """,
            {
                "job": job,
                "queue": run.queue,
                "handler": run.handler,
                "model": run.model,
                "ago": run.due_seconds_ago,
                "reason": run.reason,
            },
        ).fetchone()
        assert row is not None
        ids.append(row[0])
    return ids


def _announce(conn: psycopg.Connection[Any], runners_: list[Runner]) -> None:
    for number, runner in enumerate(runners_):
        conn.execute(
            "INSERT INTO runners (worker_id, queues, handlers, expires_at)"
            " VALUES (%s, %s, %s::jsonb, now() + make_interval(secs => %s))",
            (f"w{number}", list(runner.queues), json.dumps(runner.handlers),
             60 if runner.alive else -60),
        )  # fmt: skip


def _reasons(conn: psycopg.Connection[Any], ids: list[int]) -> list[str | None]:
    found = dict(
        conn.execute(
            "SELECT id, unclaimable_reason FROM job_runs WHERE id = ANY(%s)", (ids,)
        ).fetchall()
    )
    return [found[i] for i in ids]


def _mark(conn: psycopg.Connection[Any], *, grace: int, scan: int, limit: int = 1000) -> int:
    cursor = conn.execute(
        queries.get("mark_unclaimable_runs"),
        {"grace_seconds": float(grace), "limit": limit, "scan": scan},
    )
    return len(cursor.fetchall())


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    runs=st.lists(run_strategy, max_size=25),
    runners_=st.lists(runner_strategy, max_size=3),
    grace=st.sampled_from([0, 5, 60]),
    scan=st.integers(1, 30),
)
def test_the_statement_agrees_with_the_rule(
    store_dsn: str, runs: list[Run], runners_: list[Runner], grace: int, scan: int
) -> None:
    job = _job(store_dsn)
    with psycopg.connect(store_dsn) as conn, conn.transaction(force_rollback=True):
        ids = _insert(conn, job, runs)
        _announce(conn, runners_)
        before = [run.reason for run in runs]
        expected = oracle(runs, runners_, grace)
        _mark(conn, grace=grace, scan=scan)
        after = _reasons(conn, ids)
        unblamed_due = sum(
            1 for r in runs if r.reason is None and r.model != "pod" and r.due_seconds_ago >= grace
        )
        if unblamed_due <= scan:
            assert after == expected
        else:
            # Fewer runs read: each run ends with its old reason or the oracle's, never a third.
            for old, new, wanted in zip(before, after, expected, strict=True):
                assert new in (old, wanted)
            # The runs that had a reason are always read.
            for old, new, wanted in zip(before, after, expected, strict=True):
                if old is not None:
                    assert new == wanted


def _rows_read_from_job_runs(plan: dict[str, Any]) -> int:
    """Rows every scan of job_runs in ``plan`` produced or filtered out, over all its loops."""
    total = 0
    if plan.get("Relation Name") == "job_runs":
        loops = plan.get("Actual Loops", 1)
        rows = plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)
        total += rows * loops
    for child in plan.get("Plans", []):
        total += _rows_read_from_job_runs(child)
    return total


def test_a_deep_backlog_is_read_at_its_head_only(store_dsn: str) -> None:
    job = _job(store_dsn)
    backlog, scan = 5_000, 100
    plans: list[dict[str, Any]] = []

    def logged(diagnostic: psycopg.errors.Diagnostic) -> None:
        message = diagnostic.message_primary or ""
        if "plan:" in message:
            plans.append(json.loads(message.split("plan:", 1)[1]))

    with psycopg.connect(store_dsn, autocommit=True) as conn:
        conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds,
                                  state, priority,
                                  run_at, dispatch_key)
            SELECT %s, 'default', 'h.a', NULL, 60, 3, 0, 0, 'pending', 1,
                   now() - interval '1 minute',
                   sundial_dispatch_key(now() - interval '1 minute', 1::smallint)
            FROM generate_series(1, %s)
            """,
            (job, backlog),
        )
        _announce(conn, [Runner(("default",), {"h.a": "async"}, alive=True)])
        conn.execute("ANALYZE job_runs")
        conn.add_notice_handler(logged)
        for setting, value in (
            ("auto_explain.log_min_duration", "0"),
            ("auto_explain.log_analyze", "on"),
            ("auto_explain.log_format", "json"),
            ("client_min_messages", "log"),
        ):
            conn.execute(f"SET {setting} = '{value}'")  # type: ignore[arg-type]
        conn.execute("LOAD 'auto_explain'")
        for mode in ("force_custom_plan", "force_generic_plan"):
            conn.execute(f"SET plan_cache_mode = {mode}")  # type: ignore[arg-type]
            plans.clear()
            # Prepared, as psycopg prepares a statement a connection runs often, so the
            # generic plan is the one a maintainer's connection ends up with.
            conn.execute(
                queries.get("mark_unclaimable_runs"),
                {"grace_seconds": 5.0, "limit": 1000, "scan": scan},
                prepare=True,
            ).fetchall()
            [plan] = plans
            read = _rows_read_from_job_runs(plan["Plan"])
            assert read <= scan + 10, (
                f"{mode}: read {read} rows of a {backlog}-run backlog with scan={scan}; "
                f"plan: {json.dumps(plan)[:4000]}"
            )


async def test_a_run_nobody_serves_is_blamed_once_the_runs_before_it_are_claimed(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], store_dsn: str
) -> None:
    served_job = make_job("served", execution_model=None)
    orphan_job = make_job("orphan", execution_model=None)
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        for job, handler, count, ago in (
            (served_job, "handlers.served", 30, "2 minutes"),
            (orphan_job, "handlers.orphan", 1, "1 minute"),
        ):
            conn.execute(
                """
                INSERT INTO job_runs (job_id, queue, handler, timeout_seconds, max_retries,
                                  backoff_base_seconds, backoff_cap_seconds, state, priority,
                                      run_at, dispatch_key)
                SELECT %s, 'default', %s, 60, 3, 0, 0, 'pending', 1, now() - %s::interval,
                       sundial_dispatch_key(now() - %s::interval, 1::smallint)
                FROM generate_series(1, %s)
                """,
                (job, handler, ago, ago, count),
            )
    await runners.announce(
        pool, "r", queues=["default"], handlers={"handlers.served": "async"}, ttl_seconds=60
    )

    assert await runners.mark_unclaimable(pool, grace_seconds=0, scan=10) == []
    await claims.claim(pool, "r", handlers=["handlers.served"], limit=25)
    [blamed] = await runners.mark_unclaimable(pool, grace_seconds=0, scan=10)
    assert blamed.handler == "handlers.orphan"
    assert blamed.reason is not None and blamed.reason.startswith("no live runner serves")


@pytest.mark.parametrize("scan", [1, 2000])
async def test_the_claimed_runs_are_never_blamed(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], scan: int
) -> None:
    run_id = (await store_runs.submit(pool, make_job("gone", execution_model=None))).run_id
    [claimed] = await claims.claim(pool, "w")
    assert claimed.id == run_id
    assert await runners.mark_unclaimable(pool, grace_seconds=0, scan=scan) == []
