"""Many evictions and deletions at once on real containers: with the outcome finalizer
(docs/adr/0023-pod-outcome-finalizer.md) every end is read from the Pod's final status, so no
run loses the race between the kubelet's last write and the object's removal. Before the
finalizer, on this node 21 of 31 evictions were charged as crashes.

Twenty deletions at once failed until the launcher remembered each Pod's first delete request
(docs/adr/0033-many-pods-ending-at-once.md): once a deleted Pod's containers stop, the kubelet
deletes it again with a grace of 0, which moves ``deletionTimestamp`` past the container's
end; a step that read the Pod only after that took the SIGKILL for the container's own
failure (137, Error), retried it, and the retry ran ``sleep 600``.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
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


#: Long enough that the container surely runs before its deadline on a loaded node. With 3 s
#: the test once never saw the Pod Running (at a load of 15-25): the launcher's own clock
#: (timeout + ``timeout_slack_seconds``, 0.5 s in these tests, counted from the Pod's
#: creation) deleted the Pod while it was still Pending; ``activeDeadlineSeconds`` too counts
#: from the kubelet's admission (``status.startTime``), before the container starts.
TIMEOUT_SECONDS = 45
#: Kubernetes' default grace period: what the Pod would get without Sundial's default.
KUBERNETES_GRACE_SECONDS = 30


async def test_a_timed_out_container_is_gone_within_its_timeout_and_sundials_grace(
    pool, api_client, core_api, namespace, real_node
):
    """The template sets no grace period, so the Pod gets Sundial's default (10 s, not
    Kubernetes' 30 s), and ``sleep`` ignores SIGTERM. Measured from the Pod's start as the
    kubelet recorded it, the container lives at least its timeout (it is not cut short) and is
    gone before the timeout plus Kubernetes' grace: a bound, not a measurement, so a loaded
    node has room. (The launcher deletes the Pod once it reads DeadlineExceeded, with these
    tests' ``delete_grace_seconds`` of 0, so the container rarely lives out the 10 s.)"""
    pod_template = template(real_node, IGNORES_TERM)
    del pod_template["spec"]["terminationGracePeriodSeconds"]
    job = Job(pool, namespace)
    await job.define(
        pod_template,
        timeoutSeconds=TIMEOUT_SECONDS,
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_id = await job.submit()
    # The launcher's clock is a backstop that counts from the Pod's creation: given a slack of
    # the timeout, the kubelet's deadline (counted from its start) is what ends the container.
    launcher = settings(namespace, worker(), timeout_slack_seconds=TIMEOUT_SECONDS)
    async with maintenance(pool), running_launcher(pool, api_client, launcher):
        [pod] = await running_first_attempts(core_api, namespace, [run_id])
        assert (
            pod.spec.termination_grace_period_seconds == manifests.DEFAULT_TERMINATION_GRACE_SECONDS
        )
        assert pod.spec.active_deadline_seconds == TIMEOUT_SECONDS
        started = pod.status.start_time  # whole seconds, rounded down: lived reads long
        container = container_id(pod)

        async def gone() -> bool:
            return container not in await asyncio.to_thread(running_tasks, real_node.state_dir)

        await wait_until_async(gone, within=180, what=f"container {container} killed")
        lived = (datetime.now(UTC) - started).total_seconds()

        async def ended() -> dict[str, Any] | None:
            row = await run_row(pool, run_id)
            return row if row["state"] != "running" else None

        # The container can be gone before the kubelet's final status reaches the launcher.
        row = await wait_until_async(ended, within=AWAIT_FINAL_STATUS, what="the run's end")
    assert row["state"] == "timed_out", row
    assert TIMEOUT_SECONDS <= lived < TIMEOUT_SECONDS + KUBERNETES_GRACE_SECONDS, lived


#: Stops on SIGTERM with an exit code of its own, not a signal's (128 + 15).
EXITS_3_ON_TERM = ["sh", "-c", 'trap "exit 3" TERM; while :; do sleep 1; done']
#: Long enough for a loaded kubelet's final status (10.8 s seen at a load of 20-30): every
#: deletion is then read from the status the kubelet wrote, which is what is under test.
AWAIT_FINAL_STATUS = 120.0


async def delete_all_and_wait(
    pool, core_api, namespace, run_ids: list[int]
) -> list[dict[str, Any]]:
    for pod in await running_first_attempts(core_api, namespace, run_ids):
        await asyncio.to_thread(
            core_api.delete_namespaced_pod, pod.metadata.name, namespace, grace_period_seconds=1
        )

    async def all_ended() -> list[dict[str, Any]] | None:
        rows = [await run_row(pool, run_id) for run_id in run_ids]
        return rows if all(row["state"] != "running" for row in rows) else None

    rows: list[dict[str, Any]] = await wait_until_async(
        all_ended, within=180, what="every deleted run ended"
    )
    return rows


def assert_cancelled_by_the_policy(row: dict[str, Any], exit_code: int) -> None:
    ended = (row["state"], row["attempt"], row["retries_used"], row["oom_retries_used"])
    assert ended == ("cancelled", 1, 0, 0), row
    assert "podDeletionPolicy: Cancel" in row["last_error"], row
    assert (row["pod_reason"], row["pod_exit_code"]) == ("PodDeleted", exit_code), row


async def test_twenty_deletions_all_follow_the_pod_deletion_policy_never_the_oom_path(
    pool, api_client, core_api, namespace, real_node
):
    """Ten containers ignore SIGTERM (``sleep``: SIGKILLed after the grace period, 1 s which
    the kubelet makes 2: 137 Error, which an older classify took for an OOM kill) and ten exit
    3 on it (a code no signal gives: only the delete request the launcher saw before the
    kubelet's own last delete says the deletion stopped them)."""
    ignores = Job(pool, namespace, "ignores-term")
    await ignores.define(
        template(real_node, IGNORES_TERM, resources={"limits": {"memory": "32Mi"}}),
        podDeletionPolicy="Cancel",
        oom={"maxRetries": 2, "memoryIncreasePercent": 100},
    )
    exits = Job(pool, namespace, "exits-on-term")
    await exits.define(template(real_node, EXITS_3_ON_TERM), podDeletionPolicy="Cancel")
    killed = [await ignores.submit() for _ in range(MANY // 2)]
    stopped = [await exits.submit() for _ in range(MANY - MANY // 2)]
    launcher = settings(
        namespace, worker(), max_pods=MANY * 2, deletion_slack_seconds=AWAIT_FINAL_STATUS
    )
    async with maintenance(pool), running_launcher(pool, api_client, launcher):
        rows = await delete_all_and_wait(pool, core_api, namespace, killed + stopped)
        for row in rows[: len(killed)]:
            assert_cancelled_by_the_policy(row, 137)
        for row in rows[len(killed) :]:
            assert_cancelled_by_the_policy(row, 3)
        await finish(pool, core_api, namespace, killed + stopped)


async def test_twenty_deletions_read_by_a_launcher_that_only_polls(
    pool, api_client, core_api, namespace, real_node
):
    """No watch, a relist every 3 s: most reads come after the kubelet's own last delete
    (0.3-3 s after the final status here), when the Pod no longer says when it was first
    deleted. Its SIGKILL (137) still reads as the deletion's. Failed on the old code: runs
    retried as errors, their second attempt running ``sleep 600``."""
    job = Job(pool, namespace)
    await job.define(template(real_node, IGNORES_TERM), podDeletionPolicy="Cancel")
    run_ids = [await job.submit() for _ in range(MANY)]
    launcher = settings(
        namespace,
        worker(),
        max_pods=MANY * 2,
        watch=False,
        poll_interval_seconds=3.0,
        deletion_slack_seconds=AWAIT_FINAL_STATUS,
    )
    async with maintenance(pool), running_launcher(pool, api_client, launcher):
        for row in await delete_all_and_wait(pool, core_api, namespace, run_ids):
            assert_cancelled_by_the_policy(row, 137)
        await finish(pool, core_api, namespace, run_ids)
