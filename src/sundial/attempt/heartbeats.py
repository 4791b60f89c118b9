"""Keeps every held attempt's lease alive with batched, fenced heartbeats.

Used by the runner (a task of its own, ``run``) and the pod launcher (``beat`` from its step),
for whatever attempts each holds: anything with a ``key`` (run id, attempt) and an
``extended_at``.

Each attempt is extended once its lease was last extended (claimed or heartbeated)
``interval_seconds`` ago, a third of the lease by default. ``run`` looks every
``tick_seconds`` (a tenth of the interval) and extends every attempt that is due, in one
``claims.heartbeat``. So:

* an attempt that ends within ``interval - tick`` of its claim (9 s with the default 30 s
  lease) is never heartbeated: at thousands of short jobs per second that is one row update
  per job saved (docs/adr/0012-runner-hot-path.md);
* no lease goes longer than ``interval`` without an extension attempt, and a failed
  extension is retried every tick (not every interval) until it goes through, so a lease
  lapses only after about two thirds of it passed with every heartbeat failing;
* ``extended_at`` is the clock's reading when the claim or heartbeat request was *sent*, which
  is no later than the database's ``now()`` that set the lease: the local view of a lease is
  never longer than the real one. The claim's holder sets it; a beat moves it on.

What comes back is the holder's to act on (``Beat``): ``lost`` (another attempt owns the run:
the lease expired and the reaper requeued it, or it was claimed again; its result must be
discarded) and ``cancel_requested`` (someone cancelled the run).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from sundial.store import claims, reconnect
from sundial.store.pool import Pool

__all__ = ["Beat", "Heartbeats", "Held"]

log = logging.getLogger("sundial.attempt.heartbeats")


class Held(Protocol):
    """An attempt a process holds: the runner's ``in_flight.Attempt``, the launcher's Pod."""

    extended_at: float

    @property
    def key(self) -> tuple[int, int]: ...


A = TypeVar("A", bound=Held)


@dataclass
class Beat(Generic[A]):
    """What one heartbeat found, for the holder to act on."""

    extended: int = 0
    lost: list[A] = field(default_factory=list)
    cancel_requested: list[A] = field(default_factory=list)


class Extend(Protocol):
    """Extends leases as ``claims.heartbeat`` does (``Dispatch.heartbeat``)."""

    def __call__(
        self, worker: str, runs: Sequence[tuple[int, int]], *, lease_seconds: float
    ) -> Awaitable[claims.HeartbeatResult]: ...


class Heartbeats(Generic[A]):
    def __init__(
        self,
        pool: Callable[[], Pool],
        worker: str,
        attempts: Mapping[int, A],
        *,
        lease_seconds: float,
        interval_seconds: float | None = None,
        tick_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        beats: Callable[[A], bool] = lambda attempt: True,
        extend: Extend | None = None,
    ) -> None:
        """``attempts``: run id -> attempt, the holder's live map (read at every beat);
        ``beats``: whether an attempt is still extended (the runner stops extending one it
        gave back or lost); ``extend``: how leases are extended (the runner's ``Dispatch``
        heartbeat; default ``claims.heartbeat`` on ``pool``)."""
        self._pool = pool
        self._worker = worker
        self._attempts = attempts
        self._lease_seconds = lease_seconds
        self.interval_seconds = interval_seconds or lease_seconds / 3
        self.tick_seconds = tick_seconds or self.interval_seconds / 10
        self._clock = clock
        self._beats = beats
        self._extend = extend

    async def run(
        self,
        *,
        on_beat: Callable[[Beat[A]], None],
        on_connection: Callable[[BaseException | None], None],
    ) -> None:
        """Beat every tick for ever; ``on_beat`` gets each beat's findings, ``on_connection``
        each success (None) or connection failure."""
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
                on_beat(await self.beat())
                retry.succeeded()
                on_connection(None)
            except reconnect.ERRORS as error:
                on_connection(error)
                delay = retry.failed(error, in_flight=len(self._attempts))
            await asyncio.sleep(delay)

    async def beat(self) -> Beat[A]:
        """Extend, in one statement, every attempt whose lease is due for an extension."""
        sent = self._clock()
        # Due one tick early, so that looking once per tick never lets an interval pass.
        due = sent - (self.interval_seconds - self.tick_seconds)
        batch = [
            a for a in list(self._attempts.values()) if a.extended_at <= due and self._beats(a)
        ]
        if not batch:
            return Beat()
        keys = [a.key for a in batch]
        if self._extend is not None:
            result = await self._extend(self._worker, keys, lease_seconds=self._lease_seconds)
        else:
            result = await claims.heartbeat(
                self._pool(), self._worker, keys, lease_seconds=self._lease_seconds
            )
        found: Beat[A] = Beat(extended=len(result.extended))
        for attempt in batch:
            run_id = attempt.key[0]
            if run_id in result.lost:
                found.lost.append(attempt)
                continue
            attempt.extended_at = sent
            if run_id in result.cancel_requested:
                found.cancel_requested.append(attempt)
        return found
