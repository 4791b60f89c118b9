"""The hot queue's reconciler: what the record says is pending, Redis must hold; what Redis
took back from a silent claimer, the record must say.

The outbox delivers every run that becomes pending, at least once; what it cannot cover is a
Redis that forgets after taking them (a restart without persistence, a failover that lost the
last acknowledged writes, a flush), or a process that died between a step in Redis and its
write to PostgreSQL (a finisher after its release, an expiry after it took the lease back).
``Reconciler.once`` walks the record's pending runs a page at a time and delivers again each
one Redis has held in no set (neither due nor leased) on two passes running: a run is briefly
in no set while its finish goes from Redis to PostgreSQL, and one pass would take that for a
loss. Before delivering, it raises the run's recorded token to the last attempt Redis handed
out under the epoch in force, so that attempt's finisher, if it is still on its way, is refused.

``expire_leases`` takes back the leases whose claimers stopped heartbeating and records each
lost attempt in PostgreSQL as running under its token with an ended lease; the reaper then
handles it as any lost lease (requeued with the lost-lease budget spent, or ended), and the
outbox delivers the requeued run again.

``Keeper`` runs both for every queue: a runner on the hot queue started with
``--maintenance`` (``runner.hot_queue``) and the maintainer given the hot queue's Redis (under
the leader lease) each hold one.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sundial.store import queries, reaper
from sundial.store.hot_queue import DueRun, HotQueue, redis_calls
from sundial.store.pool import Pool

__all__ = ["LOST_LEASE_OWNER", "Reconciler", "expire_leases"]

#: The lease owner recorded for an attempt whose lease the hot queue took back: Redis keeps
#: the attempt's token, not which worker held it.
LOST_LEASE_OWNER = "a hot-queue claimer"


class Reconciler:
    """Delivers again the pending runs Redis lost (``client``: a ``redis.asyncio.Redis``).
    Keeps, between passes, the runs it found in no set."""

    def __init__(self, pool: Pool, client: Any) -> None:
        self._pool = pool
        self._client = client
        self._missing: dict[int, int] = {}  # run id -> its record's attempt, last pass
        self._queues: dict[str, HotQueue] = {}

    def queue(self, name: str) -> HotQueue:
        """The hot queue ``name``, made once: making one registers (hashes) every script."""
        found = self._queues.get(name)
        if found is None:
            found = self._queues[name] = HotQueue(self._client, name)
        return found

    async def once(self, *, page: int = 1000) -> int:
        """One pass over the record's pending runs; return how many were made due again."""
        delivered, after = 0, 0
        missing: dict[int, int] = {}
        while True:
            async with self._pool.connection() as conn:
                cursor = await conn.execute(
                    queries.get("hot_queue_pending_page"), {"after": after, "limit": page}
                )
                rows = await cursor.fetchall()
            if not rows:
                self._missing = missing
                return delivered
            after = rows[-1][0]
            by_queue: dict[str, list[DueRun]] = defaultdict(list)
            for run_id, queue, namespace, handler, model, dispatch_key, attempt in rows:
                by_queue[queue].append(
                    DueRun.from_record(run_id, namespace, handler, model, dispatch_key, attempt)
                )
            for queue, runs in by_queue.items():
                hot_queue = self.queue(queue)
                lost = []
                for run in await hot_queue.held_nowhere(runs):
                    missing[run.id] = run.attempt
                    if self._missing.get(run.id) == run.attempt:
                        lost.append(run)
                if lost:
                    delivered += await self._deliver_again(hot_queue, lost)

    async def _deliver_again(self, hot_queue: HotQueue, lost: list[DueRun]) -> int:
        epoch = await hot_queue.epoch() or await hot_queue.renew_epoch(self._pool)
        handed_out = await hot_queue.attempts([run.id for run in lost])
        async with self._pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(
                queries.get("hot_queue_raise_tokens"),
                {
                    "epoch": epoch,
                    "ids": [run.id for run in lost],
                    "attempts": handed_out,
                },
            )
            pending = dict(await cursor.fetchall())
        again = [replace(run, attempt=pending[run.id]) for run in lost if run.id in pending]
        return await hot_queue.enqueue(again)


async def expire_leases(pool: Pool, queue: HotQueue, *, limit: int = 1000) -> int:
    """Take back up to ``limit`` ended leases, record their attempts as lost, and reap them;
    return how many attempts were recorded."""
    lost = [(run_id, token) for run_id, token in await queue.expire(limit) if token is not None]
    if not lost:
        return 0
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("hot_queue_lease_lost"),
            {
                "owner": LOST_LEASE_OWNER,
                "ids": [run_id for run_id, _ in lost],
                "epochs": [token.epoch for _, token in lost],
                "attempts": [token.attempt for _, token in lost],
            },
        )
        recorded = len(await cursor.fetchall())
    await reaper.reap(pool, limit=limit)
    return recorded


#: The least time between two passes of a ``Keeper``'s reconciler, however often it is asked:
#: a run is delivered again only when two passes running found it in no Redis set, and a
#: finish between its release in Redis and its write in PostgreSQL must not look like that
#: (a write slowed by a busy or restarting primary takes seconds).
RECONCILE_SECONDS = 10.0

#: The time between the two passes that follow a change of server (a restart, a replica
#: promoted): what that server forgot is given back within seconds instead of up to two
#: ``RECONCILE_SECONDS``. A finish slower than this between its release on the new server and
#: its write is taken for lost; its run runs again and that finish is refused (at least once,
#: as any lost lease), which only a finish in the first seconds of a new server can meet.
CHANGED_SERVER_SECONDS = 2.0


class Keeper:
    """Lease expiry for every queue with jobs, and the reconciler at most every
    ``RECONCILE_SECONDS``: what keeps Redis and the record in step beside the relays.

    It watches who the server is: on a restart or a promotion (the server may have forgotten
    runs it held) the reconciler passes at once and confirms ``CHANGED_SERVER_SECONDS`` later,
    where it would otherwise find the loss on its next pass and deliver only on the one after
    (measured: a failover's recovery was 16-33 s depending on where in the 10 s cycle it fell).
    """

    def __init__(
        self,
        pool: Pool,
        client: Any,
        *,
        clock: Callable[[], float] = time.monotonic,
        reconcile_seconds: float = RECONCILE_SECONDS,
        changed_server_seconds: float = CHANGED_SERVER_SECONDS,
    ) -> None:
        self._pool = pool
        self._clock = clock
        self._reconcile_seconds = reconcile_seconds
        self._changed_server_seconds = changed_server_seconds
        self._reconciler = Reconciler(pool, client)
        self._next_pass = -math.inf
        self._servers: dict[str, str] = {}  # queue -> the identity of the server it is on
        self._confirm_soon = False

    async def _queues(self) -> list[str]:
        async with self._pool.connection() as conn:
            cursor = await conn.execute(queries.get("hot_queue_queues"))
            return [row[0] for row in await cursor.fetchall()]

    async def expire(self, *, limit: int = 1000) -> int:
        """Take back the ended leases of every queue that has jobs; how many attempts were
        recorded as lost."""
        expired = 0
        with redis_calls():
            for queue in await self._queues():
                expired += await expire_leases(
                    self._pool, self._reconciler.queue(queue), limit=limit
                )
        return expired

    async def reconcile(self) -> int:
        """A reconciler pass if the last was ``RECONCILE_SECONDS`` ago, or at once when a
        queue's server changed since the last call; runs delivered again."""
        with redis_calls():
            if await self._server_changed():
                self._next_pass = min(self._next_pass, self._clock())
                self._confirm_soon = True
            if self._clock() < self._next_pass:
                return 0
            again = await self._reconciler.once()
        spacing = self._reconcile_seconds
        if self._confirm_soon:
            spacing, self._confirm_soon = self._changed_server_seconds, False
        self._next_pass = self._clock() + spacing
        return again

    async def _server_changed(self) -> bool:
        """Whether any queue's server is another than at the last call (not on the first)."""
        changed = False
        for queue in await self._queues():
            identity = await self._reconciler.queue(queue).server_identity()
            changed |= self._servers.get(queue, identity) != identity
            self._servers[queue] = identity
        return changed
