"""The runner's breakers, told to the rest of the installation: ``/metrics`` and PostgreSQL.

A breaker (``breaker``) decides for this process alone; the operator (``Degraded=True``,
reason ``CircuitOpen``, on the ScheduledJobs that name the dependency) and ``sundial runs``
need to see it too. ``Publisher.transition`` is the breakers' ``on_transition``: it sets
``sundial_circuit_state`` and marks the dependency for publishing; ``Publisher.run`` writes
the marked states in one statement (``store.circuits.publish``) as soon as one changes, and
every ``refresh_seconds`` writes all of them again, which repairs a write lost to a database
outage and reports an OPEN breaker that turned HALF_OPEN with no run asking it since.

Off the hot path: nothing here runs per job. A transition costs a dict write and an event;
the write to PostgreSQL happens in this task, never in the claim loop. A write that finds no
announcement of this runner yet (``store.runners``: the announcer runs beside this task)
writes nothing, and the states are tried again a second later.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Callable

from sundial.observability import metrics
from sundial.runner import breaker
from sundial.store import circuits, reconnect
from sundial.store import pool as store_pool

__all__ = ["Publisher"]

log = logging.getLogger("sundial.runner")

#: How often every breaker's state is written again, transitions or not.
REFRESH_SECONDS = 30.0
#: How soon states that found no announcement of this runner are tried again.
RETRY_SECONDS = 1.0


class Publisher:
    def __init__(
        self,
        worker_id: str,
        runner_metrics: metrics.RunnerMetrics,
        *,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        if refresh_seconds <= 0:
            raise ValueError("refresh_seconds must be > 0")
        self.worker_id = worker_id
        self.metrics = runner_metrics
        self.refresh_seconds = refresh_seconds
        self.states: dict[str, circuits.CircuitState] = {}
        self._unpublished: set[str] = set()
        self._changed = asyncio.Event()

    def transition(self, dependency: str, state: breaker.State) -> None:
        """A breaker took ``state`` (called on the event loop, by ``breaker.Breakers``)."""
        now = datetime.datetime.now(datetime.UTC)
        self.states[dependency] = circuits.CircuitState(dependency, state.value, now)
        self._unpublished.add(dependency)
        self.metrics.set_circuit_state(dependency, state.value)
        self._changed.set()
        fields = {"dependency": dependency, "state": state.value, "worker": self.worker_id}
        if state is breaker.State.OPEN:
            log.warning("circuit open: runs of this dependency wait", extra=fields)
        else:
            log.info("circuit state changed", extra=fields)

    async def run(
        self,
        pool: Callable[[], store_pool.Pool],
        breakers: breaker.Breakers,
        on_connection: Callable[[BaseException | None], None],
    ) -> None:
        """Publish until cancelled; a failed write is retried with backoff."""
        loop = asyncio.get_running_loop()
        next_refresh = loop.time() + self.refresh_seconds
        retry = reconnect.Backoff("publishing circuit state failed; retrying", logger=log)
        delay = self.refresh_seconds
        while True:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the result when
            # the event is set in the same step as a cancel, and the cancel is lost (the
            # runner's shutdown then waited for this task forever).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(delay, 0.0)):
                    await self._changed.wait()
            self._changed.clear()
            if loop.time() >= next_refresh:
                next_refresh = loop.time() + self.refresh_seconds
                breakers.states()  # advances OPEN to HALF_OPEN where due (-> transition)
                self._unpublished.update(self.states)
            delay = next_refresh - loop.time()
            if not self._unpublished:
                continue
            batch = [self.states[name] for name in sorted(self._unpublished)]
            try:
                written = await circuits.publish(pool(), self.worker_id, batch)
            except reconnect.ERRORS as error:
                on_connection(error)
                delay = min(delay, retry.failed(error))
                continue
            except Exception as error:  # never let a bad write stop the runner
                log.error("publishing circuit state failed", exc_info=error)
                delay = min(delay, RETRY_SECONDS)
                continue
            retry.succeeded()
            for published in batch:
                # A transition during the write left a newer state to publish: keep its mark.
                current = self.states[published.dependency]
                if published.dependency in written and current is published:
                    self._unpublished.discard(published.dependency)
            if self._unpublished:
                delay = min(delay, RETRY_SECONDS)
