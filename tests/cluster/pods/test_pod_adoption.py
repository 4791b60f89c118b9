"""A launcher restarted with the same worker id adopts the runs it held: it creates the Pod of
an attempt whose Pod was never created, and treats one that was created and deleted while no
launcher ran as gone (``podDeletionPolicy``), never creating it again under the same attempt;
and it adopts only the Pod it made (the UID it recorded, the launch id it annotated), never
another made under the attempt's name.

The first launcher "crashes": its task is cancelled, so it neither stops cleanly nor does
anything more.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest

from sundial.pods import launcher, manifests
from sundial.store import claims
from support.pods import (
    OUTCOME,
    Job,
    PodEvents,
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

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(120)]


def worker() -> str:
    return f"launcher-{uuid.uuid4().hex[:6]}"


async def crash_after_pod_created(pool, api_client, core_api, namespace, run_id, worker_id):
    """Launcher A creates the run's Pod, then its task is cancelled mid-flight."""
    pod_launcher = launcher.PodLauncher(pool, api_client, settings(namespace, worker_id))
    task = asyncio.create_task(pod_launcher.run(asyncio.Event()))
    try:
        [pod] = await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
        # The name is recorded right after the create; wait for it, as a crash comes later.
        await wait_state(pool, run_id, "running")

        async def recorded() -> bool:
            return (await run_row(pool, run_id))["pod_name"] == pod.metadata.name

        await wait_until_async(recorded, within=30, what="the Pod's name recorded")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return pod


async def delete_pod_now(core_api, namespace, run_id, name):
    """Delete the Pod and take the outcome finalizer off it, so it is really gone: the case of
    a Pod whose finalizer someone removed by hand (with the finalizer in place the Pod waits
    for the launcher: test_pod_outcome_finalizer.py)."""
    await asyncio.to_thread(core_api.delete_namespaced_pod, name, namespace, grace_period_seconds=0)
    await asyncio.to_thread(
        core_api.patch_namespaced_pod,
        name,
        namespace,
        [{"op": "remove", "path": "/metadata/finalizers"}],
    )
    await wait_pods(core_api, namespace, run_id, lambda pods: not pods, within=30)


async def test_a_pod_deleted_while_its_launcher_was_down_is_retried_not_recreated(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()
    same_worker = worker()

    async with maintenance(pool):
        pod = await crash_after_pod_created(
            pool, api_client, core_api, namespace, run_id, same_worker
        )
        with PodEvents(core_api, namespace, run_id) as pod_events:
            await delete_pod_now(core_api, namespace, run_id, pod.metadata.name)
            await job.define(template())  # attempt 2, if there is one, succeeds
            async with running_launcher(pool, api_client, settings(namespace, same_worker)):
                row = await wait_state(
                    pool, run_id, "completed", "failed", "dead_lettered", within=30
                )

    assert (row["state"], row["attempt"]) == ("completed", 2)
    added = [attempt for kind, attempt, _phase in pod_events.events if kind == "ADDED"]
    assert added.count(1) == 1, pod_events.events  # the first Pod only, seen by the watch
    [new_pod] = run_pods(core_api, namespace, run_id)
    assert new_pod.metadata.name != pod.metadata.name
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT attempt, failure_reason, error FROM job_run_attempts WHERE run_id = %s",
            (run_id,),
        )
        [(attempt, reason, error)] = await cursor.fetchall()
    assert (attempt, reason) == (1, "crash")
    assert "PodDeleted" in error


async def test_a_pod_deleted_while_its_launcher_was_down_cancels_under_cancel_policy(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}), podDeletionPolicy="Cancel")
    run_id = await job.submit()
    same_worker = worker()

    async with maintenance(pool):
        pod = await crash_after_pod_created(
            pool, api_client, core_api, namespace, run_id, same_worker
        )
        await delete_pod_now(core_api, namespace, run_id, pod.metadata.name)
        async with running_launcher(pool, api_client, settings(namespace, same_worker)):
            row = await wait_state(pool, run_id, "cancelled", "completed", "retry_wait", within=30)
            await asyncio.sleep(2)  # several launcher passes: a recreated Pod would show
            pods = run_pods(core_api, namespace, run_id)

    assert (row["state"], row["attempt"], row["failure_reason"]) == ("cancelled", 1, "cancelled")
    assert "PodDeleted" in row["last_error"] and "podDeletionPolicy: Cancel" in row["last_error"]
    assert pods == []


async def test_a_run_claimed_but_never_launched_gets_its_pod_once_on_adoption(
    pool, api_client, core_api, namespace
):
    """The crash fell between claim and create: no Pod, no recorded name."""
    job = Job(pool, namespace)
    await job.define(template())
    run_id = await job.submit()
    same_worker = worker()
    [claimed] = await claims.claim(
        pool,
        same_worker,
        queues=("default",),
        execution_models=("pod",),
        limit=1,
        lease_seconds=6.0,
    )
    assert (claimed.id, claimed.attempt) == (run_id, 1)

    launcher_settings = settings(namespace, same_worker)
    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings):
        [pod] = await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
        row = await wait_state(pool, run_id, "completed", "failed", "dead_lettered")

    assert (row["state"], row["attempt"], row["pod_name"]) == ("completed", 1, pod.metadata.name)
    [only] = run_pods(core_api, namespace, run_id)
    assert only.metadata.uid == pod.metadata.uid


def forged_pod(namespace: str, run_id: int, attempt: int, job_name: str = "report") -> dict:
    """What someone allowed to create Pods in the namespace could make: Sundial's own manifest
    for the attempt (its name and labels), minus the launch id only the launcher knows,
    ending Succeeded on a kwok node."""
    spec = manifests.LaunchSpec(
        run_id=run_id,
        attempt=attempt,
        job_id=str(uuid.uuid4()),
        job_namespace=namespace,
        job_name=job_name,
        handler="",
        template=template({OUTCOME: "succeed"}),
        args={},
        idempotency_key=f"run:{run_id}",
        fire_time=None,
        timeout_seconds=60,
    )
    manifest = manifests.pod_manifest(spec, manifests.ManifestSettings(instance=namespace))
    manifest["metadata"]["finalizers"] = []  # nobody would release it: the namespace must go
    return manifest


async def test_a_pod_made_under_the_name_of_a_deleted_one_is_not_adopted(
    pool, api_client, core_api, namespace
):
    """While the launcher is down, its Pod is deleted and another made under the same name,
    ending Succeeded: the recorded UID says it is not the attempt's Pod, so attempt 1 ends as
    a deleted Pod and the run succeeds only by its own attempt 2."""
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()
    same_worker = worker()

    async with maintenance(pool):
        pod = await crash_after_pod_created(
            pool, api_client, core_api, namespace, run_id, same_worker
        )
        async with pool.connection() as conn:
            cursor = await conn.execute("SELECT pod_uid FROM job_runs WHERE id = %s", (run_id,))
            assert await cursor.fetchone() == (pod.metadata.uid,)
        await delete_pod_now(core_api, namespace, run_id, pod.metadata.name)
        forgery = forged_pod(namespace, run_id, 1)
        assert forgery["metadata"]["name"] == pod.metadata.name
        await asyncio.to_thread(core_api.create_namespaced_pod, namespace, forgery)
        await job.define(template())  # attempt 2, if there is one, succeeds
        async with running_launcher(pool, api_client, settings(namespace, same_worker)):
            row = await wait_state(pool, run_id, "completed", "failed", "dead_lettered", within=30)

    assert (row["state"], row["attempt"]) == ("completed", 2), row
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT attempt, error FROM job_run_attempts WHERE run_id = %s", (run_id,)
        )
        [(attempt, error)] = await cursor.fetchall()
    assert attempt == 1 and "PodDeleted" in error


async def test_a_pod_made_before_the_launcher_under_the_attempts_name_fails_the_run(
    pool, api_client, core_api, namespace
):
    """Pod names are predictable: a Pod made ahead of the launcher under attempt 1's name, set
    to succeed, is not the run's Pod. The launcher cannot create its own under that name, so
    the run fails, saying why, and never takes the impostor's outcome."""
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()
    await asyncio.to_thread(
        core_api.create_namespaced_pod, namespace, forged_pod(namespace, run_id, 1)
    )

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        row = await wait_state(pool, run_id, "completed", "failed", "dead_lettered", within=30)

    assert row["state"] == "failed", row
    assert "PodNameTaken" in (row["pod_reason"] or ""), row
    assert "that Sundial did not create for this attempt" in row["last_error"], row
