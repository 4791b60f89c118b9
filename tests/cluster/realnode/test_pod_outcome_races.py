"""Many evictions at once on real containers: with the outcome finalizer
(docs/adr/0023-pod-outcome-finalizer.md) every end is read from the Pod's final status, so no
run loses the race between the kubelet's last write and the object's removal. Before the
finalizer, on this node 21 of 31 evictions were charged as crashes. (A single deletion by
someone else is test_launcher_on_real_node.py's; twenty at once is still to be made to pass.)
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from kubernetes import client

from sundial.pods import manifests
from sundial.store import runs
from support.pods import Job, maintenance, run_pods, run_row, running_launcher, settings
from support.polling import wait_until_async
from support.real_node import container_id, running_tasks, template

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

    pods: list[client.V1Pod] = await wait_until_async(
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

    await wait_until_async(released, within=120, what="every Pod released")


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

        rows = await wait_until_async(
            all_retried, within=180, what="attempt 2 of every evicted run"
        )
        for run_id, row in zip(run_ids, rows, strict=True):
            assert (row["retries_used"], row["infra_retries_used"]) == (0, 1), row
            assert await attempts_of(pool, run_id) == [(1, "infrastructure")]
        await finish(pool, core_api, namespace, run_ids)


async def test_a_timed_out_container_is_gone_within_its_timeout_and_sundials_grace(
    pool, api_client, core_api, namespace, real_node
):
    """The template sets no grace period, so the Pod gets Sundial's default (10 s, not
    Kubernetes' 30 s): ``sleep`` ignores SIGTERM, and the kubelet's deadline kill SIGKILLs it
    that long after ``activeDeadlineSeconds``."""
    timeout = 3
    pod_template = template(real_node, IGNORES_TERM)
    del pod_template["spec"]["terminationGracePeriodSeconds"]
    job = Job(pool, namespace)
    await job.define(
        pod_template,
        timeoutSeconds=timeout,
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_id = await job.submit()
    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        [pod] = await running_first_attempts(core_api, namespace, [run_id])
        assert (
            pod.spec.termination_grace_period_seconds == manifests.DEFAULT_TERMINATION_GRACE_SECONDS
        )
        started = asyncio.get_running_loop().time()
        container = container_id(pod)

        async def gone() -> bool:
            return container not in await asyncio.to_thread(running_tasks, real_node.state_dir)

        await wait_until_async(gone, within=90, what=f"container {container} killed")
        lived = asyncio.get_running_loop().time() - started
    row = await run_row(pool, run_id)
    assert row["state"] == "timed_out", row
    # Seen Running up to a PLEG relist (1 s) late; ctr polled every 0.2 s; 3 s for a loaded node.
    assert lived <= timeout + manifests.DEFAULT_TERMINATION_GRACE_SECONDS + 3, lived
