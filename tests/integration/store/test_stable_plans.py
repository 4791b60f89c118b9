"""On a hot table of a million finished runs, the heartbeat, the finish, the release and the
reaper reach job_runs only through index conditions (docs/adr/0028, "stable plans").

The table is built the way the collapse of docs/adr/0028 left it: a million completed runs, VACUUM
ANALYZE while few runs were running, then tens of thousands claimed (statistics that no longer
say how many run). The real store functions run with ``auto_explain`` logging every statement
(nested ones too: the UPDATE inside ``sundial_apply_outcomes``), under custom and under
generic plans, and every scan of job_runs in every plan must carry an index condition: a probe
by primary key, or the reaper's range over expired leases. A sequential scan, or an index read
whole (the running index matched against an unnest), fails the test with the plan. So does a
join that matches each run against every outcome of the batch (a nested loop rescanning the
unnest): it costs the batch size squared, 86 ms for a batch of 500 (docs/adr/0043).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from sundial.store import claims, reaper, releases
from sundial.store import pool as store_pool

pytestmark = pytest.mark.asyncio

FINISHED = 1_000_000
RUNNING = 40_000
WORKER = "runner-a"


def _build(dsn: str, job: uuid.UUID) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        common = (
            "job_id, queue, handler, execution_model, timeout_seconds, max_retries, "
            "backoff_base_seconds, backoff_cap_seconds, priority, run_at, dispatch_key"
        )
        values = "%(job)s, 'default', 'h', 'async', 60, 3, 0, 0, 1, now(), g"
        conn.execute(
            f"INSERT INTO job_runs (id, {common}, state, attempt, started_at, finished_at) "  # type: ignore[arg-type]
            f"SELECT g, {values}, 'completed', 1, now(), now() "
            "FROM generate_series(1, %(n)s) AS g",
            {"job": job, "n": FINISHED},
        )
        conn.execute(
            f"INSERT INTO job_runs (id, {common}, state, attempt, lease_owner, lease_until) "  # type: ignore[arg-type]
            f"SELECT g, {values}, 'running', 1, %(worker)s, now() + interval '1 hour' "
            "FROM generate_series(%(first)s, %(first)s + 99) AS g",
            {"job": job, "first": FINISHED + 1, "worker": WORKER},
        )
        conn.execute("VACUUM ANALYZE job_runs")
        # Claimed after the statistics were taken, as a burst is.
        conn.execute(
            f"INSERT INTO job_runs (id, {common}, state, attempt, lease_owner, lease_until) "  # type: ignore[arg-type]
            f"SELECT g, {values}, 'running', 1, %(worker)s, "
            "now() + CASE WHEN g >= %(first)s + %(n)s - 50 THEN interval '-1 minute' "
            "ELSE interval '1 hour' END "
            "FROM generate_series(%(first)s, %(first)s + %(n)s - 1) AS g",
            {"job": job, "first": FINISHED + 101, "n": RUNNING, "worker": WORKER},
        )


def _scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans") or ():
        yield from _scans(child)


def _unindexed_scans(plan: dict[str, Any]) -> list[str]:
    """The scans of job_runs (or its indexes) in ``plan`` without an index condition."""
    bad = []
    for node in _scans(plan["Plan"]):
        touches = node.get("Relation Name") == "job_runs" or str(
            node.get("Index Name", "")
        ).startswith("job_runs")
        if not touches or node["Node Type"] in ("ModifyTable", "Bitmap Heap Scan"):
            continue  # these write or read the rows that the scans below them (checked) found
        if node["Node Type"] == "Seq Scan" or "Index Cond" not in node:
            bad.append(f"{node['Node Type']} {node.get('Index Name', '')}".strip())
    return bad


def _rescanned_unnests(plan: dict[str, Any]) -> list[str]:
    """Nested loops in ``plan`` that read the batch's unnest again for each row of job_runs:
    each run is compared with every outcome, so the statement costs the batch size squared."""
    bad = []
    for node in _scans(plan["Plan"]):
        if node["Node Type"] != "Nested Loop":
            continue
        inner = [c for c in node.get("Plans") or () if c.get("Parent Relationship") == "Inner"]
        if any(c["Node Type"] == "Function Scan" for c in inner):
            bad.append(f"Nested Loop, Join Filter: {node.get('Join Filter', '')}")
    return bad


def _log_every_plan(store_dsn: str) -> None:
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        database = conn.info.dbname
        for setting, value in (
            ("session_preload_libraries", "auto_explain"),
            ("auto_explain.log_min_duration", "0"),
            ("auto_explain.log_nested_statements", "on"),
            ("auto_explain.log_format", "json"),
            ("client_min_messages", "log"),
        ):
            conn.execute(f"ALTER DATABASE \"{database}\" SET {setting} = '{value}'")  # type: ignore[arg-type]


@pytest.fixture
def hot_table(store_dsn: str) -> str:
    from support.store import create_job

    _build(store_dsn, create_job(store_dsn))
    _log_every_plan(store_dsn)
    return store_dsn


def _plan_collector(plans: list[tuple[str, dict[str, Any]]]) -> Any:
    def logged(diagnostic: psycopg.errors.Diagnostic) -> None:
        message = diagnostic.message_primary or ""
        if "plan:" in message:
            plan = json.loads(message.split("plan:", 1)[1])
            text = plan.get("Query Text", "")
            statement = [line for line in text.splitlines() if not line.startswith("--")]
            plans.append((" ".join(" ".join(statement).split())[:120], plan))

    return logged


async def test_hot_path_statements_probe_by_key(hot_table: str) -> None:
    pool = await store_pool.open_pool(hot_table, min_size=1, max_size=1)
    plans: list[tuple[str, dict[str, Any]]] = []
    logged = _plan_collector(plans)
    running = iter(range(FINISHED + 101, FINISHED + 101 + RUNNING))
    try:
        for plan_mode in ("force_custom_plan", "force_generic_plan"):
            async with pool.connection() as conn:
                conn.add_notice_handler(logged)
                await conn.execute(f"SET plan_cache_mode = {plan_mode}")  # type: ignore[arg-type]
            # Six rounds: plpgsql plans sundial_finish's UPDATE anew for five calls, then may
            # keep a generic plan.
            for _ in range(6):
                batch = [next(running) for _ in range(500)]
                beat = await claims.heartbeat(pool, WORKER, [(run_id, 1) for run_id in batch])
                assert len(beat.extended) == 500
                done = await claims.finish(
                    pool, WORKER, [claims.Finish(run_id, 1) for run_id in batch[:400]]
                )
                assert len(done.states) == 400 and not done.lost
                given = await releases.release(
                    pool, WORKER, [releases.Release(run_id, 1) for run_id in batch[400:]]
                )
                assert len(given.states) == 100
            reaped = await reaper.reap(pool)
            # The leases planted expired go with the first pass; the second plans the same.
            assert reaped.requeued or plan_mode == "force_generic_plan"
    finally:
        await pool.close()

    seen = {text for text, _ in plans}
    for needle in (
        "UPDATE job_runs r SET lease_until",  # sundial_heartbeat's
        "UPDATE job_runs r SET state = sundial_next_state",  # sundial_apply_outcomes'
        "UPDATE job_runs r SET state = CASE WHEN h.delay",  # sundial_release's
        "WITH expired AS",  # the reaper's
    ):
        assert any(needle in text for text in seen), f"no plan logged for {needle!r}: {seen}"
    bad = {text: _unindexed_scans(plan) for text, plan in plans if _unindexed_scans(plan)}
    assert not bad, f"statements that read job_runs without an index condition: {bad}"
    squared = {text: _rescanned_unnests(p) for text, p in plans if _rescanned_unnests(p)}
    assert not squared, f"statements that match every run against every outcome: {squared}"


WAITING = 60_000
PROMOTE_BATCH = 5_000  # the maintainer's


async def test_promotion_probes_by_key_when_statistics_count_many_waiting_runs(
    store_dsn: str,
) -> None:
    """A top-of-the-hour burst: thousands of fires wait in ``scheduled`` with spread run_ats,
    and autovacuum analyzed the table meanwhile, so the planner expects the promotion to move
    a full batch. Joined on id, that estimate hashed every row of the hot table per pass."""
    from support.store import create_job

    job = create_job(store_dsn)
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        common = (
            "job_id, queue, handler, execution_model, timeout_seconds, max_retries, "
            "backoff_base_seconds, backoff_cap_seconds, priority, dispatch_key"
        )
        values = "%(job)s, 'default', 'h', 'async', 60, 3, 0, 0, 1, g"
        conn.execute(
            f"INSERT INTO job_runs (id, {common}, run_at, state, attempt, started_at, "  # type: ignore[arg-type]
            f"finished_at) SELECT g, {values}, now(), 'completed', 1, now(), now() "
            "FROM generate_series(1, %(n)s) AS g",
            {"job": job, "n": FINISHED // 4},
        )
        # Spread over the last minute, all due now.
        conn.execute(
            f"INSERT INTO job_runs (id, {common}, run_at, state) "  # type: ignore[arg-type]
            f"SELECT g, {values}, now() - interval '1 minute' "
            "+ (g - %(first)s) * interval '1 millisecond', 'scheduled' "
            "FROM generate_series(%(first)s, %(first)s + %(n)s - 1) AS g",
            {"job": job, "first": FINISHED, "n": WAITING},
        )
        conn.execute("VACUUM ANALYZE job_runs")
    _log_every_plan(store_dsn)

    plans: list[tuple[str, dict[str, Any]]] = []
    pool = await store_pool.open_pool(store_dsn, min_size=1, max_size=1)
    try:
        for plan_mode in ("force_custom_plan", "force_generic_plan"):
            async with pool.connection() as conn:
                conn.add_notice_handler(_plan_collector(plans))
                await conn.execute(f"SET plan_cache_mode = {plan_mode}")  # type: ignore[arg-type]
            for _ in range(6):
                promoted = await reaper.promote_due(pool, limit=PROMOTE_BATCH)
                assert promoted == PROMOTE_BATCH
    finally:
        await pool.close()

    promotions = [(text, plan) for text, plan in plans if "SET state = 'pending'" in text]
    assert len(promotions) >= 12, [text for text, _ in plans]
    bad = {text: _unindexed_scans(plan) for text, plan in promotions if _unindexed_scans(plan)}
    assert not bad, f"the promotion read job_runs without an index condition: {bad}"
