"""Keeps every in-flight lease alive with batched, fenced heartbeats.

Each attempt is extended once its lease was last extended (claimed or heartbeated)
``interval_seconds`` ago, a third of the lease by default. The heartbeater looks every
``tick_seconds`` (a tenth of the interval) and extends every attempt that is due, in one
``claims.heartbeat``. So:

* an attempt that ends within ``interval - tick`` of its claim (9 s with the default 30 s
  lease) is never heartbeated: at thousands of short jobs per second that is one row update
  per job saved (docs/adr/0012-runner-hot-path.md);
* no lease goes longer than ``interval`` without an extension attempt, as before, and a failed
  extension is retried every tick (not every interval) until it goes through, so a lease
  lapses only after about two thirds of it passed with every heartbeat failing;
* ``extended_at`` is the local monotonic time the claim or heartbeat request was *sent*, which
  is no later than the database's ``now()`` that set the lease: the local view of a lease is
  never longer than the real one.

What comes back drives the attempts:

* ``lost`` — another attempt owns the run (our lease expired and the reaper requeued it, or
  it was claimed again): the local attempt is cancelled, its result will be discarded, and
  ``lease lost`` is logged with the run id and attempt;
* ``cancel_requested`` — someone cancelled the run: the attempt's cancel event is set and it
  finishes as cancelled.

An attempt whose result is already queued for writing is still extended but never declared
lost here: the run leaving ``running`` is then the finish itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

from sundial.runner import in_flight
from sundial.store import claims, reconnect
from sundial.store.pool import Pool

log = logging.getLogger("sundial.runner.heartbeats")


class Heartbeats:
    def __init__(
        self,
        pool: Callable[[], Pool],
        worker: str,
        attempts: Mapping[int, in_flight.Attempt],
        *,
        lease_seconds: float,
        on_lost: Callable[[in_flight.Attempt], None],
        on_connection: Callable[[BaseException | None], None],
        interval_seconds: float | None = None,
        tick_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        extended: Callable[[int], None] | None = None,
    ) -> None:
        self._pool = pool
        self._worker = worker
        self._attempts = attempts
        self._lease_seconds = lease_seconds
        self._on_lost = on_lost
        self._on_connection = on_connection
        self.interval_seconds = interval_seconds or lease_seconds / 3
        self.tick_seconds = tick_seconds or self.interval_seconds / 10
        self._clock = clock
        self._extended = extended

    async def run(self) -> None:
        # Retried every tick: log the first failure and then about once an interval.
        retry = reconnect.Backoff(
            "heartbeat failed; leases are kept until they expire",
            logger=log,
            cap_seconds=self.tick_seconds,
            log_every=10,
        )
        while True:
            delay = self.tick_seconds
            try:
                await self.beat()
                retry.succeeded()
                self._on_connection(None)
            except reconnect.ERRORS as error:
                self._on_connection(error)
                delay = retry.failed(error, in_flight=len(self._attempts))
            await asyncio.sleep(delay)

    async def beat(self) -> None:
        """Extend, in one statement, every attempt whose lease is due for an extension."""
        sent = self._clock()
        # Due one tick early, so that looking once per tick never lets an interval pass.
        due = sent - (self.interval_seconds - self.tick_seconds)
        batch = [
            a
            for a in list(self._attempts.values())
            if a.extended_at <= due and not a.lost and not a.released
        ]
        if not batch:
            return
        result = await claims.heartbeat(
            self._pool(), self._worker, [a.key for a in batch], lease_seconds=self._lease_seconds
        )
        if self._extended is not None:
            self._extended(len(result.extended))
        for attempt in batch:
            run_id = attempt.run.id
            if run_id in result.lost:
                if not attempt.finishing and not attempt.released:
                    self._on_lost(attempt)
                continue
            attempt.extended_at = sent
            if run_id in result.cancel_requested and not attempt.invocation.cancel.is_set():
                log.info("cancellation requested", extra=attempt.log_fields())
                attempt.invocation.cancel.set()
