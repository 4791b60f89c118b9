"""Give claimed runs back without counting a failed attempt.

A release is not a failure: the runner is draining (SIGTERM), the run's dependency has an open
circuit breaker, or a process pool was restarted under the run through no fault of its own.
``release`` changes a run only where ``(id, attempt)`` and the lease owner still match and the
run is still running — the same fence as ``claims.finish`` — and leaves ``retries_used`` and
``infra_retries_used`` alone. The attempt number keeps its value (the fencing token only
grows; the next claim increments it).

    releases.release(pool, worker, [Release(run_id, attempt, delay_seconds, reason)])
        -> ReleaseResult(states, lost)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from sundial.api import error_text
from sundial.store import queries
from sundial.store.pool import Pool

__all__ = ["Release", "ReleaseResult", "release"]


class Release(NamedTuple):
    run_id: int
    attempt: int
    delay_seconds: float = 0.0  # 0: pending now; > 0: retry_wait until then
    reason: str = "released by its worker"


@dataclass(frozen=True)
class ReleaseResult:
    states: dict[int, str] = field(default_factory=dict)  # run id -> pending | retry_wait
    lost: frozenset[int] = frozenset()  # not ours any more: nothing changed


async def release(pool: Pool, worker: str, runs: Sequence[Release]) -> ReleaseResult:
    """Release ``runs`` in one statement; see the module docstring for the fence."""
    if not runs:
        return ReleaseResult()
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("release"),
            {
                "worker": worker,
                "ids": [r.run_id for r in runs],
                "attempts": [r.attempt for r in runs],
                "delays": [max(0.0, float(r.delay_seconds)) for r in runs],
                "reasons": [error_text.truncate(r.reason) for r in runs],
            },
        )
        rows = await cursor.fetchall()
    states = {run_id: state for run_id, state in rows}
    return ReleaseResult(
        states=states, lost=frozenset(r.run_id for r in runs if r.run_id not in states)
    )
