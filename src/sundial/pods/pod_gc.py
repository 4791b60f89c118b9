"""Finished Pods go with their run's JobRun window (docs/adr/0011-finished-pod-gc.md).

Pod-mode Pods are owned by their ScheduledJob (``pod_hooks``), so without this the Pods of
finished runs would pile up until the ScheduledJob is deleted. A status-mirror pass sweeps
them (at most every ``OperatorSettings.pod_gc_interval``, ``--pod-gc-seconds``),
level-triggered like the rest of the mirror:

1. Before it reads the window from PostgreSQL, the pass lists the *ended* Pods (phase
   Succeeded or Failed, filtered by the apiserver) of this installation
   (``sundial.dev/instance``), metadata only.
2. A listed Pod is *collectable* when it is owned by a ScheduledJob the pass listed, its run is
   neither in that ScheduledJob's window (active runs + history limits) nor followed by a user
   JobRun, and PostgreSQL says the run is finished (or no longer knows it).

Guarantees:

* A Pod that is Pending or Running is never listed, so never deleted here: the Pods of live
  attempts are the launcher's alone.
* The Pods of a run in the window stay as long as its JobRun does. The Pods are listed *before*
  the window is read, and a finished run only ever leaves a window (newer runs push it out), so
  a run that finished between the two reads is in the window that is compared - never mistaken
  for one that left it.
* A finished run that was never mirrored (many runs finished between two passes) is outside the
  window, so its Pods go on the next sweep.
* Nothing is remembered: a restarted operator, or a delete that failed, is caught up by the
  next sweep. Deletes carry the Pod's uid as a precondition.
* Pods with no ScheduledJob owner are left alone: those of a user JobRun's run are owned by
  the JobRun and go with it through Kubernetes' garbage collector (``pod_hooks``); those of
  ``sundial pod-launcher`` without owner references stay until removed.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sundial.api import scheduled_job
from sundial.pods import manifests
from sundial.scheduling import run_state

__all__ = [
    "EndedPod",
    "PodMetadataApi",
    "collectable",
    "delete",
    "ended_pods",
    "parse",
    "unkept",
]

log = logging.getLogger("sundial.pods.pod_gc")


class PodMetadataApi(Protocol):
    """The two Pod calls a sweep makes (``sundial.operator.kube.KubeApi`` has them)."""

    async def list_pod_metadata(
        self, namespaces: Sequence[str] | None, *, label_selector: str, field_selector: str
    ) -> Sequence[dict[str, Any]]: ...

    async def delete_pod(self, namespace: str, name: str, uid: str) -> bool: ...


#: Pod phases in which nothing runs any more; everything else is listed by the launcher only.
_ENDED = "status.phase!=Pending,status.phase!=Running,status.phase!=Unknown"


@dataclass(frozen=True)
class EndedPod:
    namespace: str
    name: str
    uid: str
    run_id: int
    #: The uid of the ScheduledJob that owns the Pod, if one does.
    owner: uuid.UUID | None


def parse(metadata_item: Mapping[str, Any]) -> EndedPod | None:
    """The Pod of a metadata listing, or None when it carries no usable run id."""
    metadata = metadata_item.get("metadata") or {}
    labels = metadata.get("labels") or {}
    try:
        run_id = int(labels[manifests.LABEL_RUN_ID])
    except (KeyError, ValueError):
        return None
    owner = None
    for reference in metadata.get("ownerReferences") or ():
        if reference.get("kind") == scheduled_job.KIND:
            try:
                owner = uuid.UUID(str(reference.get("uid")))
            except ValueError:
                continue
            break
    return EndedPod(
        namespace=str(metadata.get("namespace")),
        name=str(metadata.get("name")),
        uid=str(metadata.get("uid")),
        run_id=run_id,
        owner=owner,
    )


async def ended_pods(
    api: PodMetadataApi, namespaces: Sequence[str] | None, instance: str
) -> list[EndedPod]:
    """This installation's Pods whose containers have all ended (step 1 of the sweep)."""
    items = await api.list_pod_metadata(
        namespaces,
        label_selector=f"{manifests.LABEL_INSTANCE}={instance}",
        field_selector=_ENDED,
    )
    return [pod for pod in (parse(item) for item in items) if pod is not None]


def unkept(
    pods: Iterable[EndedPod],
    windows: Mapping[uuid.UUID, Collection[int]],
    followed: Collection[int],
) -> list[EndedPod]:
    """The Pods owned by a ScheduledJob of ``windows`` (its uid -> the run ids in its window)
    whose run is neither in that window nor in ``followed`` (the runs of user JobRuns)."""
    return [
        pod
        for pod in pods
        if pod.owner is not None
        and pod.owner in windows
        and pod.run_id not in windows[pod.owner]
        and pod.run_id not in followed
    ]


def collectable(pods: Iterable[EndedPod], run_states: Mapping[int, str]) -> list[EndedPod]:
    """The Pods whose run is finished, or unknown to PostgreSQL (``run_states``: id -> state):
    an ended Pod of an attempt whose run will be retried stays for the launcher to see."""
    return [
        pod
        for pod in pods
        if pod.run_id not in run_states or run_states[pod.run_id] in run_state.FINISHED
    ]


async def delete(api: PodMetadataApi, pods: Sequence[EndedPod], writes: asyncio.Semaphore) -> int:
    """Delete ``pods`` with bounded concurrency; how many were deleted. A failed delete is
    logged and left to the next pass."""

    async def one(pod: EndedPod) -> bool:
        async with writes:
            try:
                return await api.delete_pod(pod.namespace, pod.name, pod.uid)
            except Exception:
                log.exception("could not delete finished Pod %s/%s", pod.namespace, pod.name)
                return False

    deleted = await asyncio.gather(*(one(pod) for pod in pods))
    return sum(deleted)
