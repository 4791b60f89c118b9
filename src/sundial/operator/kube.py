"""The operator's own calls to the Kubernetes API, outside kopf's handlers.

kopf watches and dispatches; the status mirror, the event recorder and the JobRun submitter
also read and write objects on their own schedule. They go through this one class, which runs
the official (synchronous) client in worker threads so the event loop never blocks. Status is
written only through the ``/status`` subresource, with JSON merge patches.

The threads are the class's own, ``API_THREADS`` of them, more than all the operator's bounded
writers keep in flight together, so a call never queues for a thread: asyncio's default
executor has ``min(32, cores + 4)``, 6 on 2 cores, and a JobRun's submission waited there
behind the mirror's writes (docs/adr/0040-prompt-job-run-submission.md).
"""

from __future__ import annotations

import asyncio
import builtins
import datetime
import functools
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config
from kubernetes.client import exceptions

from sundial.api import common

__all__ = [
    "JOB_RUNS",
    "SCHEDULED_JOBS",
    "KubeApi",
    "Reviewer",
    "is_conflict",
    "is_not_found",
    "plain",
]

SCHEDULED_JOBS = "scheduledjobs"
JOB_RUNS = "jobruns"

#: Objects per page of a LIST (``list_versioned``).
LIST_PAGE = 500

#: Worker threads (and kept HTTP connections) for API calls: above the mirror's
#: write_concurrency (16), the handlers' two lanes (8 + 4) and the Event recorder (1) together.
API_THREADS = 32

#: Ask the apiserver for metadata only (labels, owners): a tenth of a Pod's JSON.
_METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def is_not_found(error: BaseException) -> bool:
    return isinstance(error, exceptions.ApiException) and error.status == 404


def is_conflict(error: BaseException) -> bool:
    return isinstance(error, exceptions.ApiException) and error.status == 409


def plain(value: Any) -> Any:
    """``value`` with every mapping a dict and every sequence a list (kopf hands out views)."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


@dataclass(frozen=True)
class Reviewer:
    """A caller as a TokenReview authenticated it."""

    user: str
    uid: str
    groups: tuple[str, ...]
    extra: Mapping[str, tuple[str, ...]]


class KubeApi:
    """Typed-enough access to ScheduledJobs, JobRuns and Events for one kubeconfig."""

    def __init__(self, api_client: client.ApiClient | None = None) -> None:
        if api_client is None:
            try:
                config.load_incluster_config()  # type: ignore[no-untyped-call]
                configuration = client.Configuration.get_default_copy()
            except config.ConfigException:
                configuration = client.Configuration()
                config.load_kube_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            # One connection per thread: a call never waits for, nor discards, a connection.
            configuration.connection_pool_maxsize = API_THREADS
            api_client = client.ApiClient(configuration)
        self.api_client = api_client
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self._threads = futures.ThreadPoolExecutor(API_THREADS, thread_name_prefix="kube-api")
        #: API requests sent so far (the mirror logs how many each pass sent).
        self.requests = 0

    async def _call(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a blocking client call in one of this API's threads."""
        self.requests += 1
        call = functools.partial(function, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._threads, call)

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
        self.api_client.close()  # type: ignore[no-untyped-call]

    async def list(self, plural: str, namespaces: Sequence[str] | None, **kwargs: Any) -> list[Any]:
        """Objects of ``plural`` in ``namespaces`` (``None``: every namespace), as dicts."""
        items, _ = await self.list_versioned(plural, namespaces, **kwargs)
        return items

    async def list_versioned(
        self,
        plural: str,
        namespaces: Sequence[str] | None,
        *,
        each: Callable[[dict[str, Any]], Any] | None = None,
        **kwargs: Any,
    ) -> tuple[builtins.list[Any], str | None]:
        """``list``, with the resourceVersion the apiserver answered at (the smallest one when
        several namespaces are listed).

        Read in pages of ``LIST_PAGE`` objects (one consistent snapshot: the apiserver serves
        every page at the first one's version), each item passed through ``each`` as its page
        arrives: a LIST of 10,000 ScheduledJobs decoded whole was about 80 MiB of objects at
        once, a page of them is a twentieth of that (ADR 0038)."""
        keep: Callable[[dict[str, Any]], Any] = each or (lambda item: item)
        targets: builtins.list[str | None] = [None] if namespaces is None else list(namespaces)
        items: list[Any] = []
        versions: list[str] = []
        for namespace in targets:
            token: str | None = None
            version: str | None = None
            while True:
                paging: dict[str, Any] = {"limit": LIST_PAGE, **kwargs}
                if token:
                    paging["_continue"] = token
                if namespace is None:
                    listing = await self._call(
                        self.custom.list_cluster_custom_object,
                        common.GROUP,
                        common.VERSION,
                        plural,
                        **paging,
                    )
                else:
                    listing = await self._call(
                        self.custom.list_namespaced_custom_object,
                        common.GROUP,
                        common.VERSION,
                        namespace,
                        plural,
                        **paging,
                    )
                items.extend(keep(item) for item in listing["items"])
                page_metadata = listing.get("metadata") or {}
                version = version or page_metadata.get("resourceVersion")
                token = page_metadata.get("continue")
                del listing
                if not token:
                    break
            versions.append(version or "")
        if namespaces is None:
            return items, versions[0] or None
        return items, min(versions, key=lambda version: (len(version), version), default=None)

    async def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            found = await self._call(
                self.custom.get_namespaced_custom_object,
                common.GROUP,
                common.VERSION,
                namespace,
                plural,
                name,
            )
        except exceptions.ApiException as error:
            if error.status == 404:
                return None
            raise
        return dict(found)

    async def create(self, plural: str, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        created = await self._call(
            self.custom.create_namespaced_custom_object,
            common.GROUP,
            common.VERSION,
            namespace,
            plural,
            dict(body),
        )
        return dict(created)

    async def patch(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Merge-patch the object (not its status); ``None`` if it is gone."""
        try:
            patched = await self._call(
                self.custom.patch_namespaced_custom_object,
                common.GROUP,
                common.VERSION,
                namespace,
                plural,
                name,
                dict(patch),
            )
        except exceptions.ApiException as error:
            if error.status == 404:
                return None
            raise
        return dict(patched)

    async def patch_status(
        self, plural: str, namespace: str, name: str, status: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Merge-patch ``status`` through the subresource: the object as patched, or ``None``
        if it is gone."""
        try:
            patched = await self._call(
                self.custom.patch_namespaced_custom_object_status,
                common.GROUP,
                common.VERSION,
                namespace,
                plural,
                name,
                {"status": dict(status)},
            )
        except exceptions.ApiException as error:
            if error.status == 404:
                return None
            raise
        return dict(patched)

    async def delete(self, plural: str, namespace: str, name: str) -> bool:
        try:
            await self._call(
                self.custom.delete_namespaced_custom_object,
                common.GROUP,
                common.VERSION,
                namespace,
                plural,
                name,
            )
        except exceptions.ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    async def list_pod_metadata(
        self, namespaces: Sequence[str] | None, *, label_selector: str, field_selector: str
    ) -> Sequence[dict[str, Any]]:
        """The metadata (``PartialObjectMetadata``) of the Pods that match both selectors."""
        core: Any = self.core  # raw responses (_preload_content=False) are not in the stubs

        def list_in(namespace: str | None) -> list[dict[str, Any]]:
            options: dict[str, Any] = {
                "label_selector": label_selector,
                "field_selector": field_selector,
                "_preload_content": False,
                "_headers": {"Accept": _METADATA_ONLY},
            }
            if namespace is None:
                response = core.list_pod_for_all_namespaces(**options)
            else:
                response = core.list_namespaced_pod(namespace, **options)
            # An empty PartialObjectMetadataList has "items": null, not [].
            items: list[dict[str, Any]] = json.loads(response.data).get("items") or []
            return items

        targets: Sequence[str | None] = [None] if namespaces is None else list(namespaces)
        listings = await asyncio.gather(*(self._call(list_in, namespace) for namespace in targets))
        return [item for listing in listings for item in listing]

    async def delete_pod(self, namespace: str, name: str, uid: str) -> bool:
        """Delete the Pod if it is still the one with ``uid``; False if it is gone or replaced."""
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
        try:
            await self._call(self.core.delete_namespaced_pod, name, namespace, body=options)
        except exceptions.ApiException as error:
            if error.status in (404, 409):
                return False
            raise
        return True

    async def post_event(
        self,
        involved: Mapping[str, Any],
        *,
        event_type: str,
        reason: str,
        message: str,
        now: datetime.datetime,
        name: str | None = None,
        count: int = 1,
        first: datetime.datetime | None = None,
    ) -> None:
        """Record a core/v1 Event on the object ``involved`` (a body with kind and metadata);
        ``name``: the Event's own name (a repeated post is a 409), else a random one. ``count``
        and ``first``: the same Event seen that many times since ``first`` (as
        ``kubectl describe`` shows it: ``x12 over 3m``)."""
        metadata = involved["metadata"]
        namespace = metadata.get("namespace") or "default"
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(
                name=name or f"{metadata['name']}.{uuid.uuid4().hex[:16]}", namespace=namespace
            ),
            involved_object=client.V1ObjectReference(
                api_version=involved.get("apiVersion", common.API_VERSION),
                kind=involved["kind"],
                name=metadata["name"],
                namespace=namespace,
                uid=metadata.get("uid"),
            ),
            type=event_type,
            reason=reason,
            message=message[:1024],
            first_timestamp=first or now,
            last_timestamp=now,
            count=count,
            source=client.V1EventSource(component="sundial-operator"),
            reporting_component="sundial.dev/operator",
            reporting_instance="sundial-operator",
        )
        await self._call(self.core.create_namespaced_event, namespace, event)

    async def config_map_data(self, namespace: str, name: str) -> dict[str, str] | None:
        """The ConfigMap's data; ``None`` if there is no such ConfigMap."""
        try:
            found = await self._call(self.core.read_namespaced_config_map, name, namespace)
        except exceptions.ApiException as error:
            if error.status == 404:
                return None
            raise
        return dict(found.data or {})

    async def may(
        self,
        user: str,
        groups: Sequence[str],
        extra: Mapping[str, Sequence[str]],
        *,
        verb: str,
        group: str,
        resource: str,
        namespace: str,
    ) -> tuple[bool, str]:
        """Whether ``user`` (with ``groups`` and ``extra``) may ``verb`` ``resource`` of
        ``group`` in ``namespace``, by a SubjectAccessReview; and the authorizer's reason."""
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user,
                "groups": list(groups),
                "extra": {key: list(values) for key, values in extra.items()},
                "resourceAttributes": {
                    "verb": verb,
                    "group": group,
                    "resource": resource,
                    "namespace": namespace,
                },
            },
        }
        answer = await self._call(
            client.AuthorizationV1Api(self.api_client).create_subject_access_review, review
        )
        status = answer.status
        return bool(status and status.allowed), str((status and status.reason) or "")

    async def review_token(self, token: str) -> Reviewer | None:
        """Who the API server says ``token`` belongs to (a TokenReview); ``None`` when it does
        not authenticate it."""
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        answer = await self._call(
            client.AuthenticationV1Api(self.api_client).create_token_review, review
        )
        status = answer.status
        if status is None or not status.authenticated or status.user is None:
            return None
        user = status.user
        return Reviewer(
            user=str(user.username or ""),
            uid=str(user.uid or ""),
            groups=tuple(user.groups or ()),
            extra={key: tuple(values) for key, values in (user.extra or {}).items()},
        )

    async def may_get_path(self, reviewer: Reviewer, path: str) -> tuple[bool, str]:
        """Whether ``reviewer`` may ``get`` the non-resource URL ``path`` (``/metrics``), by a
        SubjectAccessReview; and the authorizer's reason."""
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": reviewer.user,
                "uid": reviewer.uid,
                "groups": list(reviewer.groups),
                "extra": {key: list(values) for key, values in reviewer.extra.items()},
                "nonResourceAttributes": {"path": path, "verb": "get"},
            },
        }
        answer = await self._call(
            client.AuthorizationV1Api(self.api_client).create_subject_access_review, review
        )
        status = answer.status
        return bool(status and status.allowed), str((status and status.reason) or "")
