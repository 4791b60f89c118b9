"""Keeps every in-flight lease alive with one batched, fenced heartbeat per interval.

Every ``interval_seconds`` (a third of the lease by default, so two heartbeats can fail before
a lease lapses) all attempts still in flight are extended in one ``claims.heartbeat``. What
comes back drives the attempts:

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
from collections.abc import Callable, Mapping

from sundial.runner import connection_errors, in_flight
from sundial.store import claims
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
    ) -> None:
        self._pool = pool
        self._worker = worker
        self._attempts = attempts
        self._lease_seconds = lease_seconds
        self._on_lost = on_lost
        self._on_connection = on_connection
        self.interval_seconds = interval_seconds or lease_seconds / 3

    async def run(self) -> None:
        failures = 0
        while True:
            delay = self.interval_seconds
            try:
                await self.beat()
                failures = 0
                self._on_connection(None)
            except connection_errors.ERRORS as error:
                failures += 1
                self._on_connection(error)
                delay = min(connection_errors.retry_delay(failures), self.interval_seconds)
                log.warning(
                    "heartbeat failed; leases are kept until they expire",
                    extra={
                        "error": connection_errors.describe(error),
                        "in_flight": len(self._attempts),
                    },
                )
            await asyncio.sleep(delay)

    async def beat(self) -> None:
        batch = [a for a in list(self._attempts.values()) if not a.lost and not a.released]
        if not batch:
            return
        result = await claims.heartbeat(
            self._pool(), self._worker, [a.key for a in batch], lease_seconds=self._lease_seconds
        )
        for attempt in batch:
            run_id = attempt.run.id
            if run_id in result.lost:
                if not attempt.finishing and not attempt.released:
                    self._on_lost(attempt)
            elif run_id in result.cancel_requested and not attempt.invocation.cancel.is_set():
                log.info("cancellation requested", extra=attempt.log_fields())
                attempt.invocation.cancel.set()
