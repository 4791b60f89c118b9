"""A runner's claims, heartbeats, finishes and give-backs on the hot queue (``Dispatch``).

The claim is Redis's (one script: fair share, lease, attempt); the run's record is then read
from PostgreSQL by primary key, and a run the record no longer has pending (cancelled since
it was made due) is given back unrun. Heartbeats extend leases in Redis and read which held
runs the record asked to stop or ended (a read, never a write). A finish ends the lease in
Redis, then is written fenced in PostgreSQL (``finishes``). A give-back (a runner shutting
down) makes the run due again in Redis only: the record still says pending.

The tokens of the attempts this process holds are kept here, by (run id, attempt): the
runner speaks in attempts, as on PostgreSQL alone, and the epoch rides along.

Redis errors reach the caller as ``HotQueueUnavailableError``, a ``StoreUnavailableError``:
the runner's loops retry them as they retry PostgreSQL's outages.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from redis import exceptions as redis_errors

from sundial.store import claims, queries, releases
from sundial.store.errors import EpochChangedError
from sundial.store.hot_queue import Claim, HotQueue, finishes, redis_calls
from sundial.store.pool import Pool

__all__ = ["FORGET_AFTER_SECONDS", "HotDispatch"]

log = logging.getLogger("sundial.store.hot_queue.dispatch")

#: How long after its finish a run's attempt count is dropped from Redis: far past the
#: relay's bound (``outbox.RELAY_TIMEOUT_MS``), so no delivery read before the finish can
#: arrive after it and find the count gone.
FORGET_AFTER_SECONDS = 60.0

#: How long an attempt a heartbeat found lost is remembered (``HotDispatch._lost``): past any
#: wait of an outcome queued for writing (the finisher retries a write for as long as the
#: stores are away, but a run's lease ends long before), a few bytes per lost attempt.
LOST_KEPT_SECONDS = 600.0


class _Held(NamedTuple):
    queue: HotQueue
    claim: Claim
    started_at: datetime.datetime


class HotDispatch:
    """The hot queue's ``sundial.store.dispatch.Dispatch`` for one runner process."""

    uses_floors = False

    def __init__(
        self,
        pool: Callable[[], Pool],
        client: Any,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``pool``: the runner's pool (asked for at each call); ``client``: a
        ``redis.asyncio.Redis``."""
        self._pool = pool
        self._client = client
        self._clock = clock
        self._queues: dict[str, HotQueue] = {}
        self._epochs: dict[str, int] = {}
        self._held: dict[tuple[int, int], _Held] = {}
        #: Finishes (and give-backs with a delay) whose lease Redis ended and whose PostgreSQL
        #: write has not gone through.
        self._released: set[tuple[int, int]] = set()
        #: Attempts whose lease a finish or a give-back is ending in Redis right now: a
        #: heartbeat that meets the lease gone meanwhile must not take them for lost (the
        #: finish would then find its attempt forgotten).
        self._ending: set[tuple[int, int]] = set()
        #: Attempts a heartbeat found lost, and when: the runner may still write the outcome
        #: of one it had finished, and until then the same attempt number handed out again
        #: under a newer epoch must not take its place here (that write would end the new
        #: attempt's lease and go in under its token). Kept ``LOST_KEPT_SECONDS``.
        self._lost: dict[tuple[int, int], float] = {}
        #: Give-backs done, by (run, attempt), with the state written and when, until a call
        #: reports them: a call that fails part-way is repeated by the caller, which must not
        #: hear "lost" for those done. Kept ``LOST_KEPT_SECONDS`` for a caller that gives up.
        self._given_back: dict[tuple[int, int], tuple[str, float]] = {}
        self._forgets: collections.deque[tuple[float, HotQueue, list[int]]] = collections.deque()

    def _queue(self, name: str) -> HotQueue:
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues[name] = HotQueue(self._client, name)
        return queue

    @property
    def held(self) -> int:
        """Attempts this process holds tokens for."""
        return len(self._held)

    async def _epoch(self, queue: HotQueue, *, renew: bool = False) -> int:
        if not renew and queue.queue in self._epochs:
            return self._epochs[queue.queue]
        found = None if renew else await queue.epoch()
        if found is None:
            found = await queue.renew_epoch(self._pool())
            log.info("hot queue epoch set", extra={"queue": queue.queue, "epoch": found})
        self._epochs[queue.queue] = found
        return found

    async def claim(
        self,
        worker: str,
        *,
        queues: Sequence[str],
        handlers: Sequence[str],
        execution_models: Sequence[str],
        registered_model: bool,
        limit: int,
        lease_seconds: float,
        namespaces: Sequence[str] | None,
        floors: Mapping[str, float] | None = None,
        weights: Mapping[str, float] | None = None,
        held: Mapping[str, int] | None = None,
        reserved: int = 0,
    ) -> list[claims.ClaimedRun]:
        """``claims.claim``'s contract on Redis (``floors`` are not needed: Redis keeps no dead
        entries). Queues are served in the order given, each up to what is left of
        ``limit``."""
        pairs = [(handler, model) for handler in handlers for model in execution_models]
        if registered_model:  # runs naming no model take the one ``handlers`` registered
            pairs += [(handler, "") for handler in handlers]
        runs: list[claims.ClaimedRun] = []
        for name in queues:
            room = limit - len(runs)
            if room <= 0:
                break
            with redis_calls():
                runs += await self._claim_from(
                    self._queue(name),
                    lease_seconds=lease_seconds,
                    limit=room,
                    pairs=pairs,
                    namespaces=namespaces,
                    weights=weights,
                    held=held,
                    reserved=min(reserved, room),
                )
        return runs

    async def _claim_from(
        self,
        queue: HotQueue,
        *,
        lease_seconds: float,
        limit: int,
        pairs: list[tuple[str, str]],
        namespaces: Sequence[str] | None,
        weights: Mapping[str, float] | None,
        held: Mapping[str, int] | None,
        reserved: int,
    ) -> list[claims.ClaimedRun]:
        epoch = await self._epoch(queue)
        arguments: dict[str, Any] = {
            "lease_ms": round(lease_seconds * 1000),
            "limit": limit,
            "handlers": pairs,
            "namespaces": namespaces,
            "weights": weights,
            "held": held,
            "reserved": reserved,
        }
        try:
            handed = await queue.claim(epoch, **arguments)
        except EpochChangedError:
            # A failover or a restart: take the next epoch from PostgreSQL (or the one another
            # process set first) and claim under it.
            handed = await queue.claim(await self._epoch(queue, renew=True), **arguments)
        if not handed:
            return []
        started_at = datetime.datetime.now(datetime.UTC)
        lease_until = started_at + datetime.timedelta(seconds=lease_seconds)
        try:
            async with self._pool().connection() as conn:
                cursor = await conn.execute(
                    queries.get("hot_queue_claimed"), {"ids": [c.id for c in handed]}
                )
                rows = {row[0]: row for row in await cursor.fetchall()}
        except BaseException:
            # Unread, they would wait out their leases: give them back at once, if Redis can.
            with contextlib.suppress(Exception):
                await queue.requeue([(c, 0) for c in handed])
            raise
        runs: list[claims.ClaimedRun] = []
        ended: list[Claim] = []
        twice: list[Claim] = []
        for claim in handed:
            row = rows.get(claim.id)
            if row is None or row[19] != "pending":
                ended.append(claim)
                continue
            attempt = claim.token.attempt
            if (claim.id, attempt) in self._held or (claim.id, attempt) in self._lost:
                # This runner still holds the same attempt number of the run under an earlier
                # epoch (a Redis that lost its data handed it out again) and knows its attempts
                # by (run, attempt): give the new one back. The old one's next heartbeat finds
                # its lease gone, and the run comes back as a later attempt.
                twice.append(claim)
                continue
            runs.append(
                claims.ClaimedRun._make(
                    (row[0], attempt, *row[1:10], lease_until, *row[10:19], claim.token.epoch)
                )
            )
            self._held[claim.id, attempt] = _Held(queue, claim, started_at)
        if ended:  # cancelled (or ended) in the record since they were made due: not run
            await queue.release(ended)
        if twice:
            await queue.requeue([(claim, 0) for claim in twice])
        return runs

    async def heartbeat(
        self, worker: str, runs: Sequence[tuple[int, int]], *, lease_seconds: float
    ) -> claims.HeartbeatResult:
        """Extend the leases in Redis; report as ``cancel_requested`` the runs the record
        asked to stop (``runs.cancel`` given the Redis) or no longer has pending (ended by a
        canceller without it)."""
        if not runs:
            return claims.HeartbeatResult()
        horizon = self._clock() - LOST_KEPT_SECONDS
        self._lost = {key: at for key, at in self._lost.items() if at > horizon}
        lost: set[int] = set()
        by_queue: dict[HotQueue, list[tuple[int, int]]] = collections.defaultdict(list)
        for key in runs:
            holding = self._held.get(key)
            if holding is None:
                lost.add(key[0])
            else:
                by_queue[holding.queue].append(key)
        until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=lease_seconds)
        extended: dict[int, datetime.datetime] = {}
        with redis_calls():
            for queue, keys in by_queue.items():
                flags = await queue.heartbeat(
                    round(lease_seconds * 1000), [self._held[key].claim for key in keys]
                )
                for key, still in zip(keys, flags, strict=True):
                    if still:
                        extended[key[0]] = until
                    elif key in self._ending or key in self._released:
                        continue  # its own finish ended the lease: not lost, being written
                    else:
                        lost.add(key[0])
                        self._held.pop(key, None)
                        self._lost[key] = self._clock()
        cancelled: frozenset[int] = frozenset()
        if extended:
            async with self._pool().connection() as conn:
                cursor = await conn.execute(
                    queries.get("hot_queue_not_pending"), {"ids": list(extended)}
                )
                cancelled = frozenset(row[0] for row in await cursor.fetchall())
        return claims.HeartbeatResult(extended, cancelled, frozenset(lost))

    async def finish(self, worker: str, outcomes: Sequence[claims.Finish]) -> claims.FinishResult:
        """End each attempt's lease in Redis if it still holds it, then write the outcomes
        released fenced in PostgreSQL (``finishes``). A write that fails is tried again by the
        caller without releasing again."""
        if not outcomes:
            return claims.FinishResult()
        by_queue: dict[HotQueue, list[tuple[int, int]]] = collections.defaultdict(list)
        for outcome in outcomes:
            key = (outcome.run_id, outcome.attempt)
            self._lost.pop(key, None)  # its outcome came: written nowhere
            holding = self._held.get(key)
            if holding is not None and key not in self._released:
                by_queue[holding.queue].append(key)
        await self._end_leases(by_queue)
        released = []
        for outcome in outcomes:
            key = (outcome.run_id, outcome.attempt)
            if key in self._released:
                holding = self._held[key]
                released.append(finishes.HotFinish(outcome, holding.claim, holding.started_at))
        result = await finishes.record(self._pool(), worker, released, outcomes)
        written: dict[HotQueue, list[int]] = collections.defaultdict(list)
        for finish in released:
            key = (finish.outcome.run_id, finish.outcome.attempt)
            self._released.discard(key)
            written[self._held.pop(key).queue].append(key[0])
        forget_at = self._clock() + FORGET_AFTER_SECONDS
        for queue, ids in written.items():
            self._forgets.append((forget_at, queue, ids))
        await self._forget_due()
        return result

    async def _end_leases(self, by_queue: dict[HotQueue, list[tuple[int, int]]]) -> None:
        """End the leases of these attempts in Redis where they still hold them: those go to
        ``_released`` (their write comes next), the others are forgotten (lost)."""
        ending = {key for keys in by_queue.values() for key in keys}
        self._ending |= ending
        try:
            with redis_calls():
                for queue, keys in by_queue.items():
                    flags = await queue.release([self._held[key].claim for key in keys])
                    for key, still in zip(keys, flags, strict=True):
                        if still:
                            self._released.add(key)
                        else:
                            self._held.pop(key, None)
        finally:
            self._ending -= ending

    async def _forget_due(self) -> None:
        """Drop the attempt counts of runs finished ``FORGET_AFTER_SECONDS`` ago. Best effort:
        a count kept (this process died first) costs Redis a few bytes, nothing else."""
        now = self._clock()
        while self._forgets and self._forgets[0][0] <= now:
            _, queue, ids = self._forgets.popleft()
            try:
                await queue.forget(ids)
            except (redis_errors.ConnectionError, redis_errors.TimeoutError):
                return

    async def release(
        self, worker: str, runs: Sequence[releases.Release]
    ) -> releases.ReleaseResult:
        """Give runs back without spending a retry. Without a delay the run is due again in
        Redis only, at its dispatch key (the record still says pending, as while it is held).
        With a delay it goes the way PostgreSQL's release sends it: its lease ends in Redis,
        then the record takes it to ``retry_wait`` fenced on its token (``hot_queue_defer``),
        and the maintainer's promotion makes it pending again after the delay, with a
        dispatch key that keeps its priority (one Redis score cannot be both when a run is due
        and where it ranks). A write that fails is tried again by the caller without ending
        the lease again, as a finish's is."""
        if not runs:
            return releases.ReleaseResult()
        # Runs given back by an earlier call that failed part-way are answered as they went.
        horizon = self._clock() - LOST_KEPT_SECONDS
        self._given_back = {k: done for k, done in self._given_back.items() if done[1] > horizon}
        todo = [r for r in runs if (r.run_id, r.attempt) not in self._given_back]
        by_queue: dict[HotQueue, list[releases.Release]] = collections.defaultdict(list)
        for run in todo:
            holding = self._held.get((run.run_id, run.attempt))
            if holding is not None and run.delay_seconds <= 0:
                by_queue[holding.queue].append(run)
        with redis_calls():
            for queue, given in by_queue.items():
                flags = await queue.requeue(
                    [(self._held[r.run_id, r.attempt].claim, 0) for r in given]
                )
                for run, still in zip(given, flags, strict=True):
                    key = (run.run_id, run.attempt)
                    self._held.pop(key, None)
                    if still:
                        self._given_back[key] = ("pending", self._clock())
        later = [r for r in todo if r.delay_seconds > 0]
        if later:
            await self._defer(worker, later)
        states: dict[int, str] = {}
        for run in runs:
            done = self._given_back.pop((run.run_id, run.attempt), None)
            if done is not None:
                states[run.run_id] = done[0]
        return releases.ReleaseResult(
            states=states, lost=frozenset(r.run_id for r in runs if r.run_id not in states)
        )

    async def _defer(self, worker: str, runs: Sequence[releases.Release]) -> None:
        """End the leases of ``runs`` in Redis (once), then write them to ``retry_wait``; those
        written go to ``_given_back``."""
        ending: dict[HotQueue, list[tuple[int, int]]] = collections.defaultdict(list)
        for run in runs:
            key = (run.run_id, run.attempt)
            holding = self._held.get(key)
            if holding is not None and key not in self._released:
                ending[holding.queue].append(key)
        await self._end_leases(ending)
        deferred = [r for r in runs if (r.run_id, r.attempt) in self._released]
        if not deferred:
            return
        tokens = [self._held[r.run_id, r.attempt].claim.token for r in deferred]
        async with self._pool().connection() as conn:
            cursor = await conn.execute(
                queries.get("hot_queue_defer"),
                {
                    "worker": worker,
                    "ids": [r.run_id for r in deferred],
                    "epochs": [token.epoch for token in tokens],
                    "attempts": [token.attempt for token in tokens],
                    "delays": [float(r.delay_seconds) for r in deferred],
                    "reasons": [r.reason for r in deferred],
                },
            )
            written = {row[0]: row[1] for row in await cursor.fetchall()}
        for run in deferred:
            key = (run.run_id, run.attempt)
            self._released.discard(key)
            self._held.pop(key, None)
            if run.run_id in written:
                self._given_back[key] = (written[run.run_id], self._clock())
