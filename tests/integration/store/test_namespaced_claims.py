"""Each namespace is a tenant: a runner claims only the runs of the namespaces it serves, and a
run that no live runner may serve waits with a reason that names its namespace."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sundial.store import claims, runners, runs
from sundial.store import pool as store_pool


async def _submit_in(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], namespace: str
) -> int:
    # One handler and one queue for both teams: only the namespace tells their runs apart.
    job = make_job(f"charge-{namespace}", namespace=namespace, handler="billing.charge")
    return (await runs.submit(pool, job, args={"from": namespace})).run_id


async def _reason(pool: store_pool.Pool, run_id: int) -> str | None:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT unclaimable_reason FROM job_runs WHERE id = %s", (run_id,)
        )
        row = await cursor.fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


async def test_a_runner_claims_only_the_namespaces_it_serves(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    team_a = await _submit_in(pool, make_job, "team-a")
    team_b = await _submit_in(pool, make_job, "team-b")

    claimed = await claims.claim(pool, "team-a-runner", namespaces=["team-a"], limit=10)
    assert [(run.id, run.namespace, run.args) for run in claimed] == [
        (team_a, "team-a", {"from": "team-a"})
    ]
    assert await claims.claim(pool, "team-a-runner", namespaces=["team-a"], limit=10) == []

    # A runner for every namespace (no list) takes what is left.
    [shared] = await claims.claim(pool, "shared-runner", limit=10)
    assert (shared.id, shared.namespace) == (team_b, "team-b")


async def test_batch_runs_carry_their_namespace_too(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("batch", namespace="team-c", handler="billing.charge")
    made = await runs.submit_many(pool, job, [runs.BatchItem(args={"n": n}) for n in range(3)])
    assert len(made) == 3
    claimed = await claims.claim(pool, "w", namespaces=["team-c"], limit=10)
    assert sorted(run.namespace or "" for run in claimed) == ["team-c"] * 3


async def test_a_run_no_runner_may_serve_says_which_namespace_lacks_one(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    team_a = await _submit_in(pool, make_job, "team-a")
    team_b = await _submit_in(pool, make_job, "team-b")
    await runners.announce(
        pool,
        "team-a-runner",
        queues=["default"],
        handlers={"billing.charge": "async"},
        ttl_seconds=60,
        namespaces=["team-a"],
    )

    await runners.mark_unclaimable(pool, grace_seconds=0)

    assert await _reason(pool, team_a) is None
    reason = await _reason(pool, team_b)
    assert reason is not None and reason.startswith(
        "no live runner serves handler billing.charge on queue default in namespace team-b"
    )
    assert "--namespace team-b" in reason

    await runners.announce(
        pool, "shared", queues=["default"], handlers={"billing.charge": "async"}, ttl_seconds=60
    )
    [cleared] = await runners.mark_unclaimable(pool, grace_seconds=0)
    assert (cleared.run_id, cleared.reason) == (team_b, None)
