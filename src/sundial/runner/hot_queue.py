"""A runner on the hot queue: which dispatch it uses, and the relay it runs beside its claims.

The hot queue is on or off for a whole database (``sundial migrate --hot-queue on``: the
outbox's triggers). A runner must agree with it: one claiming from PostgreSQL beside runners
claiming from Redis could start a run twice (only one finish would be accepted, but both would
have run), and one claiming from Redis with the outbox off would wait for runs that never
arrive. So a runner whose setting disagrees with the database does not start, and says which
to change; and a runner already serving checks again every ``MODE_CHECK_SECONDS`` (the mode
is switched while old runners still serve, as a chart upgrade does), stops claiming when the
database changed, finishes what it holds and exits 1 with the same message.

Every runner on the hot queue relays (outbox to Redis): relays side by side take different
entries (``SKIP LOCKED``), so the relay's throughput grows with the runners and no single
process is a point of failure. A relay that found the outbox empty does not look again every
``RELAY_IDLE_SECONDS``: a transaction 50 times a second per runner cost an idle PostgreSQL
11-19 ms of CPU per second per runner, and the runner 42-60 (docs/adr/0024-hot-queue-move.md).
It waits to be woken by a NOTIFY the runner's listener hears (the runs' insert, the
maintainer's promotion, a finish that released dependents: ``claims.announce_released``) and
meanwhile looks again at intervals that double up to ``RELAY_IDLE_MAX_SECONDS``, the time a run
made pending unannounced waits at most, as PostgreSQL's own claim loop polls. A runner that
maintains the store (``--maintenance``) also takes back expired leases and delivers again what
Redis lost (``reconciler``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from sundial.store import dispatch, reconnect
from sundial.store.hot_queue import open_client, outbox, reconciler
from sundial.store.pool import Pool

__all__ = [
    "MODE_CHECK_SECONDS",
    "REDIS_ERRORS",
    "RELAY_BATCH",
    "RELAY_IDLE_MAX_SECONDS",
    "RELAY_IDLE_SECONDS",
    "Relaying",
    "dispatch_for",
    "mode_problem",
]

log = logging.getLogger("sundial.runner.hot_queue")

try:  # the redis extra: a runner on PostgreSQL alone does not need it
    from redis import exceptions as _redis_exceptions
except ImportError:  # pragma: no cover - the image installs the extra
    REDIS_ERRORS: tuple[type[Exception], ...] = ()
else:
    #: Redis's transient failures, retried by the loops as PostgreSQL's outages are.
    REDIS_ERRORS = (_redis_exceptions.ConnectionError, _redis_exceptions.TimeoutError)

#: Outbox entries a relay moves per transaction.
RELAY_BATCH = 1000
#: How long a relay that moved less than a batch waits before looking again: what arrives
#: meanwhile goes in the next transaction.
RELAY_IDLE_SECONDS = 0.02
#: The longest a relay that keeps finding the outbox empty waits between looks when nothing
#: wakes it.
RELAY_IDLE_MAX_SECONDS = 1.0
#: How often a serving runner checks that the database's mode is still its own.
MODE_CHECK_SECONDS = 5.0


async def dispatch_for(
    pool: Callable[[], Pool], url: str | None
) -> tuple[dispatch.Dispatch, Any | None]:
    """The dispatch the database's mode asks for, and the Redis client it uses (None on
    PostgreSQL alone); ``HotQueueModeError`` when ``url`` disagrees with the database."""
    await outbox.require_mode(pool(), url_given=url is not None, component="runner")
    if url is None:
        return dispatch.PostgresDispatch(pool), None
    from sundial.store.hot_queue.dispatch import HotDispatch

    client = open_client(url)
    return HotDispatch(pool, client), client


async def mode_problem(pool: Pool, *, hot: bool) -> str | None:
    """What to change, when the database's mode is no longer the one a runner serving on the
    hot queue (``hot``) or on PostgreSQL alone started with; None while they agree."""
    return await outbox.mode_problem(pool, url_given=hot, component="runner")


class Relaying:
    """The relay and, for a maintaining runner, the lease expiry and the reconciler."""

    def __init__(
        self,
        pool: Callable[[], Pool],
        client: Any,
        *,
        delivered: Callable[[], None],
        on_connection: Callable[[BaseException | None], None],
        woken: asyncio.Event | None = None,
    ) -> None:
        """``delivered`` is called after a relay made runs due (the runner claims at once);
        ``on_connection`` gets each success (None) or outage, as the runner's other loops;
        ``woken`` is set when runs may have become pending (the relay looks at once)."""
        self._pool = pool
        self._client = client
        self._delivered = delivered
        self._woken = woken if woken is not None else asyncio.Event()
        self._on_connection = on_connection
        self._keeper = reconciler.Keeper(pool(), client)

    async def relay(self) -> None:
        """Move outbox entries to Redis for ever: at once while a pass fills its batch, after
        ``RELAY_IDLE_SECONDS`` while passes find some, and once woken or after an interval
        that doubles up to ``RELAY_IDLE_MAX_SECONDS`` while they find none."""
        retry = reconnect.Backoff("hot queue relay failed; retrying", logger=log)
        relay = outbox.Relay(self._pool(), self._client)
        idle = RELAY_IDLE_SECONDS
        while True:
            self._woken.clear()
            try:
                moved = await relay.once(RELAY_BATCH)
                retry.succeeded()
            except (*reconnect.ERRORS, *REDIS_ERRORS) as error:
                self._on_connection(error)
                await asyncio.sleep(retry.failed(error))
                relay = outbox.Relay(self._pool(), self._client)
                continue
            if moved.delivered:
                self._delivered()
            if moved.runs >= RELAY_BATCH:
                idle = RELAY_IDLE_SECONDS
                continue
            await asyncio.sleep(RELAY_IDLE_SECONDS)
            if moved.runs:
                idle = RELAY_IDLE_SECONDS
                continue
            idle = min(idle * 2, RELAY_IDLE_MAX_SECONDS)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), idle - RELAY_IDLE_SECONDS)

    async def maintain_once(self) -> tuple[int, int]:
        """Take back expired leases (recorded as lost, then reaped) and, at most every
        ``reconciler.RECONCILE_SECONDS``, deliver again what Redis held nowhere on two
        passes; how many of each."""
        return await self._keeper.expire(), await self._keeper.reconcile()
