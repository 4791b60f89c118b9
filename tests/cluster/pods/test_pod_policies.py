"""A job's own pod policies on the local control plane, against a real PostgreSQL:
podDeletionPolicy (a Pod deleted by someone else) and startTimeoutSeconds.

kwok plays the kubelet (hack/cluster/kwok/stages.yaml): ``run-forever`` keeps a Pod Running
until it is deleted, and a deleted Pod is gone at once. See docs/adr/0010.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from kubernetes import client

from sundial.api import common
from sundial.pods import manifests
from sundial.store import pool as store_pool
from sundial.store import runs, schedules
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

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(120)]


def worker() -> str:
    return f"launcher-{uuid.uuid4().hex[:6]}"


def attempts(pods: list[client.V1Pod]) -> list[str]:
    return [pod.metadata.labels[manifests.LABEL_ATTEMPT] for pod in pods]


async def delete_running_pod(core_api: client.CoreV1Api, namespace: str, run_id: int) -> str:
    """Wait for the run's first Pod to be Running, then delete it as a person would."""
    [pod] = await wait_pods(
        core_api,
        namespace,
        run_id,
        lambda pods: len(pods) == 1 and pods[0].status.phase == "Running",
    )
    name = str(pod.metadata.name)
    await asyncio.to_thread(core_api.delete_namespaced_pod, name, namespace, grace_period_seconds=0)
    return name


async def test_a_deleted_pod_is_retried_by_default_with_a_pod_for_attempt_2(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        await wait_pods(
            core_api,
            namespace,
            run_id,
            lambda pods: bool(pods) and pods[0].status.phase == "Running",
        )
        await job.define(template())  # attempt 2 succeeds; attempt 1 keeps running until deleted
        deleted = await delete_running_pod(core_api, namespace, run_id)
        row = await wait_state(pool, run_id, "completed", "cancelled", "dead_lettered")

    assert (row["state"], row["attempt"], row["retries_used"]) == ("completed", 2, 1)
    pods = run_pods(core_api, namespace, run_id)
    assert attempts(pods) == ["2"] and pods[0].status.phase == "Succeeded"
    assert deleted not in {pod.metadata.name for pod in pods}
    assert row["pod_name"] == pods[0].metadata.name
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT attempt, failure_reason, error FROM job_run_attempts WHERE run_id = %s",
            (run_id,),
        )
        [(attempt, reason, error)] = await cursor.fetchall()
    assert (attempt, reason) == (1, "crash")
    assert "PodDeleted" in error


async def test_a_deleted_pod_cancels_the_run_when_the_policy_says_cancel(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}), podDeletionPolicy="Cancel")
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        await delete_running_pod(core_api, namespace, run_id)
        row = await wait_state(pool, run_id, "cancelled", "completed", "retry_wait", "pending")
        # Give a wrong retry every chance to show itself: several launcher and reaper passes.
        await asyncio.sleep(3)
        later = await run_row(pool, run_id)

    assert (row["state"], row["attempt"], row["failure_reason"]) == ("cancelled", 1, "cancelled")
    assert row["retries_used"] == 0
    assert "PodDeleted" in row["last_error"] and "podDeletionPolicy: Cancel" in row["last_error"]
    assert (later["state"], later["attempt"]) == ("cancelled", 1)
    assert run_pods(core_api, namespace, run_id) == []  # no Pod for an attempt 2
    info = await runs.get(pool, run_id)
    assert info is not None and info.state == "cancelled"


async def define_inline(
    pool: store_pool.Pool, namespace: str, spec: dict[str, Any]
) -> tuple[uuid.UUID, str]:
    """A JobRun's inline job, as the operator stores it (``jobrun:<uid>``)."""
    uid = uuid.uuid4()
    name = f"jobrun:{uid}"
    job_spec = common.JobSpec.model_validate(spec)
    assert await schedules.upsert_job(
        pool, uid=uid, namespace=namespace, name=name, generation=1, spec=job_spec
    )
    return uid, name


@pytest.mark.parametrize("kind", ["ScheduledJob", "JobRun"])
async def test_the_jobs_own_start_timeout_fails_a_pod_that_never_starts(
    pool, api_client, core_api, namespace, kind
):
    # No node has this label: the scheduler leaves the Pod Pending (Unschedulable) for ever.
    never = template(annotations=None)
    never["spec"]["nodeSelector"] = {"sundial.dev/no-such-node": "true"}
    spec = {"template": never, "startTimeoutSeconds": 3, "retry": {"maxRetries": 2}}
    if kind == "ScheduledJob":
        job = Job(pool, namespace)
        await job.define(never, startTimeoutSeconds=3)
        run_id = await job.submit()
    else:
        uid, _name = await define_inline(pool, namespace, spec)
        run_id = (await runs.submit(pool, uid, idempotency_key=str(uid))).run_id
    # The launcher's own default is 30 s, so only the job's 3 s can end it within 20 s.
    launcher_settings = settings(namespace, worker(), default_start_timeout_seconds=30.0)

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings):
        row = await wait_state(pool, run_id, "failed", "dead_lettered", "completed", within=20)
        await wait_pods(core_api, namespace, run_id, lambda pods: not pods, within=15)

    assert (row["state"], row["attempt"], row["failure_reason"]) == ("failed", 1, "start_failure")
    assert row["pod_reason"] in ("Unschedulable", "StartTimeout")
    assert row["pod_reason"] in row["last_error"]
