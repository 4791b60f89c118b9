"""A pod launcher restarted with its worker id adopts the runs it holds: ``held_runs`` hands
them back in the very shape of a claim, with the Pod recorded on each."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sundial.store import claims, pod_runs, runs
from sundial.store import pool as store_pool


async def test_held_runs_come_back_as_the_claim_returned_them_with_their_pods(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("reports", execution_model="pod", pod_template={}, dependency="reports-db")
    submitted = await runs.submit(pool, job, args={"day": "2026-12-04"})
    [claimed] = await claims.claim(pool, "launcher-1", execution_models=["pod"], limit=5)
    assert claimed.dependency == "reports-db"
    assert await pod_runs.record_pod(
        pool, "launcher-1", claimed.id, claimed.attempt, pod_name="reports-1-1", pod_uid="u-1"
    )

    [held] = await pod_runs.held_runs(pool, "launcher-1")

    assert held.run == claimed._replace(lease_until=held.run.lease_until)
    assert held.run.id == submitted.run_id
    assert (held.recorded_pod_name, held.recorded_pod_uid) == ("reports-1-1", "u-1")
    assert await pod_runs.held_runs(pool, "launcher-2") == []


async def test_a_new_leader_takes_over_the_pod_runs_its_predecessor_holds_under_their_attempts(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    pods = make_job("reports", execution_model="pod", pod_template={})
    handlers = make_job("emails", execution_model="async")
    for _ in range(2):
        await runs.submit(pool, pods)
    await runs.submit(pool, handlers)
    old_pods = await claims.claim(pool, "operator-old", execution_models=["pod"], limit=5)
    [other] = await claims.claim(pool, "runner-1", execution_models=["async"], limit=5)
    assert await pod_runs.record_pod(
        pool, "operator-old", old_pods[0].id, old_pods[0].attempt, pod_name="p-1", pod_uid="u-1"
    )

    taken = await pod_runs.take_over(pool, previous="operator-old", worker="operator-new")

    assert taken == sorted(run.id for run in old_pods)
    held = await pod_runs.held_runs(pool, "operator-new")
    assert [(h.run.id, h.run.attempt) for h in held] == [(r.id, r.attempt) for r in old_pods]
    assert held[0].recorded_pod_uid == "u-1"
    assert await pod_runs.held_runs(pool, "operator-old") == []
    # The old launcher's fenced writes no longer count; a runner's run is not a pod run.
    assert not await pod_runs.record_pod(
        pool, "operator-old", old_pods[1].id, old_pods[1].attempt, pod_name="p-2", pod_uid="u-2"
    )
    assert await pod_runs.take_over(pool, previous="runner-1", worker="operator-new") == []
    assert other.id not in taken
