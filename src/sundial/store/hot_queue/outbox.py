"""The hot queue's outbox and its relay: how runs that become pending in PostgreSQL reach Redis.

A run becomes pending by many paths (inserted pending, promoted when due, released by its last
upstream, replayed, a retry's backoff over); each writes the run's row, and two triggers on
``job_runs`` (migration 0360) add an outbox entry in the same transaction, so no path can
forget the hot queue and nothing committed is lost between PostgreSQL and Redis. The relay
takes entries off the outbox and makes their runs due in Redis in one PostgreSQL transaction
that commits only after Redis took them: at least once, and Redis's enqueue is idempotent by
run id and ignores a delivery older than a claim it made since (``DueRun.attempt``).

The triggers are off unless a deployment turns the hot queue on (``switch``), so PostgreSQL
alone pays nothing for them. Turning it on also enters every run pending at that moment, in
the same transaction that enables the triggers (which holds off writers meanwhile), so no run
is stranded in PostgreSQL's queue.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from sundial.store import errors, queries
from sundial.store.hot_queue import DueRun, HotQueue
from sundial.store.pool import Connection, Pool

__all__ = [
    "Relay",
    "Relayed",
    "disagreement",
    "is_on",
    "mode_problem",
    "require_mode",
    "switch",
    "take",
]

#: The outbox's triggers on ``job_runs``.
TRIGGERS = ("job_runs_outbox_inserted", "job_runs_outbox_pending")

#: How long a relay's transaction may last (ms). Bounded so that a delivery read before a run
#: finished cannot arrive long after (``HotQueue.forget`` waits far longer than this).
RELAY_TIMEOUT_MS = 10_000


def switch(dsn: str, *, on: bool) -> bool:
    """Turn the outbox on or off, as ``job_runs``' owner (the DSN ``sundial migrate`` uses).

    On: the triggers are enabled and every run pending now is entered, in one transaction.
    Off: the triggers are disabled and the outbox emptied (PostgreSQL's claim serves the
    pending runs again), and every pending run is stamped with a new epoch: Redis may have
    handed out attempts of it that the record never counted, and PostgreSQL's claim must not
    hand the same fencing token out again (``ClaimedRun.fencing_token``). A database already
    in the asked state is left alone (no lock taken on ``job_runs``: the chart asks on every
    operator start); returns whether it changed. ``PermissionDeniedError`` when the DSN's role
    does not own the table; ``StoreUnavailableError`` when PostgreSQL cannot be reached."""
    verb = "ENABLE" if on else "DISABLE"
    try:
        with psycopg.connect(dsn) as conn, conn.transaction():
            states = conn.execute(queries.get("outbox_triggers")).fetchall()
            if len(states) == len(TRIGGERS) and all(enabled == on for _, enabled in states):
                return False
            for trigger in TRIGGERS:
                conn.execute(f"ALTER TABLE job_runs {verb} TRIGGER {trigger}")
            conn.execute("DELETE FROM hot_queue_outbox")
            if on:
                conn.execute(
                    "INSERT INTO hot_queue_outbox (run_id, namespace)"
                    " SELECT id, namespace FROM job_runs WHERE state = 'pending' ORDER BY id"
                )
            else:
                conn.execute(queries.get("hot_queue_off_epoch"))
        return True
    except psycopg.errors.InsufficientPrivilege as error:
        raise errors.PermissionDeniedError(
            f"{error}: turn the hot queue on or off with the DSN that migrates (the owner of"
            " job_runs)"
        ) from error
    except psycopg.OperationalError as error:
        raise errors.StoreUnavailableError(str(error)) from error


async def is_on(pool: Pool) -> bool:
    """True when both outbox triggers are enabled."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("outbox_triggers"))
        rows = await cursor.fetchall()
    return len(rows) == len(TRIGGERS) and all(enabled for _, enabled in rows)


def disagreement(on: bool, url_given: bool, *, component: str) -> str | None:
    """What to change when a process (``component``: "runner", "scheduler", ...) given a Redis
    URL or not (``url_given``) disagrees with the database's mode (``on``); None when they
    agree. The hot queue is on or off for a whole database: a runner claiming from the other
    place could start a run twice, a maintainer without Redis never takes back a dead runner's
    lease, one with Redis on a database that is off writes to a queue nobody reads."""
    if on and not url_given:
        return (
            "the hot queue is on for this database (`sundial migrate --hot-queue on`): "
            f"give the {component} its Redis with --hot-queue-url (SUNDIAL_HOT_QUEUE_URL), or "
            "turn it off with `sundial migrate --hot-queue off`"
        )
    if url_given and not on:
        return (
            "the hot queue is off for this database: turn it on with "
            f"`sundial migrate --hot-queue on`, or start the {component} without --hot-queue-url"
        )
    return None


async def mode_problem(pool: Pool, *, url_given: bool, component: str) -> str | None:
    """``disagreement`` with the database's mode as it is now."""
    return disagreement(await is_on(pool), url_given, component=component)


async def require_mode(pool: Pool, *, url_given: bool, component: str) -> None:
    """``HotQueueModeError`` (what to change) unless the database's mode is the process's."""
    problem = await mode_problem(pool, url_given=url_given, component=component)
    if problem is not None:
        raise errors.HotQueueModeError(problem)


@dataclass(frozen=True)
class Relayed:
    """What one pass of the relay moved: the runs its entries named, and of those the runs
    still pending, delivered to Redis (a repeated delivery changes nothing there)."""

    runs: int
    delivered: int


class Relay:
    """Moves outbox entries to Redis (``client``: a ``redis.asyncio.Redis``). Any number may run
    side by side (each takes different entries); a pass that fails leaves its entries."""

    def __init__(self, pool: Pool, client: Any) -> None:
        self._pool = pool
        self._client = client
        self._queues: dict[str, HotQueue] = {}

    def _queue(self, name: str) -> HotQueue:
        if name not in self._queues:
            self._queues[name] = HotQueue(self._client, name)
        return self._queues[name]

    async def once(self, limit: int = 1000) -> Relayed:
        """Take up to ``limit`` entries and make their pending runs due."""
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL statement_timeout = {RELAY_TIMEOUT_MS}")
            await conn.execute(
                f"SET LOCAL idle_in_transaction_session_timeout = {RELAY_TIMEOUT_MS}"
            )
            named, due = await take(conn, limit)
            await self.deliver(due)
        return Relayed(runs=named, delivered=sum(len(runs) for runs in due.values()))

    async def deliver(self, due: Mapping[str, Sequence[DueRun]]) -> None:
        """Make runs due in Redis, by queue (idempotent)."""
        for queue, runs in due.items():
            await self._queue(queue).enqueue(runs)


async def take(conn: Connection, limit: int) -> tuple[int, dict[str, list[DueRun]]]:
    """In the caller's transaction: delete up to ``limit`` entries; return how many runs they
    named and, by queue, those still pending as Redis takes them."""
    cursor = await conn.execute(queries.get("outbox_take"), {"limit": limit})
    rows = await cursor.fetchall()
    due: dict[str, list[DueRun]] = defaultdict(list)
    for run_id, queue, namespace, handler, model, dispatch_key, attempt in rows:
        if queue is None:
            continue  # no longer pending: nothing to make due
        due[queue].append(
            DueRun.from_record(run_id, namespace, handler, model, dispatch_key, attempt)
        )
    return len(rows), dict(due)
