"""Batched, fenced writes of attempt results: finishes and releases.

Outcomes are queued as attempts end and written together: the writer waits ``linger_seconds``
(a few milliseconds) after the first queued result, or until ``max_batch`` results are queued,
then records them all in one finish of the runner's ``Dispatch`` (``claims.finish`` on
PostgreSQL alone), and one ``release`` when there are releases. At thousands of jobs per
second that is one round trip per hundreds of runs.

Guarantees:

* A result the store rejects (``lost``: the attempt no longer holds the run) is logged as
  ``lease lost`` and counted as ``lease_lost``, never as the outcome it carried.
* A write that fails because the database is unreachable is retried with backoff until it
  goes through; the lease keeps being heartbeated meanwhile (the attempt stays in flight). If
  the connection broke after the database committed, the retry finds the run no longer ours
  and reports it lost, with ``after_reconnect: true`` in the log line; the database holds the
  first write's result.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Union

from sundial.observability import metrics
from sundial.runner import in_flight
from sundial.store import claims, dispatch, reconnect, releases

log = logging.getLogger("sundial.runner.finisher")

Result = Union[claims.Finish, releases.Release]  # noqa: UP007 (a runtime alias)
Settled = Callable[[in_flight.Attempt], None]


class Finisher:
    def __init__(
        self,
        store: dispatch.Dispatch,
        worker: str,
        runner_metrics: metrics.RunnerMetrics,
        *,
        settled: Settled,
        on_connection: Callable[[BaseException | None], None],
        linger_seconds: float = 0.002,
        max_batch: int = 1000,
    ) -> None:
        self._store = store
        self._worker = worker
        self._metrics = runner_metrics
        self._settled = settled
        self._on_connection = on_connection
        self._linger_seconds = linger_seconds
        self._max_batch = max_batch
        self._queue: list[tuple[in_flight.Attempt, Result, str]] = []
        self._pending = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def submit(self, attempt: in_flight.Attempt, result: Result, label: str) -> None:
        """Queue ``result`` for ``attempt``; ``label`` is its ``sundial_runs`` outcome label."""
        attempt.finishing = True
        self._queue.append((attempt, result, label))
        self._idle.clear()
        self._pending.set()

    async def flush(self) -> None:
        """Return once everything queued so far is written."""
        await self._idle.wait()

    async def run(self) -> None:
        while True:
            await self._pending.wait()
            if len(self._queue) < self._max_batch and self._linger_seconds > 0:
                await asyncio.sleep(self._linger_seconds)
            batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
            if not self._queue:
                self._pending.clear()
            await self._write(batch)
            if not self._queue:
                self._idle.set()

    async def _write(self, batch: list[tuple[in_flight.Attempt, Result, str]]) -> None:
        finishes: list[claims.Finish] = []
        finished: list[tuple[in_flight.Attempt, str]] = []
        release_list: list[releases.Release] = []
        released: list[tuple[in_flight.Attempt, str]] = []
        for attempt, result, label in batch:
            if isinstance(result, releases.Release):
                release_list.append(result)
                released.append((attempt, label))
            else:
                finishes.append(result)
                finished.append((attempt, label))
        retry = reconnect.Backoff("cannot write results; retrying", logger=log)
        while finished or released:
            try:
                if finished:
                    done = await self._store.finish(self._worker, finishes)
                    self._settle(finished, done.lost, retry.failures > 0)
                    finished = []
                if released:
                    answer = await self._store.release(self._worker, release_list)
                    self._settle(released, answer.lost, retry.failures > 0)
                    released = []
                self._on_connection(None)
            except reconnect.ERRORS as error:
                self._on_connection(error)
                await asyncio.sleep(retry.failed(error, results=len(finished) + len(released)))

    def _settle(
        self,
        batch: list[tuple[in_flight.Attempt, str]],
        lost: frozenset[int],
        after_reconnect: bool,
    ) -> None:
        counts: collections.Counter[tuple[str, str]] = collections.Counter()
        for attempt, label in batch:
            if attempt.run.id in lost:
                fields = attempt.log_fields()
                fields.update(reason="the write was fenced out", discarded=label)
                if after_reconnect:
                    fields["after_reconnect"] = True
                log.warning("lease lost", extra=fields)
                label = "lease_lost"
            counts[attempt.run.handler, label] += 1
            self._settled(attempt)
        for (handler, label), count in counts.items():
            self._metrics.runs.labels(handler=handler, outcome=label).inc(count)
