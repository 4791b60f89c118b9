"""Maintenance of the hot table: rescue runs whose worker vanished; promote runs now due.

``reap`` finds running runs whose lease expired by the database clock and returns them to
``pending`` (their next claim increments ``attempt``, so the vanished worker's late writes are
fenced out), or ends them — ``dead_lettered`` when the retries are spent, ``cancelled`` when a
cancel was requested — failing their dependents in the same transaction. Each expiry is
recorded in the attempt history, which is what the "lease expiries" metric counts.

``promote_due`` moves ``scheduled`` and ``retry_wait`` runs whose ``run_at`` has come into
``pending``, i.e. into the dispatch index; keeping future-dated runs out of that index keeps
the claim scan short (docs/adr/0001-run-store-schema.md). Both are safe to run from several
processes at once (SKIP LOCKED); the maintainer of the process holding the leader lease runs
them every second or so (``sundial.scheduler.maintainer``), a ``sundial runner --maintenance``
where there is no scheduler.

Runs made ``pending`` by an UPDATE wake no runner by themselves (migration 0020 notifies on
INSERT only), so both announce on ``WAKEUP_CHANNEL`` when they made any run claimable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sundial.scheduling import run_state
from sundial.store import attempts, dependencies, queries
from sundial.store.pool import Connection, Pool

__all__ = ["WAKEUP_CHANNEL", "ReapResult", "announce", "promote_due", "reap"]

#: The channel runners LISTEN on (migration 0020); an empty payload wakes every queue.
WAKEUP_CHANNEL = "sundial_runs"


@dataclass(frozen=True)
class ReapResult:
    requeued: frozenset[int] = frozenset()
    ended: dict[int, str] = field(default_factory=dict)  # run id -> dead_lettered | cancelled

    @property
    def lease_expiries(self) -> int:
        return len(self.requeued) + len(self.ended)


async def reap(pool: Pool, *, limit: int = 1000) -> ReapResult:
    """Handle up to ``limit`` expired leases in one transaction."""
    async with pool.connection() as conn, conn.transaction():
        cursor = await conn.execute(queries.get("reap_expired_leases"), {"limit": limit})
        rows = await cursor.fetchall()
        requeued: set[int] = set()
        ended: dict[int, str] = {}
        doomed: dict[int, str] = {}
        history: list[attempts.EndedAttempt] = []
        for run_id, attempt, state, has_dependents, started_at, owner, error in rows:
            history.append(
                attempts.EndedAttempt(
                    run_id, attempt, owner, started_at, state, "lease_expired", error
                )
            )
            if state == run_state.RunState.PENDING:
                requeued.add(run_id)
            else:
                ended[run_id] = state
                if has_dependents:
                    doomed[run_id] = state
        await dependencies.fail_dependents(conn, doomed)
        await attempts.record(conn, history)
        if requeued:
            await announce(conn)
    return ReapResult(requeued=frozenset(requeued), ended=ended)


async def promote_due(pool: Pool, *, limit: int = 10_000) -> int:
    """Move due ``scheduled``/``retry_wait`` runs to ``pending``, those of a concurrency key
    while their key has room; return how many moved."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("promote_due"), {"limit": limit})
        promoted = cursor.rowcount
        promoted += await _promote_keyed(conn, limit)
        if promoted > 0:
            await announce(conn)
        return promoted


async def _promote_keyed(conn: Connection, limit: int) -> int:
    # A probe of an empty partial index when no job names a key: no lock, no second statement.
    cursor = await conn.execute(queries.get("keyed_waiting_exists"))
    row = await cursor.fetchone()
    if not (row and row[0]):
        return 0
    async with conn.transaction():
        await conn.execute(queries.get("promote_keyed_lock"))
        cursor = await conn.execute(queries.get("promote_keyed"), {"limit": limit})
        return cursor.rowcount


async def announce(conn: Connection) -> None:
    """Wake every runner listening on ``WAKEUP_CHANNEL`` (the empty payload: every queue)."""
    await conn.execute("SELECT pg_notify(%s, '')", (WAKEUP_CHANNEL,))
