"""The ScheduledJobs and JobRuns the operator watches, kept from kopf's watch events.

The status mirror used to LIST every ScheduledJob and JobRun on every pass: at 10,000
ScheduledJobs that is two responses of tens of MiB decoded every few seconds, the largest part
of the operator's memory and CPU (docs/adr/0027-operator-memory.md). kopf already watches both
kinds, so its events (``handlers``) feed this cache and a pass reads it instead. A pass LISTs
only when the cache is not trusted yet or is older than ``resync_seconds`` (a missed event
heals there, as a level-triggered loop should).

Each body is kept slim: without ``metadata.managedFields`` and the two annotations that hold
whole copies of the object (kubectl's last-applied configuration, and the diff base that
earlier versions of the operator had kopf write). Everything the mirror, the status and the
Events read is kept. Keys and short strings are interned: the same few hundred strings recur
in every object.

Guarantees:

* An object is never older in the cache than the newest of its events or LISTs seen: a body
  with a smaller ``resourceVersion`` than the one held is dropped (the apiserver's versions
  are etcd revisions; a LIST that began before an event can answer after it).
* A deleted object leaves the cache with its DELETED event, or with the next LIST; a LIST
  that began before a deletion already reported does not bring it back.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ObjectCache", "slim"]

#: Annotations that copy the whole object: kept in etcd, never read by the operator.
_HEAVY_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "sundial.dev/last-handled-configuration",
)


def slim(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` without managedFields and the annotations that copy the object, its keys and
    short strings interned."""
    kept = dict(body)
    metadata = dict(kept.get("metadata") or {})
    metadata.pop("managedFields", None)
    annotations = metadata.get("annotations")
    if annotations and any(key in annotations for key in _HEAVY_ANNOTATIONS):
        metadata["annotations"] = {
            key: value for key, value in annotations.items() if key not in _HEAVY_ANNOTATIONS
        }
    kept["metadata"] = metadata
    result: dict[str, Any] = _interned(kept)
    return result


def _interned(value: Any) -> Any:
    """``value`` rebuilt with every key and every string of up to 64 characters interned.

    Each decoded body has strings of its own: 10,000 ScheduledJobs hold 10,000 copies of
    "lastTransitionTime", "AsExpected", "False" ... (7.6 KiB per body; 3.1 KiB interned)."""
    if isinstance(value, dict):
        return {sys.intern(key): _interned(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_interned(item) for item in value]
    if isinstance(value, str) and len(value) <= 64:
        return sys.intern(value)
    return value


def _version(body: Mapping[str, Any]) -> int:
    try:
        return int(body["metadata"].get("resourceVersion") or 0)
    except ValueError:  # not an etcd revision: no ordering, take the newest seen
        return 0


def _same_version(held: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """The same object at the same resourceVersion (compared as text: any version string)."""
    version = held["metadata"].get("resourceVersion")
    return (
        version is not None
        and version == body["metadata"].get("resourceVersion")
        and held["metadata"].get("uid") == body["metadata"].get("uid")
    )


def _key(body: Mapping[str, Any]) -> tuple[str, str]:
    metadata = body["metadata"]
    return str(metadata.get("namespace") or ""), str(metadata["name"])


class ObjectCache:
    """The objects of one kind, by (namespace, name)."""

    def __init__(self, resync_seconds: float = 300.0) -> None:
        self._objects: dict[tuple[str, str], dict[str, Any]] = {}
        self._resync_seconds = resync_seconds
        self._listed_at: float | None = None
        # key -> the version of its DELETED event, until a LIST answered after it: a LIST that
        # began before the deletion must not bring the object back.
        self._deleted: dict[tuple[str, str], int] = {}
        #: Counts every change to what is held (an object added, replaced by a newer version,
        #: or gone): equal counts mean the same objects, so a pass can tell nothing changed.
        self.changes = 0

    def observe(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """A watch event (``None``: kopf's initial listing) for ``body``."""
        key = _key(body)
        if event_type == "DELETED":
            held = self._objects.get(key)
            if held is not None and held["metadata"].get("uid") == body["metadata"].get("uid"):
                del self._objects[key]
                self.changes += 1
            self._deleted[key] = _version(body)
            return
        self._deleted.pop(key, None)
        self._put(key, body)

    def _put(self, key: tuple[str, str], body: Mapping[str, Any]) -> None:
        held = self._objects.get(key)
        if held is not None and _version(held) > _version(body):
            return  # older than what is held, be it the same object or one made since
        if held is not None and _same_version(held, body):
            return  # the same version again (a relist, a watch restarted)
        self._objects[key] = slim(body)
        self.changes += 1

    def needs_list(self) -> bool:
        """True before the first LIST and once ``resync_seconds`` passed since the last."""
        return self._listed_at is None or time.monotonic() - self._listed_at >= self._resync_seconds

    def replace(self, listed: Iterable[Mapping[str, Any]], version: str | None) -> None:
        """The result of a LIST answered at ``version`` (its ``metadata.resourceVersion``; the
        oldest one when several namespaces were listed): the objects it lacks are gone,
        unless an event brought them in after that version."""
        started = time.monotonic()
        seen: set[tuple[str, str]] = set()
        for body in listed:
            key = _key(body)
            deleted = self._deleted.get(key)
            if deleted is not None and _version(body) <= deleted:
                continue  # listed before its deletion, which the watch already reported
            seen.add(key)
            self._put(key, body)
        answered = _version({"metadata": {"resourceVersion": version}})
        self._deleted = {key: at for key, at in self._deleted.items() if at > answered}
        for key in list(self._objects):
            if key not in seen and _version(self._objects[key]) <= answered:
                del self._objects[key]
                self.changes += 1
        self._listed_at = started

    def bodies(self) -> list[Mapping[str, Any]]:
        return list(self._objects.values())

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The newest body held of the object ``namespace/name``."""
        return self._objects.get((namespace, name))

    def __len__(self) -> int:
        return len(self._objects)
