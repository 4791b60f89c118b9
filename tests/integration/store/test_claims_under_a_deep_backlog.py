"""Claims over a backlog that grew faster than the statistics, and past the index entries of
the runs claimed since the last vacuum (docs/adr/0050-claims-under-a-deep-backlog.md).

The table is built as an overload leaves it: analyzed while nothing was pending, then a
backlog of 200,000 pending runs the statistics never saw. The real ``claims.claim`` runs with
``auto_explain`` logging its plan with actual row counts, under custom and generic plans: no
scan of job_runs may read more than a few times what the claim takes (the plan that collapsed
read the whole backlog three times and sorted it, 60-1,000 ms a claim).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from sundial.store import claims
from sundial.store import pool as store_pool

pytestmark = pytest.mark.asyncio

BACKLOG = 200_000
LIMIT = 30


def _backlog(dsn: str, job: uuid.UUID) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE job_runs")  # the statistics: nothing pending
        conn.execute(
            "INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,"
            " max_retries, backoff_base_seconds, backoff_cap_seconds, priority, run_at,"
            " dispatch_key, state, attempt, namespace)"
            " SELECT %(job)s, 'default', 'h', 'async', 60, 3, 0, 0, 1, t,"
            " sundial_dispatch_key(t, 1::smallint), 'pending', 0, 'team-a'"
            " FROM (SELECT now() - interval '1 ms' * (%(n)s - g) AS t"
            "       FROM generate_series(1, %(n)s) AS g) AS runs",
            {"job": job, "n": BACKLOG},
        )


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans") or ():
        yield from _nodes(child)


def _wide_reads(plan: dict[str, Any]) -> list[str]:
    """Scans of job_runs (or its indexes) that returned more rows than a claim needs."""
    wide = []
    for node in _nodes(plan["Plan"]):
        touches = node.get("Relation Name") == "job_runs" or str(
            node.get("Index Name", "")
        ).startswith("job_runs")
        read = node.get("Actual Rows", 0) * node.get("Actual Loops", 1)
        if touches and read > 10 * LIMIT:
            wide.append(f"{node['Node Type']} {node.get('Index Name', '')}: {read} rows")
    return wide


async def test_a_backlog_the_statistics_never_saw_is_claimed_in_index_order(
    store_dsn: str,
) -> None:
    from support.store import create_job

    _backlog(store_dsn, create_job(store_dsn, namespace="team-a"))
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        database = conn.info.dbname
        for setting, value in (
            ("session_preload_libraries", "auto_explain"),
            ("auto_explain.log_min_duration", "0"),
            ("auto_explain.log_analyze", "on"),
            ("auto_explain.log_format", "json"),
            ("client_min_messages", "log"),
        ):
            conn.execute(f"ALTER DATABASE \"{database}\" SET {setting} = '{value}'")  # type: ignore[arg-type]
    plans: list[dict[str, Any]] = []

    def logged(diagnostic: psycopg.errors.Diagnostic) -> None:
        message = diagnostic.message_primary or ""
        if "plan:" in message:
            plan = json.loads(message.split("plan:", 1)[1])
            if "Claim up to" in plan.get("Query Text", ""):
                plans.append(plan)

    pool = await store_pool.open_pool(store_dsn, min_size=1, max_size=1)
    try:
        for plan_mode in ("force_custom_plan", "force_generic_plan"):
            async with pool.connection() as conn:
                conn.add_notice_handler(logged)
                await conn.execute(f"SET plan_cache_mode = {plan_mode}")  # type: ignore[arg-type]
            for _ in range(6):  # psycopg prepares the statement from the fifth call
                claimed = await claims.claim(pool, "w", handlers=["h"], limit=LIMIT)
                assert len(claimed) == LIMIT
    finally:
        await pool.close()
    assert len(plans) >= 12  # each claim's plan, in both modes
    wide = [_wide_reads(plan) for plan in plans if _wide_reads(plan)]
    assert not wide, f"claims that read the backlog whole: {wide}"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _run(run_id: int, run_at: datetime, priority: int = 1) -> claims.ClaimedRun:
    return claims.ClaimedRun(
        run_id, 1, uuid.uuid4(), "default", "h", "async", {}, 60, None, None, f"run:{run_id}",
        run_at, priority, run_at, 3, 0, 1.0, 60.0, False, "team-a",
    )  # fmt: skip


async def test_floors_start_past_what_was_claimed_and_a_full_walk_comes_each_second(
    store_dsn: str,
) -> None:
    """After a full claim the next starts at the highest key claimed; a run that arrives below
    it (a higher priority) waits for the walk from the head, at most a second later, and no
    run is lost. A claim that finds fewer than it asked for walks from the head next time."""
    from support.store import create_job

    job = create_job(store_dsn, namespace="team-a")
    _backlog(store_dsn, job)
    clock = Clock()
    floors = claims.ClaimFloors(full_every=1.0, clock=clock)
    pool = await store_pool.open_pool(store_dsn, min_size=1, max_size=1)
    try:
        assert floors.for_claim() is None
        first = await claims.claim(pool, "w", handlers=["h"], limit=LIMIT)
        floors.claimed(first, LIMIT, floored=False)
        given = floors.for_claim()
        assert given is not None and set(given) == {"team-a"}
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,"
                " max_retries, backoff_base_seconds, backoff_cap_seconds, priority, run_at,"
                " dispatch_key, state, attempt, namespace)"
                " VALUES (%s, 'default', 'h', 'async', 60, 3, 0, 0, 9, now(),"
                " sundial_dispatch_key(now(), 9::smallint), 'pending', 0, 'team-a')"
                " RETURNING id",
                (job,),
            )
            (urgent,) = await cursor.fetchone()  # type: ignore[misc]
        second = await claims.claim(pool, "w", handlers=["h"], limit=LIMIT, floors=given)
        floors.claimed(second, LIMIT, floored=True)
        assert urgent not in {run.id for run in second}
        assert min(run.id for run in second) > max(run.id for run in first)
        clock.now += 1.0
        assert floors.for_claim() is None  # a second on: the walk from the head
        third = await claims.claim(pool, "w", handlers=["h"], limit=LIMIT)
        assert third[0].id == urgent
    finally:
        await pool.close()

    now = datetime.now(UTC)
    floors.claimed([_run(1, now)], LIMIT, floored=True)  # fewer than asked for
    assert floors.for_claim() is None


async def test_the_index_order_settings_last_for_their_statement_only(store_dsn: str) -> None:
    """The claim's settings and the claim go out in one round trip, as one transaction: in
    force for the statement, gone from the pooled connection after it, and an error in the
    statement rolls back what it wrote and leaves the connection usable."""
    pool = await store_pool.open_pool(store_dsn, min_size=1, max_size=1)
    settings = (
        "SELECT current_setting('enable_sort'), current_setting('enable_bitmapscan'),"
        " txid_current_if_assigned() IS NULL"
    )
    try:
        async with pool.connection() as conn:
            during = await claims.fetch_in_index_order(conn, settings, {})
            after = await (await conn.execute(settings)).fetchall()
            assert during == [("off", "off", True)]
            assert after == [("on", "on", True)]
            await conn.execute("CREATE TABLE written (n int)")
            with pytest.raises(psycopg.errors.DivisionByZero):
                await claims.fetch_in_index_order(
                    conn,
                    "WITH w AS (INSERT INTO written VALUES (1) RETURNING n)"
                    " SELECT 1 / (n - 1) FROM w",
                    {},
                )
            assert await (await conn.execute("SELECT count(*) FROM written")).fetchall() == [(0,)]
            assert await (await conn.execute(settings)).fetchall() == [("on", "on", True)]
    finally:
        await pool.close()
