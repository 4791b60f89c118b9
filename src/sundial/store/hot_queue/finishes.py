"""Finishing an attempt the hot queue handed out: fenced in Redis first, then in PostgreSQL.

PostgreSQL no longer knows which attempt holds a run while it runs (the claim is in Redis), so
a write fenced on the attempt alone would accept a late finisher whose lease expired while
another attempt holds the run. Each finish first ends its lease in Redis only if the lease's
holder is its token (``HotQueue.release``); after that no reaper takes the run back and no
other attempt holds it. Then the outcomes released are written to PostgreSQL in one statement
(``sundial_finish_hot``), which requires the row still pending and its recorded token older
than the outcome's, takes it from pending to its next state in one row version, and decides
the next state, retries, attempt history and dependents as the PostgreSQL claim's finish does.
A finish whose lease was lost is written nowhere (``lost``).

The runner finishes through ``dispatch.HotDispatch``, which calls the two halves apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sundial.store import claims, queries
from sundial.store.hot_queue import Claim, HotQueue
from sundial.store.pool import Pool

__all__ = ["HotFinish", "finish", "record"]


class HotFinish(NamedTuple):
    """One attempt's outcome (``outcome.attempt`` is the token's attempt), the claim it ran
    under, and when it started (``None``: the finish's time)."""

    outcome: claims.Finish
    claim: Claim
    started_at: datetime | None = None


async def finish(
    pool: Pool, queue: HotQueue, worker: str, finishes: Sequence[HotFinish]
) -> claims.FinishResult:
    """Release each attempt's lease in Redis if it still holds it, then record the outcomes
    released in PostgreSQL; an attempt that lost its run is in ``lost`` and wrote nothing."""
    if not finishes:
        return claims.FinishResult()
    held = await queue.release([f.claim for f in finishes])
    released = [f for f, still in zip(finishes, held, strict=True) if still]
    return await record(pool, worker, released, [f.outcome for f in finishes])


async def record(
    pool: Pool, worker: str, released: Sequence[HotFinish], outcomes: Sequence[claims.Finish]
) -> claims.FinishResult:
    """The PostgreSQL half: write ``released`` (finishes whose Redis lease their attempt ended)
    in one statement; the result speaks for all ``outcomes``, the others ``lost``. Apart from
    ``finish`` so that a caller whose write failed after Redis released can write again without
    releasing again (a second release finds no lease and would call the attempt lost)."""
    if not released:
        return claims.finish_result(outcomes, [])
    written = [f.outcome._replace(attempt=f.claim.token.attempt) for f in released]
    params = claims.finish_parameters(worker, written)
    params["epochs"] = [f.claim.token.epoch for f in released]
    params["started"] = [f.started_at for f in released]
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("finish_hot"), params)
        rows = await cursor.fetchall()
        result = claims.finish_result(outcomes, rows)
        await claims.announce_released(conn, result)
    return result
