"""Helpers for pod-mode tests: a job in the store, a launcher task, and waits for a run's
state and Pods (``support.polling``)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client, watch

from sundial.api import scheduled_job
from sundial.pods import launcher, manifests
from sundial.store import pool as store_pool
from sundial.store import reaper, runs, schedules
from support import polling

OUTCOME = "sundial.dev/kwok-outcome"
EXIT_CODE = "sundial.dev/kwok-exit-code"
RUNNING_SECONDS = "sundial.dev/kwok-running-seconds"


def template(annotations: dict[str, str] | None = None, **container: Any) -> dict[str, Any]:
    return {
        "metadata": {"annotations": annotations or {}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "main", "image": "busybox:1.36", "command": ["true"], **container}
            ],
        },
    }


class Job:
    """A pod-mode job in the store (a suspended-for-ever ScheduledJob: runs are submitted)."""

    def __init__(self, pool: store_pool.Pool, namespace: str, name: str = "report") -> None:
        self.pool = pool
        self.namespace = namespace
        self.name = name
        self.uid = uuid.uuid4()
        self.generation = 0

    async def define(self, pod_template: dict[str, Any], **spec: Any) -> None:
        await self._upsert({"template": pod_template, **spec})

    async def define_handler(self, handler: str, **handler_spec: Any) -> None:
        await self._upsert({"handler": {"name": handler, "executionModel": "pod", **handler_spec}})

    async def _upsert(self, spec: dict[str, Any]) -> None:
        self.generation += 1
        model = scheduled_job.ScheduledJobSpec.model_validate(
            {
                "schedule": "0 0 1 1 *",
                "suspend": True,
                "retry": {"maxRetries": 2, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
                **spec,
            }
        )
        await schedules.upsert(
            self.pool,
            uid=self.uid,
            namespace=self.namespace,
            name=self.name,
            generation=self.generation,
            spec=model,
            now=datetime.now(UTC),
        )

    async def submit(self, args: dict[str, Any] | None = None) -> int:
        submitted = await runs.submit(self.pool, self.uid, args=args)
        return submitted.run_id


async def run_row(pool: store_pool.Pool, run_id: int) -> dict[str, Any]:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT state, attempt, retries_used, infra_retries_used, oom_retries_used,"
            " failure_reason, failure_detail, last_error, pod_name, pod_exit_code, pod_reason,"
            " lease_owner FROM job_runs WHERE id = %s",
            (run_id,),
        )
        row = await cursor.fetchone()
        assert row is not None, f"run {run_id} is not in job_runs"
        names = [column.name for column in cursor.description or []]
    return dict(zip(names, row, strict=True))


async def wait_state(pool: store_pool.Pool, run_id: int, *states: str, within: float = 60) -> Any:
    async def check() -> dict[str, Any] | None:
        row = await run_row(pool, run_id)
        return row if row["state"] in states else None

    try:
        return await polling.wait_until_async(
            check, within=within, what=f"run {run_id} in {states}"
        )
    except AssertionError as error:
        raise AssertionError(f"{error}; row: {await run_row(pool, run_id)}") from None


def run_pods(core_api: client.CoreV1Api, namespace: str, run_id: int) -> list[client.V1Pod]:
    listing = core_api.list_namespaced_pod(
        namespace, label_selector=f"{manifests.LABEL_RUN_ID}={run_id}"
    )
    return sorted(listing.items, key=lambda pod: int(pod.metadata.labels[manifests.LABEL_ATTEMPT]))


async def wait_pods(
    core_api: client.CoreV1Api,
    namespace: str,
    run_id: int,
    condition: Callable[[list[client.V1Pod]], bool],
    within: float = 60,
) -> list[client.V1Pod]:
    async def check() -> tuple[list[client.V1Pod]] | None:
        pods = await asyncio.to_thread(run_pods, core_api, namespace, run_id)
        return (pods,) if condition(pods) else None  # a tuple: an empty list is a match too

    [pods] = await polling.wait_until_async(check, within=within, what=f"Pods of run {run_id}")
    return pods


def settings(namespace: str, worker: str, **changes: Any) -> launcher.LauncherSettings:
    values: dict[str, Any] = {
        "worker": worker,
        "namespaces": [namespace],
        "lease_seconds": 6.0,
        "poll_interval_seconds": 0.2,
        "default_start_timeout_seconds": 30.0,
        "delete_grace_seconds": 0,
        "timeout_slack_seconds": 0.5,
        "manifest": manifests.ManifestSettings(instance=namespace),
    }
    values.update(changes)
    return launcher.LauncherSettings(**values)


@contextlib.asynccontextmanager
async def running_launcher(
    pool: store_pool.Pool, api_client: client.ApiClient, launcher_settings: Any
) -> AsyncIterator[launcher.PodLauncher]:
    """A launcher in a task, stopped (Pods and leases left as they are) on exit."""
    pod_launcher = launcher.PodLauncher(pool, api_client, launcher_settings)
    stop = asyncio.Event()
    task = asyncio.create_task(pod_launcher.run(stop))
    try:
        yield pod_launcher
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


@contextlib.asynccontextmanager
async def maintenance(pool: store_pool.Pool) -> AsyncIterator[None]:
    """What the maintainer does for these tests: promote due retries, reap expired leases."""

    async def loop() -> None:
        while True:
            await reaper.promote_due(pool)
            await reaper.reap(pool)
            await asyncio.sleep(0.2)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class PodEvents:
    """Every watch event on a run's Pods, in the apiserver's order, recorded by a thread:
    ``(event type, attempt, phase)``. Proves orderings a final listing cannot show."""

    def __init__(self, core_api: client.CoreV1Api, namespace: str, run_id: int) -> None:
        self.events: list[tuple[str, int, str | None]] = []
        self.error: Exception | None = None
        self._stopping = False
        self._watch = watch.Watch()
        self._thread = threading.Thread(
            target=self._record, args=(core_api, namespace, run_id), daemon=True
        )

    def _record(self, core_api: client.CoreV1Api, namespace: str, run_id: int) -> None:
        try:
            self._stream(core_api, namespace, run_id)
        except Exception as error:  # reported by __exit__ unless the watch was being stopped
            if not self._stopping:
                self.error = error

    def _stream(self, core_api: client.CoreV1Api, namespace: str, run_id: int) -> None:
        for event in self._watch.stream(
            core_api.list_namespaced_pod,
            namespace,
            label_selector=f"{manifests.LABEL_RUN_ID}={run_id}",
            timeout_seconds=120,
        ):
            pod = event["object"]
            attempt = int(pod.metadata.labels[manifests.LABEL_ATTEMPT])
            self.events.append((event["type"], attempt, pod.status.phase))

    def __enter__(self) -> PodEvents:
        """Start watching; returns once the watch has seen the run's existing Pods (at least
        one must exist), so no later change can be missed."""
        self._thread.start()
        polling.wait_until(lambda: self.events, within=10, what="the watch to see a Pod of the run")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping = True
        self._watch.stop()
        if self.error is not None:
            raise AssertionError(f"the Pod watch failed: {self.error!r}")

    def first(self, kind: str, attempt: int) -> int:
        """Index of the first event of ``kind`` for ``attempt``."""
        for index, (event_type, event_attempt, _phase) in enumerate(self.events):
            if (event_type, event_attempt) == (kind, attempt):
                return index
        raise AssertionError(f"no {kind} event for attempt {attempt}: {self.events}")
