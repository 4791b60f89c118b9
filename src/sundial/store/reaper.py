"""Maintenance of the hot table: rescue runs whose worker vanished; promote runs now due.

``reap`` finds running runs whose lease expired by the database clock and returns them to
``pending`` (their next claim increments ``attempt``, so the vanished worker's late writes are
fenced out), or ends them — ``dead_lettered`` when the retries are spent, ``cancelled`` when a
cancel was requested — failing their dependents in the same transaction. Each expiry is
recorded in the attempt history, which is what the "lease expiries" metric counts.

``promote_due`` moves ``scheduled`` and ``retry_wait`` runs whose ``run_at`` has come into
``pending``, i.e. into the dispatch index; keeping future-dated runs out of that index keeps
the claim scan short (docs/adr/0001-run-store-schema.md). Both are safe to run from several
processes at once (SKIP LOCKED); normally the operator's leader runs them every second or so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sundial.scheduling import run_state
from sundial.store import attempts, dependencies, queries
from sundial.store.pool import Pool

__all__ = ["ReapResult", "promote_due", "reap"]


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
    return ReapResult(requeued=frozenset(requeued), ended=ended)


async def promote_due(pool: Pool, *, limit: int = 10_000) -> int:
    """Move due ``scheduled``/``retry_wait`` runs to ``pending``; return how many moved."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("promote_due"), {"limit": limit})
        return cursor.rowcount
