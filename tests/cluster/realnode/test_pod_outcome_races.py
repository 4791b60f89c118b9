"""Many evictions and deletions at once on real containers: with the outcome finalizer
(docs/adr/0023-pod-outcome-finalizer.md) every end is read from the Pod's final status, so no
run loses the race between the kubelet's last write and the object's removal.

Before the finalizer, on this node 21 of 31 evictions were charged as crashes and 10 of 14
deletions were read from a stale status.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from kubernetes import client
from node_testing import template
from pod_testing import Job, maintenance, run_pods, run_row, running_launcher, settings, wait_until

from sundial.pods import manifests
from sundial.store import runs

pytestmark = pytest.mark.timeout(420)

MANY = 20
#: A container that stops at once on SIGTERM (an eviction), and one that ignores it.
STOPS_ON_TERM = ["sh", "-c", 'trap "exit 143" TERM; while :; do sleep 1; done']
IGNORES_TERM = ["sleep", "600"]


def worker() -> str:
    return f"launcher-{uuid.uuid4().hex[:6]}"


async def running_first_attempts(core_api, namespace, run_ids: list[int]) -> list[client.V1Pod]:
    async def check() -> list[client.V1Pod] | None:
        found = []
        for run_id in run_ids:
            pods = await asyncio.to_thread(run_pods, core_api, namespace, run_id)
            if len(pods) != 1 or pods[0].status.phase != "Running":
                return None
            found.append(pods[0])
        return found

    pods: list[client.V1Pod] = await wait_until(
        check, within=180, what=f"{len(run_ids)} Pods Running on the real node"
    )
    return pods


async def attempts_of(pool: Any, run_id: int) -> list[tuple[int, str]]:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT attempt, failure_reason FROM job_run_attempts WHERE run_id = %s"
            " ORDER BY attempt",
            (run_id,),
        )
        return [(attempt, reason) for attempt, reason in await cursor.fetchall()]


async def finish(pool, core_api, namespace, run_ids: list[int]) -> None:
    """Cancel what is left, then no Pod of the namespace keeps the outcome finalizer."""
    for run_id in run_ids:
        await runs.cancel(pool, run_id, reason="test over")

    async def released() -> bool:
        pods = await asyncio.to_thread(lambda: core_api.list_namespaced_pod(namespace).items)
        return not any(manifests.OUTCOME_FINALIZER in (p.metadata.finalizers or ()) for p in pods)

    await wait_until(released, within=120, what="every Pod released")


async def test_twenty_evictions_are_all_infrastructure_retries(
    pool, api_client, core_api, namespace, real_node
):
    job = Job(pool, namespace)
    await job.define(
        template(real_node, STOPS_ON_TERM, grace_seconds=2),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_ids = [await job.submit() for _ in range(MANY)]
    launcher = settings(namespace, worker(), max_pods=MANY * 2)
    async with maintenance(pool), running_launcher(pool, api_client, launcher):
        for pod in await running_first_attempts(core_api, namespace, run_ids):
            eviction = client.V1Eviction(
                metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace=namespace)
            )
            await asyncio.to_thread(
                core_api.create_namespaced_pod_eviction, pod.metadata.name, namespace, eviction
            )

        async def all_retried() -> list[dict[str, Any]] | None:
            rows = [await run_row(pool, run_id) for run_id in run_ids]
            return rows if all(row["attempt"] >= 2 for row in rows) else None

        rows = await wait_until(all_retried, within=180, what="attempt 2 of every evicted run")
        for run_id, row in zip(run_ids, rows, strict=True):
            assert (row["retries_used"], row["infra_retries_used"]) == (0, 1), row
            assert await attempts_of(pool, run_id) == [(1, "infrastructure")]
        await finish(pool, core_api, namespace, run_ids)


async def test_twenty_deletions_all_follow_the_pod_deletion_policy_never_the_oom_path(
    pool, api_client, core_api, namespace, real_node
):
    """``sleep`` ignores SIGTERM: after the 1 s grace the kubelet SIGKILLs it (137, Error),
    which an older classify took for an OOM kill."""
    job = Job(pool, namespace)
    await job.define(
        template(real_node, IGNORES_TERM, resources={"limits": {"memory": "32Mi"}}),
        podDeletionPolicy="Cancel",
        oom={"maxRetries": 2, "memoryIncreasePercent": 100},
    )
    run_ids = [await job.submit() for _ in range(MANY)]
    launcher = settings(namespace, worker(), max_pods=MANY * 2)
    async with maintenance(pool), running_launcher(pool, api_client, launcher):
        for pod in await running_first_attempts(core_api, namespace, run_ids):
            await asyncio.to_thread(
                core_api.delete_namespaced_pod, pod.metadata.name, namespace, grace_period_seconds=1
            )

        async def all_ended() -> list[dict[str, Any]] | None:
            rows = [await run_row(pool, run_id) for run_id in run_ids]
            return rows if all(row["state"] != "running" for row in rows) else None

        rows = await wait_until(all_ended, within=180, what="every deleted run ended")
        for row in rows:
            assert (row["state"], row["attempt"], row["oom_retries_used"]) == ("cancelled", 1, 0)
            assert "podDeletionPolicy: Cancel" in row["last_error"], row
        await finish(pool, core_api, namespace, run_ids)
