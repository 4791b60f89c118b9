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
