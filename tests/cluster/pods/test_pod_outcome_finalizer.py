"""No Pod ends unaccounted: the outcome finalizer holds every Pod until its attempt's outcome
is committed (docs/adr/0023-pod-outcome-finalizer.md).

On kwok a deleted or evicted Pod is removed at once, like the fastest kubelet: without the
finalizer the launcher finds nothing to read and takes every eviction for a deletion (a crash
that spends ``maxRetries``). Each case runs many Pods at once, so a race cannot pass by luck.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import uuid
from typing import Any

import pytest
from kubernetes import client, config

from sundial.localdev import kube_reads
from sundial.pods import launcher, manifests
from sundial.store import claims, runs
from support.pods import (
    OUTCOME,
    Job,
    maintenance,
    run_pods,
    run_row,
    running_launcher,
    settings,
    template,
    wait_pods,
    wait_state,
)
from support.polling import wait_until_async

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(240)]

#: Pods evicted, or deleted, in one test.
MANY = 20


def worker() -> str:
    return f"launcher-{uuid.uuid4().hex[:6]}"


def tracked(pod: client.V1Pod) -> bool:
    return manifests.OUTCOME_FINALIZER in (pod.metadata.finalizers or ()) or (
        manifests.LABEL_TRACKED in (pod.metadata.labels or {})
    )


def namespace_pods(core_api: client.CoreV1Api, namespace: str) -> list[client.V1Pod]:
    return list(core_api.list_namespaced_pod(namespace).items)


async def attempts_of(pool, run_id: int) -> list[tuple[int, str]]:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT attempt, failure_reason FROM job_run_attempts WHERE run_id = %s"
            " ORDER BY attempt",
            (run_id,),
        )
        return [(attempt, reason) for attempt, reason in await cursor.fetchall()]


async def running_pods(core_api, namespace, run_ids: list[int]) -> dict[int, client.V1Pod]:
    """The Running Pod of attempt 1 of each run, once every one is Running."""

    async def check() -> dict[int, client.V1Pod] | None:
        found: dict[int, client.V1Pod] = {}
        for run_id in run_ids:
            pods = await asyncio.to_thread(run_pods, core_api, namespace, run_id)
            if len(pods) != 1 or pods[0].status.phase != "Running":
                return None
            found[run_id] = pods[0]
        return found

    result: dict[int, client.V1Pod] = await wait_until_async(
        check, within=90, what=f"{len(run_ids)} Pods Running"
    )
    return result


async def cancel_all(pool, core_api, namespace, run_ids: list[int]) -> None:
    """Cancel what is left and wait until no Pod of the namespace remains tracked."""
    for run_id in run_ids:
        await runs.cancel(pool, run_id, reason="test over")

    async def released() -> bool:
        pods = await asyncio.to_thread(namespace_pods, core_api, namespace)
        return not any(tracked(pod) for pod in pods)

    await wait_until_async(released, within=60, what="every Pod released")


async def test_a_pod_is_tracked_until_its_outcome_is_committed_then_released(
    pool, kubeconfig, core_api, namespace
):
    counting_client = config.new_client_from_config(config_file=str(kubeconfig))
    writes = kube_reads.count_writes(counting_client)
    job = Job(pool, namespace)
    await job.define(template())
    run_ids = [await job.submit() for _ in range(5)]
    try:
        async with running_launcher(pool, counting_client, settings(namespace, worker())):
            created = await wait_pods(core_api, namespace, run_ids[0], lambda pods: len(pods) == 1)
            assert tracked(created[0]), created[0].metadata
            for run_id in run_ids:
                await wait_state(pool, run_id, "completed")

            async def all_released() -> bool:
                pods = await asyncio.to_thread(namespace_pods, core_api, namespace)
                return len(pods) == len(run_ids) and not any(tracked(p) for p in pods)

            await wait_until_async(all_released, within=30, what="the ended Pods released")
    finally:
        counting_client.close()
    # Kept (for the JobRun window and the mirror's sweep), and ended as they ended.
    assert {p.status.phase for p in namespace_pods(core_api, namespace)} == {"Succeeded"}
    # What the finalizer costs: one PATCH per Pod, nothing else (it rides on the create).
    assert writes == {"POST": len(run_ids), "PATCH": len(run_ids)}, writes


async def test_every_eviction_is_an_infrastructure_retry_that_spends_no_retries(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(
        template({OUTCOME: "run-forever"}),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_ids = [await job.submit() for _ in range(MANY)]
    async with (
        maintenance(pool),
        running_launcher(pool, api_client, settings(namespace, worker(), max_pods=MANY)),
    ):
        first = await running_pods(core_api, namespace, run_ids)
        for pod in first.values():
            eviction = client.V1Eviction(
                metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace=namespace)
            )
            await asyncio.to_thread(
                core_api.create_namespaced_pod_eviction, pod.metadata.name, namespace, eviction
            )

        async def second_attempts() -> list[dict[str, Any]] | None:
            rows = [await run_row(pool, run_id) for run_id in run_ids]
            return rows if all(row["attempt"] == 2 for row in rows) else None

        rows = await wait_until_async(second_attempts, within=90, what="attempt 2 of every run")
        for run_id, row in zip(run_ids, rows, strict=True):
            assert (row["retries_used"], row["infra_retries_used"]) == (0, 1), row
            assert await attempts_of(pool, run_id) == [(1, "infrastructure")]
        await cancel_all(pool, core_api, namespace, run_ids)
    evicted = {pod.metadata.name for pod in first.values()}
    assert not evicted & {p.metadata.name for p in namespace_pods(core_api, namespace)}


@pytest.mark.parametrize("policy", ["Retry", "Cancel"])
async def test_every_deletion_follows_the_pod_deletion_policy(
    pool, api_client, core_api, namespace, policy
):
    job = Job(pool, namespace)
    await job.define(
        template({OUTCOME: "run-forever"}),
        podDeletionPolicy=policy,
        retry={"maxRetries": 1, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_ids = [await job.submit() for _ in range(MANY // 2)]
    async with (
        maintenance(pool),
        running_launcher(pool, api_client, settings(namespace, worker(), max_pods=MANY)),
    ):
        first = await running_pods(core_api, namespace, run_ids)
        for pod in first.values():
            await asyncio.to_thread(core_api.delete_namespaced_pod, pod.metadata.name, namespace)
        for run_id in run_ids:
            if policy == "Cancel":
                row = await wait_state(pool, run_id, "cancelled", within=60)
                assert row["failure_reason"] == "cancelled"
                assert "PodDeleted" in row["last_error"], row
            else:

                async def retried(run_id: int = run_id) -> dict[str, Any] | None:
                    row = await run_row(pool, run_id)
                    return row if row["attempt"] == 2 else None

                row = await wait_until_async(retried, within=60, what=f"run {run_id} attempt 2")
                assert (row["retries_used"], row["oom_retries_used"]) == (1, 0), row
                assert await attempts_of(pool, run_id) == [(1, "crash")]
        await cancel_all(pool, core_api, namespace, run_ids)
    assert not {p.metadata.name for p in first.values()} & {
        p.metadata.name for p in namespace_pods(core_api, namespace)
    }


async def test_a_launcher_killed_between_the_commit_and_the_release_releases_on_return(
    pool, api_client, core_api, namespace
):
    """The outcome is committed, the launcher dies before it takes the finalizer off: the Pod
    stays tracked. The next launcher of the installation releases it, and the committed
    outcome stands."""
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()
    crashed = worker()
    pod_launcher = launcher.PodLauncher(pool, api_client, settings(namespace, crashed))
    task = asyncio.create_task(pod_launcher.run(asyncio.Event()))
    try:
        [pod] = await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
        await wait_state(pool, run_id, "running")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    # What the crashed launcher had done last: its attempt's outcome committed, as its own.
    result = await claims.finish(pool, crashed, [claims.Finish(run_id, 1)])
    assert not result.lost
    assert tracked(core_api.read_namespaced_pod(pod.metadata.name, namespace))

    async with running_launcher(pool, api_client, settings(namespace, worker())):
        await wait_pods(core_api, namespace, run_id, lambda pods: not pods, within=30)
    row = await run_row(pool, run_id)
    assert (row["state"], row["attempt"]) == ("completed", 1)


async def test_the_watch_sees_an_end_long_before_the_next_poll(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(template())
    run_id = await job.submit()
    slow_poll = settings(namespace, worker(), poll_interval_seconds=60.0)
    async with running_launcher(pool, api_client, slow_poll):
        # Claimed on the first step; everything after that is woken by the watch.
        await wait_state(pool, run_id, "completed", within=20)


async def test_sundial_pods_release_frees_the_pods_of_an_uninstalled_launcher(
    pool, api_client, kubeconfig, core_api, namespace
):
    """After the launcher is gone for good, a deleted Pod would wait for ever: the command
    takes the finalizer off every tracked Pod of the installation, and nothing else."""
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()
    async with running_launcher(pool, api_client, settings(namespace, worker())):
        [pod] = await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
    await asyncio.to_thread(core_api.delete_namespaced_pod, pod.metadata.name, namespace)
    await asyncio.sleep(1)
    assert tracked(core_api.read_namespaced_pod(pod.metadata.name, namespace))  # waiting

    command = [
        sys.executable, "-m", "sundial", "pods", "release",
        "--kubeconfig", str(kubeconfig), "--instance", namespace, "--namespace", namespace,
    ]  # fmt: skip
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["released", f"{namespace}/{pod.metadata.name}"]
    await wait_pods(core_api, namespace, run_id, lambda pods: not pods, within=30)
