"""An in-process stand-in for the apiserver's object store, for feeding reconcile bodies the
real apiserver would refuse.

The hostile-manifest tests call the operator's reconcile entry points with bodies that never
passed admission (a NUL in an image, ``priority: "5"``, args 2,000 levels deep): a real
kube-apiserver would refuse to store them, so its API could not be the store these bodies
live in. ``RecordingApi`` keeps objects in a dict, applies merge patches to ``status`` the
way the ``/status`` subresource does, and records Events; PostgreSQL stays real. The cluster
tests (tests/cluster/operator) cover the same code against a real apiserver.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sundial.operator import kube


@dataclass(frozen=True)
class Event:
    kind: str
    name: str
    event_type: str
    reason: str
    message: str


def merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """RFC 7386 merge patch, in place."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class RecordingApi(kube.KubeApi):
    def __init__(self) -> None:  # no kubeconfig: nothing here talks to a cluster
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.events: list[Event] = []

    def put(self, plural: str, body: Mapping[str, Any]) -> dict[str, Any]:
        metadata = body["metadata"]
        stored = copy.deepcopy(dict(body))
        self.objects[(plural, metadata["namespace"], metadata["name"])] = stored
        return stored

    def body(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        return self.objects[(plural, namespace, name)]

    def close(self) -> None:
        pass

    async def list(self, plural: str, namespaces: Sequence[str] | None, **_: Any) -> list[Any]:
        return [
            copy.deepcopy(body)
            for (kind, namespace, _name), body in self.objects.items()
            if kind == plural and (namespaces is None or namespace in namespaces)
        ]

    async def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.objects.get((plural, namespace, name))
        return None if found is None else copy.deepcopy(found)

    async def create(self, plural: str, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.put(plural, {**body, "metadata": {**body["metadata"], "namespace": namespace}})

    async def patch(
        self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        found = self.objects.get((plural, namespace, name))
        if found is None:
            return None
        merge(found, {key: value for key, value in patch.items() if key != "status"})
        return copy.deepcopy(found)

    async def patch_status(
        self, plural: str, namespace: str, name: str, status: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """As the ``/status`` subresource: the object as patched, or ``None`` if it is gone."""
        found = self.objects.get((plural, namespace, name))
        if found is None:
            return None
        merge(found, {"status": dict(status)})
        return copy.deepcopy(found)

    async def delete(self, plural: str, namespace: str, name: str) -> bool:
        return self.objects.pop((plural, namespace, name), None) is not None

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
        metadata = involved["metadata"]
        self.events.append(
            Event(str(involved.get("kind")), str(metadata.get("name")), event_type, reason, message)
        )
