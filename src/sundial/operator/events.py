"""Kubernetes Events on ScheduledJobs and JobRuns, posted off the hot path.

Reconcilers and the trigger call ``record`` (never blocks, never raises); a few tasks post the
queued Events side by side. Events are best effort, as in Kubernetes itself: a full queue or a
failed post is logged and dropped, and never stops a reconcile. As client-go's recorder does,
repeats are aggregated: an Event recorded again (same object, type, reason and message) while
the first still waits to be posted adds to its ``count`` instead of taking another place, so a
storm of one fact (a fault that fails a thousand fires alike) leaves room for the others.
Dropped Events are counted (``dropped``) and logged once per ``DROP_LOG_SECONDS``, not each.
Reasons are ``api.conditions.EventReason`` members (or a scheduling error's ``reason``), the
words users grep for (docs/design.md).

An Event recorded with a ``key`` (e.g. run and attempt) gets a name derived from it, so posting
it twice - two reporters of one fact, or a restarted operator reporting again - is a 409 from
the apiserver and leaves one Event: once per key for as long as Kubernetes keeps the Event.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sundial.api import conditions
from sundial.operator import kube
from sundial.scheduling import clock as clocks

__all__ = [
    "NORMAL",
    "WARNING",
    "EventRecorder",
    "dead_lettered_key",
    "dead_lettered_message",
    "event_name",
]

NORMAL = "Normal"
WARNING = "Warning"

log = logging.getLogger("sundial.operator.events")

_NOT_NAME = re.compile(r"[^a-z0-9.-]+")


#: Seconds between two log lines about dropped Events.
DROP_LOG_SECONDS = 10.0


@dataclass
class _Event:
    involved: Mapping[str, Any]
    event_type: str
    reason: str
    message: str
    name: str | None = None
    count: int = 1
    first: datetime.datetime | None = field(default=None)

    @property
    def identity(self) -> tuple[object, ...]:
        """What makes two recorded Events the same fact."""
        metadata = self.involved["metadata"]
        return (
            metadata.get("uid") or (metadata.get("namespace"), metadata.get("name")),
            self.involved.get("kind"),
            self.event_type,
            self.reason,
            self.message,
            self.name,
        )


class EventRecorder:
    def __init__(
        self,
        api: kube.KubeApi,
        clock: clocks.Clock,
        *,
        capacity: int = 10_000,
        posters: int = 8,
    ) -> None:
        self._api = api
        self._clock = clock
        self._queue: asyncio.Queue[_Event] = asyncio.Queue(maxsize=capacity)
        self._waiting: dict[tuple[object, ...], _Event] = {}
        self._posters = posters
        #: Events dropped because the queue was full, since the start.
        self.dropped = 0
        self._dropped_logged = 0
        self._drop_logged_at = float("-inf")

    def record(
        self,
        involved: Mapping[str, Any],
        event_type: str,
        reason: str,
        message: str,
        *,
        key: str | None = None,
    ) -> None:
        """Queue an Event on ``involved`` (a body with apiVersion, kind and metadata); with a
        ``key``, at most one Event per (object, reason, key) is ever created."""
        reference = {
            "apiVersion": involved.get("apiVersion"),
            "kind": involved.get("kind"),
            "metadata": {
                key: involved["metadata"].get(key) for key in ("name", "namespace", "uid")
            },
        }
        name = None if key is None else event_name(involved["metadata"]["name"], reason, key)
        event = _Event(reference, event_type, reason, message, name, first=self._clock.now())
        waiting = self._waiting.get(event.identity)
        if waiting is not None:
            if name is None:  # a keyed Event is one fact however often it is reported
                waiting.count += 1
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self._drop(reason)
            return
        self._waiting[event.identity] = event

    @property
    def queued(self) -> int:
        """Events waiting to be posted."""
        return self._queue.qsize()

    def _drop(self, reason: str) -> None:
        self.dropped += 1
        now = time.monotonic()
        if now - self._drop_logged_at < DROP_LOG_SECONDS:
            return
        log.warning(
            "event queue full; events dropped",
            extra={"reason": reason, "dropped": self.dropped - self._dropped_logged},
        )
        self._drop_logged_at = now
        self._dropped_logged = self.dropped

    async def run(self, stop: asyncio.Event) -> None:
        """Post queued Events, ``posters`` at a time, until ``stop`` is set."""
        await asyncio.gather(*(self._post_until(stop) for _ in range(self._posters)))

    async def _post_until(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            getter = asyncio.ensure_future(self._queue.get())
            stopper = asyncio.ensure_future(stop.wait())
            done, _ = await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                stopper.cancel()
                break
            stopper.cancel()
            await self._post(getter.result())

    async def flush(self) -> None:
        """Post what is queued now (used at shutdown)."""
        while not self._queue.empty():
            await self._post(self._queue.get_nowait())

    async def _post(self, event: _Event) -> None:
        # from here a repeat is a new Event: this one's count is what it is now
        self._waiting.pop(event.identity, None)
        try:
            await self._api.post_event(
                event.involved,
                event_type=event.event_type,
                reason=event.reason,
                message=event.message,
                now=self._clock.now(),
                name=event.name,
                count=event.count,
                first=event.first,
            )
        except Exception as error:
            if event.name is not None and kube.is_conflict(error):
                log.debug("event already recorded", extra={"event": event.name})
                return  # best effort: never stop the operator for an Event
            log.warning(
                "could not post event",
                extra={"reason": event.reason, "error": str(error)[:200]},
            )


def event_name(object_name: str, reason: str, key: str) -> str:
    """The deterministic name of the Event keyed ``key``: ``<object>.<reason>.<key>``, made a
    valid DNS subdomain (lower case, at most 253 characters)."""
    tail = f"{reason}.{key}".lower()
    tail = _NOT_NAME.sub("-", tail).strip("-.")
    return f"{object_name[: 252 - len(tail)]}.{tail}"[:253]


#: The phases of an ended run that warn: a run that used up its retries, by how it ended.
ENDED_WARNINGS = {
    "DeadLettered": conditions.EventReason.DEAD_LETTERED,
    "TimedOut": conditions.EventReason.TIMED_OUT,
}


def record_unclaimable(
    recorder: EventRecorder,
    involved: Mapping[str, Any],
    desired: Mapping[str, Any],
    before: Mapping[str, Any],
) -> None:
    """A Warning the first time a run's status says no live runner can claim it."""
    reason = conditions.ConditionReason.UNCLAIMABLE
    if desired.get("reason") != reason or before.get("reason") == reason:
        return
    recorder.record(
        involved,
        WARNING,
        conditions.EventReason.UNCLAIMABLE,
        f"run {desired.get('runId')} is waiting: {desired.get('lastError')}",
        key=f"unclaimable:{desired.get('runId')}",
    )


def record_broken_slos(
    recorder: EventRecorder,
    involved: Mapping[str, Any],
    desired: Mapping[str, Any],
    before: Mapping[str, Any],
) -> None:
    """A Warning for each promise of a ScheduledJob's ``spec.slo`` that its status now lists as
    broken with a message it did not have before (``status.brokenSlos``). The Event's reason
    is the breach's (NoRecentSuccess, LateStart, RunTooLong). The message names the run that
    broke it (or the last success), and the Event is keyed by it, so an operator restart posts
    no second Event for the same story."""
    earlier = {
        entry.get("slo"): entry.get("message")
        for entry in before.get("brokenSlos") or ()
        if isinstance(entry, Mapping)
    }
    for entry in desired.get("brokenSlos") or ():
        slo, message = entry.get("slo"), str(entry.get("message") or "")
        if earlier.get(slo) == message:
            continue
        reason = str(entry.get("reason") or "")
        key = hashlib.sha256(message.encode()).hexdigest()[:16]
        recorder.record(involved, WARNING, reason, message, key=f"{slo}-{key}")


def _condition(status: Mapping[str, Any], condition_type: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == condition_type:
            return condition
    return None


def dead_lettered_key(run_id: int, attempt: int) -> str:
    """The key of a run's DeadLettered Event, one for the status mirror and the pod launcher
    (two reporters of the same fact leave one Event)."""
    return f"run-{run_id}-{attempt}"


def dead_lettered_message(run_id: int, error: str | None) -> str:
    return f"run {run_id} used up its retries: {error}"
