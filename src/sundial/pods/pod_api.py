"""The Pod API as the pod launcher calls it (list, read, create, delete), and what Pods say.

The installed synchronous ``kubernetes`` client, run in ``asyncio.to_thread``; responses are
read as raw JSON (``_preload_content=False``): the launcher needs dicts, and skipping the model
deserialisation keeps a LIST of hundreds of Pods cheap. The launcher relists each
step (docs/adr/0009-pod-launcher.md, decision 1), only the Pods that have not ended
(``NOT_ENDED``), and GETs by name the few it holds that are missing from that list.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sundial.pods import manifests

__all__ = ["NOT_ENDED", "PodApi", "api_message", "attempt_of", "ended", "labels", "run_of"]

#: Field selector for Pods that are Pending, Running or Unknown. The apiserver filters on it (in
#: its watch cache), so a LIST costs what the live Pods cost, not the ended Pods kept around for
#: the JobRun window (docs/adr/0011-finished-pod-gc.md).
NOT_ENDED = "status.phase!=Succeeded,status.phase!=Failed"

#: GETs in flight at once in ``get_many``: enough to confirm a burst of ended attempts in a few
#: round trips, few enough not to hog the client's connection pool and the default executor.
_GET_CONCURRENCY = 8


class PodApi:
    """List, get, create and delete Pods; a delete of a Pod already gone is not an error."""

    def __init__(self, api_client: client.ApiClient, *, delete_grace_seconds: int) -> None:
        # Typed Any: raw responses (_preload_content=False) are not in the client's stubs.
        self._core: Any = client.CoreV1Api(api_client)
        self._delete_grace_seconds = delete_grace_seconds

    async def create(self, namespace: str, manifest: Mapping[str, Any]) -> None:
        """Create the Pod; an ``ApiException`` (409, 422 …) is the caller's to read."""
        await asyncio.to_thread(
            self._core.create_namespaced_pod, namespace, dict(manifest), _preload_content=False
        )

    async def list(
        self, namespaces: Sequence[str] | None, selector: str, *, field_selector: str | None = None
    ) -> list[dict[str, Any]]:
        def list_in(namespace: str | None) -> list[dict[str, Any]]:
            options: dict[str, Any] = {"label_selector": selector, "_preload_content": False}
            if field_selector is not None:
                options["field_selector"] = field_selector
            if namespace is None:
                response = self._core.list_pod_for_all_namespaces(**options)
            else:
                response = self._core.list_namespaced_pod(namespace, **options)
            items: list[dict[str, Any]] = json.loads(response.data)["items"]
            return items

        targets: Sequence[str | None] = [None] if namespaces is None else list(namespaces)
        listings = await asyncio.gather(*(asyncio.to_thread(list_in, ns) for ns in targets))
        return [pod for listing in listings for pod in listing]

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        def get() -> dict[str, Any] | None:
            try:
                response = self._core.read_namespaced_pod(name, namespace, _preload_content=False)
            except ApiException as error:
                if error.status == 404:
                    return None
                raise
            pod: dict[str, Any] = json.loads(response.data)
            return pod

        return await asyncio.to_thread(get)

    async def get_many(self, pods: Sequence[tuple[str, str]]) -> Sequence[dict[str, Any] | None]:
        """GET each ``(namespace, name)``, a few at a time; None for a Pod that is gone."""
        limit = asyncio.Semaphore(_GET_CONCURRENCY)

        async def get(namespace: str, name: str) -> dict[str, Any] | None:
            async with limit:
                return await self.get(namespace, name)

        return await asyncio.gather(*(get(namespace, name) for namespace, name in pods))

    async def delete(self, namespace: str, name: str) -> None:
        def delete() -> None:
            try:
                self._core.delete_namespaced_pod(
                    name,
                    namespace,
                    grace_period_seconds=self._delete_grace_seconds,
                    _preload_content=False,
                )
            except ApiException as error:
                if error.status != 404:
                    raise

        await asyncio.to_thread(delete)


def labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    found: Mapping[str, str] = pod.get("metadata", {}).get("labels") or {}
    return found


def run_of(pod: Mapping[str, Any]) -> int:
    try:
        return int(labels(pod).get(manifests.LABEL_RUN_ID, "-1"))
    except ValueError:
        return -1


def attempt_of(pod: Mapping[str, Any]) -> int:
    try:
        return int(labels(pod).get(manifests.LABEL_ATTEMPT, "-1"))
    except ValueError:
        return -1


def ended(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def api_message(error: ApiException) -> str:
    try:
        body = json.loads(error.body or "{}")
    except (TypeError, ValueError):
        return str(error.reason or error.status)
    return str(body.get("message") or error.reason or error.status)
