"""What a launcher step reads: its own live work, not the ended Pods kept for JobRun windows.

Ended Pods stay until the mirror's sweep deletes them (docs/adr/0011-finished-pod-gc.md), so
they can outnumber the live ones a hundred to one; a step must not read them
(docs/adr/0009-pod-launcher.md, decision 1). Measured over the wire, below the client's API
methods (``localdev.kube_reads``), so the count does not depend on how the launcher asks.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from sundial.localdev import kube_reads
from sundial.pods import launcher, manifests
from support.pods import OUTCOME, Job, run_pods, run_row, settings, template
from support.polling import wait_until_async

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(120)]

KEPT = 50
#: Run ids no store row has: Pods of runs long finished (or of another launcher's runs).
FOREIGN_RUN = 10_000_000


def kept_pod(
    namespace: str, run_id: int, annotations: dict[str, str], *, released: bool
) -> dict[str, Any]:
    """A Pod as the launcher makes them (labels, environment, security context: its real
    size), of a run this launcher does not hold; ``released``: as the launcher leaves a Pod
    once its outcome is recorded (no outcome finalizer, no tracked label)."""
    spec = manifests.LaunchSpec(
        run_id=run_id,
        attempt=1,
        job_id=str(uuid.uuid4()),
        job_namespace=namespace,
        job_name="report",
        handler="",
        template=template(annotations),
        args={},
        idempotency_key=f"kept-{run_id}",
        fire_time=None,
        timeout_seconds=3600,
    )
    pod = manifests.pod_manifest(spec, manifests.ManifestSettings(instance=namespace))
    if released:
        del pod["metadata"]["labels"][manifests.LABEL_TRACKED]
        pod["metadata"]["finalizers"].remove(manifests.OUTCOME_FINALIZER)
    return pod


def phases(core_api: client.CoreV1Api, namespace: str, run_ids: range) -> list[str]:
    selector = f"{manifests.LABEL_RUN_ID} in ({','.join(str(r) for r in run_ids)})"
    pods = core_api.list_namespaced_pod(namespace, label_selector=selector).items
    return sorted(pod.status.phase or "" for pod in pods)


@pytest.fixture
def reading_client(kubeconfig: Path) -> Any:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield api
    finally:
        api.close()


async def test_a_step_reads_live_pods_only_and_still_deletes_a_live_stale_one(
    pool, reading_client, core_api, namespace
):
    reads = kube_reads.count_reads(reading_client)
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()
    pod_launcher = launcher.PodLauncher(
        pool, reading_client, settings(namespace, f"launcher-{uuid.uuid4().hex[:6]}")
    )

    async def held_pod_runs() -> bool:
        await pod_launcher.step()
        pods = await asyncio.to_thread(run_pods, core_api, namespace, run_id)
        return len(pods) == 1 and pods[0].status.phase == "Running"

    await wait_until_async(held_pod_runs, what="the held run's Pod Running")
    await pod_launcher.step()  # one quiet step first: the Pod's Running is not news any more
    reads.take()
    await pod_launcher.step()
    before = reads.take()

    # KEPT ended Pods of the installation, as the mirror keeps them, and one live Pod of a run
    # no store row knows (stale: the launcher must find and delete it). Created before the next
    # step, by another client (not counted).
    ended_runs = range(FOREIGN_RUN, FOREIGN_RUN + KEPT)
    for run in ended_runs:
        core_api.create_namespaced_pod(namespace, kept_pod(namespace, run, {}, released=True))
    stale_run = FOREIGN_RUN + KEPT
    core_api.create_namespaced_pod(
        namespace, kept_pod(namespace, stale_run, {OUTCOME: "run-forever"}, released=False)
    )
    await wait_until_async(
        lambda: asyncio.to_thread(
            lambda: (
                phases(core_api, namespace, ended_runs) == ["Succeeded"] * KEPT
                and phases(core_api, namespace, range(stale_run, stale_run + 1)) == ["Running"]
            )
        ),
        what=f"{KEPT} kept Pods Succeeded and the stale one Running",
    )

    await pod_launcher.step()
    after = reads.take()

    # The same requests; one more object, the live stale Pod. Not the KEPT ended ones.
    assert (after.requests, after.objects) == (before.requests, before.objects + 1), (
        before,
        after,
    )
    assert after.body_bytes < 3 * before.body_bytes, (before, after)
    assert before.objects == 1  # the held run's Pod, read in the LIST

    await wait_until_async(
        lambda: asyncio.to_thread(
            lambda: phases(core_api, namespace, range(stale_run, stale_run + 1)) == []
        ),
        what="the stale live Pod deleted",
    )
    assert phases(core_api, namespace, ended_runs) == ["Succeeded"] * KEPT  # left for the sweep
    assert pod_launcher.held == {run_id: 1}
    assert (await run_row(pool, run_id))["state"] == "running"
