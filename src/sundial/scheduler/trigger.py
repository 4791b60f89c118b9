"""The trigger loop: turns due schedules into runs, under a leader lease, correct without it.

One ``TriggerLoop`` per operator process (or per ``sundial scheduler``). Each ``step``:

1. takes or renews the ``trigger`` lease (``store.leases``, with an epoch); a process that does
   not hold it does nothing but wait;
2. as leader, ``tick``: calls ``store.fires.fire_due`` until no due schedule is left, one
   transaction per batch;
3. returns when to wake: the next ``next_fire_time`` or the poll interval, whichever is first.

It logs ``leading`` when it first takes the lease, ``standing by`` while another process holds
it, ``taking over`` when it takes the lease after standing by, and ``lost the lease`` when a
renewal found another holder. The store's housekeeping (reaping, promotion of due runs,
archiving, retention) is the ``maintainer``'s, which runs beside this loop and acts while this
loop's process holds the lease.

The lease only saves work. Correctness never depends on it: due schedules are locked
``FOR UPDATE SKIP LOCKED`` and every fire is created through the unique
``(schedule_id, fire_time)`` key, so two loops at once - a leader that lost its lease mid-tick,
a split brain - create every fire exactly once. State lives in PostgreSQL (``next_fire_time``),
so a new leader resumes where the old one stopped; missed fires go through the missed-fire
policy. Time comes from an injected ``scheduling.clock.Clock``: tests drive minutes of
schedule with a ``ManualClock`` and never sleep.

The fire budget is a ``scheduling.fire_budget.FireCalendar`` on the loop's clock: each run is
placed on a second of ``run_at`` that has room for it, under the global rate and its
namespace's, so no second of ``run_at`` holds more than ``fires_per_second`` runs, nor more than
``namespace_fires_per_second`` of one namespace, whatever the spread's hash did and in whatever
order the runs come (docs/adr/0052-fire-calendar.md). This module never imports kopf.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sundial.observability import trigger_metrics
from sundial.scheduling import clock as clocks
from sundial.scheduling import fire_budget
from sundial.store import fires, leases, schedules
from sundial.store.pool import Pool

__all__ = ["LEASE_NAME", "TriggerLoop", "TriggerSettings", "default_holder"]

LEASE_NAME = "trigger"
#: How often the leader checks for pending runs no live runner can claim (store.runners).

log = logging.getLogger("sundial.trigger")


@dataclass(frozen=True)
class TriggerSettings:
    batch_size: int = fires.DEFAULT_BATCH_SIZE
    #: The longest sleep between steps; also how often a standby asks for the lease.
    poll_interval: timedelta = timedelta(seconds=1)
    lease_ttl_seconds: float = 15.0
    #: Runs one second of run_at may hold in all; ``None`` turns the budget off (spread alone).
    fires_per_second: float | None = 1000.0
    #: Runs one second of run_at may hold of one namespace; ``None``: only the global budget.
    namespace_fires_per_second: float | None = None


def default_holder() -> str:
    """A lease holder name unique to this process."""
    return f"{socket.gethostname()}-{os.getpid()}"


class TriggerLoop:
    """See the module docstring. ``tick`` is public so tests and benchmarks can drive it."""

    def __init__(
        self,
        pool: Pool,
        *,
        clock: clocks.Clock | None = None,
        holder: str | None = None,
        settings: TriggerSettings | None = None,
        hot_queue: Any = None,
    ) -> None:
        """``hot_queue``: the hot queue's Redis client, where the database's hot queue is on
        (``Replace`` asks it which runs a claim holds)."""
        self.pool = pool
        self.hot_queue = hot_queue
        self.clock = clock or clocks.SystemClock()
        self.holder = holder or default_holder()
        self.settings = settings or TriggerSettings()
        self.lease: leases.LeaderLease | None = None
        #: Another process held the lease when this one last asked (for the log's wording).
        self.stood_by = False
        self._resigned = False
        rate = self.settings.fires_per_second
        self.fire_calendar = (
            None
            if rate is None
            else fire_budget.FireCalendar(
                rate,
                self.clock,
                namespace_fires_per_second=self.settings.namespace_fires_per_second,
            )
        )

    async def tick(self) -> fires.FireReport:
        """Fire every schedule due at the clock's now, one transaction per batch."""
        report = fires.FireReport()
        started = time.perf_counter()
        while True:
            now = self.clock.now()
            batch = await fires.fire_due(
                self.pool,
                now=now,
                batch_size=self.settings.batch_size,
                pace=None if self.fire_calendar is None else self.fire_calendar.place,
                hot=self.hot_queue,
            )
            report.add(batch)
            trigger_metrics.record_fires(
                ran=batch.ran,
                backfilled=batch.backfilled,
                coalesced=batch.coalesced,
                skipped=batch.skipped,
                buffered=batch.buffered,
                fire_times=(
                    run.fire_time
                    for run in batch.runs
                    if (run.schedule_id, run.fire_time) not in batch.released_fires
                ),
                created_at=self.clock.now(),
            )
            for outcome in batch.outcomes:
                if outcome.stalled is not None:
                    trigger_metrics.STALLED.labels(outcome.events[0]).inc()
                    log.warning(
                        "schedule stalled",
                        extra={"schedule_id": str(outcome.schedule_id), "error": outcome.stalled},
                    )
                if outcome.newly_quarantined is not None:
                    trigger_metrics.QUARANTINED.inc()
                    log.warning(
                        "schedule quarantined",
                        extra={
                            "schedule_id": str(outcome.schedule_id),
                            "reason": outcome.newly_quarantined,
                        },
                    )
            if batch.schedules < self.settings.batch_size:
                break
        trigger_metrics.TICK_SECONDS.observe(time.perf_counter() - started)
        if report.schedules:
            log.info(
                "trigger tick",
                extra={
                    "schedules": report.schedules,
                    "runs_created": report.created,
                    "coalesced": report.coalesced,
                    "skipped": report.skipped,
                    "backfilled": report.backfilled,
                    "stalled": report.stalled,
                },
            )
        return report

    async def lead(self) -> leases.LeaderLease | None:
        """Take or renew the lease; ``None`` while another process holds it."""
        before = None if self._resigned else self.lease
        self._resigned = False
        self.lease = await leases.acquire(
            self.pool, LEASE_NAME, self.holder, ttl_seconds=self.settings.lease_ttl_seconds
        )
        if self.lease is not None:
            if before is None or before.epoch != self.lease.epoch:
                message = "taking over" if self.stood_by else "leading"
                log.info(message, extra={"holder": self.holder, "epoch": self.lease.epoch})
            self.stood_by = False
            return self.lease
        if before is not None:
            log.warning("lost the lease; standing by", extra={"holder": self.holder})
            self.stood_by = True
        if not self.stood_by:
            current = await leases.holder(self.pool, LEASE_NAME)
            log.info(
                "standing by",
                extra={
                    "holder": self.holder,
                    "leader": None if current is None else current.holder,
                },
            )
            self.stood_by = True
        return None

    async def step(self) -> datetime:
        """One round: lead, and tick if leader; return when to wake."""
        now = self.clock.now()
        wake = now + self.settings.poll_interval
        if await self.lead() is None:
            return wake
        await self.tick()
        upcoming = await schedules.next_due(self.pool)
        if upcoming is not None:
            wake = min(wake, max(upcoming, self.clock.now()))
        return wake

    async def run(self, stop: asyncio.Event) -> None:
        """Step until ``stop`` is set; a failed step (database away) is retried with backoff."""
        failures = 0
        try:
            while not stop.is_set():
                try:
                    wake = await self.step()
                    failures = 0
                    delay = min(
                        (wake - self.clock.now()).total_seconds(),
                        self.settings.poll_interval.total_seconds(),
                    )
                except Exception:
                    failures += 1
                    delay = min(30.0, 0.5 * 2 ** min(failures, 6))
                    log.exception("trigger step failed; retrying", extra={"delay": delay})
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.01, delay)):  # wait_for can lose a cancel
                        await stop.wait()
        finally:
            if self.lease is not None:
                try:
                    await leases.resign(self.pool, self.lease)
                    log.info("stopped; resigned the lease", extra={"holder": self.holder})
                except Exception:
                    log.exception("could not resign the trigger lease; it will expire")
                self._resigned = True  # the next lead() starts afresh: nothing was lost
                self.stood_by = False
