"""Kubernetes Events on ScheduledJobs and JobRuns, posted off the hot path.

Reconcilers and the trigger call ``record`` (never blocks, never raises); one task posts the
queued Events. Events are best effort, as in Kubernetes itself: a full queue or a failed post
is logged and dropped, and never stops a reconcile. Reasons are ``api.conditions.EventReason``
members (or a scheduling error's ``reason``), the words users grep for (docs/design.md).

An Event recorded with a ``key`` (e.g. run and attempt) gets a name derived from it, so posting
it twice - two reporters of one fact, or a restarted operator reporting again - is a 409 from
the apiserver and leaves one Event: once per key for as long as Kubernetes keeps the Event.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Event:
    involved: Mapping[str, Any]
    event_type: str
    reason: str
    message: str
    name: str | None = None


class EventRecorder:
    def __init__(self, api: kube.KubeApi, clock: clocks.Clock, *, capacity: int = 10_000) -> None:
        self._api = api
        self._clock = clock
        self._queue: asyncio.Queue[_Event] = asyncio.Queue(maxsize=capacity)

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
        try:
            name = None if key is None else event_name(involved["metadata"]["name"], reason, key)
            self._queue.put_nowait(_Event(reference, event_type, reason, message, name))
        except asyncio.QueueFull:
            log.warning("event queue full; event dropped", extra={"reason": reason})

    async def run(self, stop: asyncio.Event) -> None:
        """Post queued Events until ``stop`` is set."""
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
        try:
            await self._api.post_event(
                event.involved,
                event_type=event.event_type,
                reason=event.reason,
                message=event.message,
                now=self._clock.now(),
                name=event.name,
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
TERMINAL_WARNINGS = {
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
