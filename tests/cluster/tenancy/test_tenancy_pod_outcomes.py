"""A tenant cannot end a neighbour's Pod run by making a Pod that looks like it.

The launcher watches every namespace (the chart's default), and labels are written by whoever
creates the Pod: an attempt's outcome counts only from the Pod the launcher created for it, in
the run's namespace, under the attempt's name and with the UID the create returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from kubernetes import client

from sundial.pods import launcher, manifests
from sundial.store import pool as store_pool
from support.pods import OUTCOME, RUNNING_SECONDS, Job, maintenance, settings, template, wait_state
from support.polling import wait_until_async

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(150)]


class RecordingHooks:
    """Launch hooks that only record the forgeries they are told of."""

    def __init__(self) -> None:
        self.forgeries: list[tuple[str, str, int, int]] = []

    async def owner(self, *_: Any) -> Mapping[str, Any] | None:
        return None

    async def former_owner(self, *_: Any) -> Mapping[str, Any] | None:
        return None

    async def deleted_with_owner(self, *_: Any) -> str | None:
        return None

    async def ended(self, end: launcher.AttemptEnd) -> None:
        return None

    async def forged(self, pod: Mapping[str, Any], run_id: int, attempt: int) -> None:
        metadata = pod["metadata"]
        self.forgeries.append((metadata["namespace"], metadata["name"], run_id, attempt))


class CountingLauncher(launcher.PodLauncher):
    """A launcher that counts its steps, so a test can wait for the next few of them."""

    steps = 0

    async def step(self) -> None:
        await super().step()
        self.steps += 1


@contextlib.asynccontextmanager
async def cluster_wide_launcher(
    pool: store_pool.Pool, api_client: client.ApiClient, instance: str, hooks: RecordingHooks
) -> AsyncIterator[CountingLauncher]:
    """A launcher that looks for its Pods in every namespace, as the chart's default does."""
    pod_launcher = CountingLauncher(
        pool,
        api_client,
        settings(instance, f"launcher-{uuid.uuid4().hex[:6]}", namespaces=None),
        hooks=hooks,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(pod_launcher.run(stop))
    try:
        yield pod_launcher
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


def _forged_from(real: client.V1Pod, api_client: client.ApiClient) -> dict[str, Any]:
    """What an attacker who can read the Pod's manifest (a leaked one does) writes: the same
    labels, spec and finalizer, in their own namespace, set to succeed at once."""
    spec = api_client.sanitize_for_serialization(real.spec)
    spec.pop("nodeName", None)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "looks-like-team-a",
            "labels": dict(real.metadata.labels),
            "annotations": {OUTCOME: "succeed", RUNNING_SECONDS: "1"},
            "finalizers": [manifests.OUTCOME_FINALIZER],
        },
        "spec": spec,
    }


async def test_a_pod_made_in_another_namespace_with_a_runs_labels_does_not_end_it(
    pool, api_client, core_api, team_a, team_b, as_bob
):
    job = Job(pool, team_a)
    await job.define(template({RUNNING_SECONDS: "25"}))
    run_id = await job.submit()
    hooks = RecordingHooks()
    bob = client.CoreV1Api(as_bob)
    try:
        async with (
            maintenance(pool),
            cluster_wide_launcher(pool, api_client, team_a, hooks) as pod_launcher,
        ):
            label = f"{manifests.LABEL_RUN_ID}={run_id}"

            def running() -> client.V1Pod | None:
                pods = core_api.list_namespaced_pod(team_a, label_selector=label).items
                return pods[0] if pods and pods[0].status.phase == "Running" else None

            def forged_succeeded() -> bool:
                pod = bob.read_namespaced_pod("looks-like-team-a", team_b)
                return bool(pod.status.phase == "Succeeded")

            real = await wait_until_async(
                lambda: asyncio.to_thread(running), within=60, what="team-a's Pod running"
            )
            await asyncio.to_thread(
                bob.create_namespaced_pod, team_b, _forged_from(real, api_client)
            )
            await wait_until_async(
                lambda: asyncio.to_thread(forged_succeeded),
                within=60,
                what="the forged Pod succeeded",
            )
            seen = pod_launcher.steps
            await wait_until_async(
                lambda: _after(pod_launcher, seen + 3), within=30, what="three launcher steps"
            )

            row = await wait_state(pool, run_id, "running", within=1)
            assert row["pod_name"] == real.metadata.name
            assert hooks.forgeries == [(team_b, "looks-like-team-a", run_id, 1)]

            row = await wait_state(pool, run_id, "completed", within=60)
            assert (row["pod_name"], row["attempt"]) == (real.metadata.name, 1)
    finally:
        with contextlib.suppress(client.ApiException):
            core_api.patch_namespaced_pod(
                "looks-like-team-a", team_b, {"metadata": {"finalizers": None}}
            )


async def _after(pod_launcher: CountingLauncher, steps: int) -> bool:
    return pod_launcher.steps >= steps
