"""The Pod API as the pod launcher calls it (list, watch, read, create, release, delete).

The installed synchronous ``kubernetes`` client, run in ``asyncio.to_thread``; responses are
read as raw JSON (``_preload_content=False``): the launcher needs dicts, and skipping the model
deserialisation keeps a LIST of hundreds of Pods cheap. The launcher relists each step
(docs/adr/0009-pod-launcher.md, decision 1) only the Pods whose outcome is still to be recorded
(``TRACKED``), and GETs by name the few it holds that are missing from that list. ``watch``
only wakes the launcher early when one of them changes: the relist stays the source of truth,
so a watch that breaks, lags or misses an event costs latency, never an outcome
(docs/adr/0023-pod-outcome-finalizer.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch import watch as watch_stream

from sundial.pods import manifests

__all__ = [
    "NOT_ENDED",
    "PodApi",
    "PodWatch",
    "api_message",
    "attempt_of",
    "ended",
    "labels",
    "run_of",
    "tracked",
    "tracked_selector",
    "uid_of",
]

log = logging.getLogger("sundial.pods.pod_api")

#: Field selector for Pods that are Pending, Running or Unknown. The apiserver filters on it (in
#: its watch cache), so a LIST costs what the live Pods cost, not the ended Pods kept around for
#: the JobRun window (docs/adr/0011-finished-pod-gc.md).
NOT_ENDED = "status.phase!=Succeeded,status.phase!=Failed"

#: GETs in flight at once in ``get_many``: enough to confirm a burst of ended attempts in a few
#: round trips, few enough not to hog the client's connection pool and the default executor.
_GET_CONCURRENCY = 8


def tracked_selector(instance: str) -> str:
    """The label selector of this installation's Pods whose outcome is not recorded yet."""
    return f"{manifests.LABEL_INSTANCE}={instance},{manifests.LABEL_TRACKED}=true"


class PodApi:
    """List, get, create and delete Pods; a delete of a Pod already gone is not an error."""

    def __init__(self, api_client: client.ApiClient, *, delete_grace_seconds: int) -> None:
        # Typed Any: raw responses (_preload_content=False) are not in the client's stubs.
        self._core: Any = client.CoreV1Api(api_client)
        self._delete_grace_seconds = delete_grace_seconds

    async def create(self, namespace: str, manifest: Mapping[str, Any]) -> str | None:
        """Create the Pod and return its UID (None if the answer had none); an
        ``ApiException`` (409, 422 …) is the caller's to read."""
        response = await asyncio.to_thread(
            self._core.create_namespaced_pod, namespace, dict(manifest), _preload_content=False
        )
        return uid_of(json.loads(response.data) if response.data else {})

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

    async def namespace(self, name: str) -> dict[str, Any] | None:
        """The Namespace object ``name`` (its labels and annotations), or None if it is gone."""

        def read() -> dict[str, Any] | None:
            try:
                response = self._core.read_namespace(name, _preload_content=False)
            except ApiException as error:
                if error.status == 404:
                    return None
                raise
            found: dict[str, Any] = json.loads(response.data)
            return found

        return await asyncio.to_thread(read)

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

    async def release(self, namespace: str, name: str) -> bool:
        """Remove the outcome finalizer and the tracked label (one strategic-merge PATCH); a
        Pod that is gone already is not an error. True if the Pod was there."""
        patch = {
            "metadata": {
                "$deleteFromPrimitiveList/finalizers": [manifests.OUTCOME_FINALIZER],
                "labels": {manifests.LABEL_TRACKED: None},
            }
        }

        def release() -> bool:
            try:
                self._core.patch_namespaced_pod(
                    name,
                    namespace,
                    patch,
                    _content_type="application/strategic-merge-patch+json",
                    _preload_content=False,
                )
            except ApiException as error:
                if error.status == 404:
                    return False
                raise
            return True

        return await asyncio.to_thread(release)

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


class PodWatch:
    """Sets ``changed`` whenever a Pod matching ``selector`` changes, until ``close``.

    One thread per namespace (one for all when ``namespaces`` is None) runs the client's watch
    with bookmarks, resuming from the last resourceVersion it saw and relisting after a 410
    (Gone: the version is older than the apiserver keeps). Each watch request ends after
    ``timeout_seconds`` on the server, so ``close`` takes effect within that. Errors are logged
    and retried after a pause: the launcher's relist does not depend on this.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        namespaces: Sequence[str] | None,
        selector: str,
        changed: asyncio.Event,
        *,
        timeout_seconds: int = 30,
    ) -> None:
        self._core: Any = client.CoreV1Api(api_client)
        self._selector = selector
        self._changed = changed
        self._timeout_seconds = timeout_seconds
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._responses: set[Any] = set()
        self._loop = asyncio.get_running_loop()
        targets: Sequence[str | None] = [None] if namespaces is None else list(namespaces)
        self._threads = [
            threading.Thread(target=self._follow, args=(ns,), name="pod-watch", daemon=True)
            for ns in targets
        ]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        """Stop. The sockets of the open watches are shut down, which ends a read blocked in
        another thread at once (closing the response instead would wait for that thread's TLS
        lock, that is until the server's timeout)."""
        self._closed.set()
        with self._lock:
            responses = list(self._responses)
        for response in responses:
            sock = getattr(getattr(response, "connection", None), "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=2)

    def _notify(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed while a thread was reading
            self._loop.call_soon_threadsafe(self._changed.set)

    def _follow(self, namespace: str | None) -> None:
        version: str | None = None
        while not self._closed.is_set():
            try:
                version = self._follow_once(namespace, version)
            except ApiException as error:
                if error.status == 410:
                    version = None  # expired: relist
                    continue
                log.warning("pod watch failed (%s); retrying", error.status)
                self._closed.wait(1.0)
            except Exception as error:  # a broken connection, a proxy that cut us off
                if self._closed.is_set():
                    return  # our own close() cut the response
                log.warning("pod watch failed (%s); retrying", error)
                self._closed.wait(1.0)

    def _follow_once(self, namespace: str | None, version: str | None) -> str | None:
        options: dict[str, Any] = {"label_selector": self._selector, "_preload_content": False}
        if version is None:
            listing = self._list(namespace, options)
            version = json.loads(listing.data)["metadata"]["resourceVersion"]
            self._notify()  # whatever changed before the watch started is seen by a relist
        options.update(
            watch=True,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=self._timeout_seconds,
        )
        response = self._list(namespace, options)
        with self._lock:
            self._responses.add(response)
        if self._closed.is_set():  # closed while the request was being made
            response.release_conn()
            return version
        try:
            for line in watch_stream.iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if self._closed.is_set():
                    break
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        return None
                    raise RuntimeError(obj.get("message") or "watch error")
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if kind != "BOOKMARK":
                    self._notify()
        finally:
            with self._lock:
                self._responses.discard(response)
            response.release_conn()
        return version

    def _list(self, namespace: str | None, options: Mapping[str, Any]) -> Any:
        if namespace is None:
            return self._core.list_pod_for_all_namespaces(**options)
        return self._core.list_namespaced_pod(namespace, **options)


def tracked(pod: Mapping[str, Any]) -> bool:
    """Whether the Pod still carries the outcome finalizer."""
    finalizers = (pod.get("metadata") or {}).get("finalizers") or ()
    return manifests.OUTCOME_FINALIZER in finalizers


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


def uid_of(pod: Mapping[str, Any]) -> str | None:
    uid = (pod.get("metadata") or {}).get("uid")
    return None if uid is None else str(uid)


def ended(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def api_message(error: ApiException) -> str:
    try:
        body = json.loads(error.body or "{}")
    except (TypeError, ValueError):
        return str(error.reason or error.status)
    return str(body.get("message") or error.reason or error.status)
