"""What every part of a running operator shares: the pool, the API, the recorder, the clock.

One ``Context`` per process, handed to kopf handlers through kopf's ``memo`` and to the loops
directly. Its per-object state: missed fires the trigger reported (for the ScheduleMissed
condition), the ScheduledJobs the mirror saw last (so the trigger's Events find their object),
the user JobRuns by their run's idempotency key (so the pod launcher's hooks find the JobRun
of a run: its Pods' owner and its Events' object), the watch-fed caches of both kinds (slim
bodies, ``cache``) and the generation each object was last handled at.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sundial.operator import cache, events, kube
from sundial.scheduling import clock as clocks
from sundial.store.pool import Pool

__all__ = [
    "LABEL_MIRROR",
    "LABEL_SCHEDULED_JOB",
    "RUN_NOW_ANNOTATION",
    "Context",
    "Generations",
    "OperatorSettings",
]

#: On JobRuns the mirror writes: the ScheduledJob's name, and a marker the handlers skip.
LABEL_SCHEDULED_JOB = "sundial.dev/scheduledjob"
LABEL_MIRROR = "sundial.dev/mirror"
#: On a ScheduledJob (or a JobRun with jobRef): start a run now; the operator removes it.
RUN_NOW_ANNOTATION = "sundial.dev/run-now"


class Generations(dict[str, int]):
    """uid -> generation, counting its changes: a mirror pass that sees the same count and the
    same cached objects as a pass that found every generation stored need not look again."""

    def __init__(self) -> None:
        super().__init__()
        self.changes = 0

    def __setitem__(self, key: str, value: int) -> None:
        self.changes += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.changes += 1
        super().__delitem__(key)

    def pop(self, key: str, *default: Any) -> Any:
        self.changes += 1
        return super().pop(key, *default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("set generations one by one, so that each change is counted")

    def setdefault(self, *args: Any) -> Any:
        raise TypeError("set generations one by one, so that each change is counted")

    def popitem(self) -> tuple[str, int]:
        self.changes += 1
        return super().popitem()

    def clear(self) -> None:
        self.changes += 1
        super().clear()


@dataclass(frozen=True)
class OperatorSettings:
    #: The namespaces watched; ``None``: all of them.
    namespaces: Sequence[str] | None = None
    #: The longest time between two status-mirror passes (a change wakes it sooner).
    mirror_interval: timedelta = timedelta(seconds=3)
    #: Concurrent API writes of one mirror pass.
    write_concurrency: int = 16
    #: The ``sundial.dev/instance`` label of this installation's Pods: the mirror deletes the
    #: ended ones whose run left its window (``pod_gc``). ``None``: Pods are left alone.
    pod_instance: str | None = None
    #: The longest time between two sweeps of ended Pods (one per mirror pass at most): each
    #: sweep lists the ended Pods the windows keep, so it is rarer than the pass by default.
    pod_gc_interval: timedelta = timedelta(seconds=30)


#: The longest the mirror holds one write or one slice for JobRun submissions
#: (``Context.submissions_quiet``): a steady stream of JobRuns slows the mirror, never stops it.
SUBMISSION_HOLD_SECONDS = 5.0


def _set_event() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


@dataclass
class Context:
    pool: Pool
    api: kube.KubeApi
    recorder: events.EventRecorder
    clock: clocks.Clock
    settings: OperatorSettings = field(default_factory=OperatorSettings)
    #: Set to run a mirror pass now (after a handler stored a change).
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    #: schedule id -> (reason, message) of the latest missed-fire report, until a normal fire.
    missed: dict[uuid.UUID, tuple[str, str]] = field(default_factory=dict)
    #: schedule id -> the ScheduledJob body as the last mirror pass listed it.
    scheduled_jobs: dict[uuid.UUID, Mapping[str, Any]] = field(default_factory=dict)
    #: idempotency key of its run -> a user JobRun body (``job_runs.run_key``): registered by
    #: ``job_runs.reconcile`` before it submits, refreshed and pruned by every mirror pass.
    job_runs: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The watched ScheduledJobs and JobRuns, fed by kopf's events (``handlers``), read by the
    #: mirror instead of a LIST per pass.
    scheduled_job_cache: cache.ObjectCache = field(default_factory=cache.ObjectCache)
    job_run_cache: cache.ObjectCache = field(default_factory=cache.ObjectCache)
    #: uid -> the generation last stored (ScheduledJobs) or handed to ``job_runs.reconcile``
    #: (user JobRuns): an event of a generation already handled changes nothing.
    reconciled: Generations = field(default_factory=Generations)
    #: uids of ScheduledJobs seen deleted by this process: a store already under way when the
    #: deletion arrived deactivates its schedule again after its upsert
    #: (``scheduled_jobs.reconcile``). Only grows with deletions; an entry is a few dozen bytes.
    deleted_schedules: set[str] = field(default_factory=set)
    #: uid -> (reason, message) of a ScheduledJob whose generation could not be stored for a
    #: reason its spec does not show (its name held by a job defined from Python): the mirror
    #: reports it as Stalled. Cleared when a generation is stored or the object is deleted.
    unstorable: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Event handlers storing objects at once, at most: a burst of events must leave pool
    #: connections to the mirror and the trigger.
    stores: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(4))
    #: Event handlers submitting user JobRuns (no ``status.runId`` yet) at once, at most: a
    #: lane of their own, so a submission never waits behind the refresh of a submitted one.
    submissions: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(8))
    #: uids of the user JobRuns being submitted now: a handler and a mirror pass that find the
    #: same JobRun waiting submit it once between them (``job_runs.reconcile``).
    submitting: set[str] = field(default_factory=set)
    #: Set while no handler is submitting a JobRun or waiting to: the mirror holds its writes
    #: and its next slice until then, so a burst of JobRuns gets the process first and the
    #: mirror catches up after (``submission_queued``, ``submission_done``).
    no_submissions: asyncio.Event = field(default_factory=_set_event)
    _queued_submissions: int = field(default=0, init=False, repr=False)
    #: The hot queue's Redis client (``--hot-queue-url``), or None: JobRun status then shows a
    #: run a claimer holds there as running, as PostgreSQL alone would (``hot_queue.overlay``).
    hot_queue: Any = None

    def submission_queued(self) -> None:
        self._queued_submissions += 1
        self.no_submissions.clear()

    def submission_done(self) -> None:
        self._queued_submissions -= 1
        if self._queued_submissions == 0:
            self.no_submissions.set()

    async def submissions_quiet(self) -> None:
        """Return once no handler is submitting a JobRun or waiting to, or after
        ``SUBMISSION_HOLD_SECONDS`` at most: submissions go first, and the mirror's ScheduledJob
        statuses, missed-fire reports and Pod collection still make progress under a stream
        of JobRuns that never pauses."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SUBMISSION_HOLD_SECONDS):  # wait_for can lose a cancel
                await self.no_submissions.wait()
