"""The history of attempts that did not succeed: one row per failed, timed-out, crashed,
cancelled or lease-expired attempt, in month partitions (retention is DROP PARTITION).

The attempt that completes a run writes no row — the run row describes it — so the common
path (claim, succeed) costs no extra insert. ``sundial_record_attempts`` creates the month's
partition the first time a row needs it, so a long-running process never fails at a month
boundary. ``claims.finish`` records through the same function inside ``sundial_finish``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sundial.store import queries
from sundial.store.pool import Connection

__all__ = ["EndedAttempt", "record"]


@dataclass(frozen=True)
class EndedAttempt:
    run_id: int
    attempt: int
    worker: str | None
    started_at: datetime | None
    outcome: str
    failure_reason: str | None
    error: str | None


async def record(conn: Connection, ended: list[EndedAttempt]) -> None:
    """Insert ``ended`` in the caller's transaction."""
    if not ended:
        return
    params = {
        "run_ids": [a.run_id for a in ended],
        "attempts": [a.attempt for a in ended],
        "workers": [a.worker for a in ended],
        "started_ats": [a.started_at for a in ended],
        "outcomes": [a.outcome for a in ended],
        "failure_reasons": [a.failure_reason for a in ended],
        "errors": [a.error for a in ended],
    }
    await conn.execute(queries.get("record_attempts"), params)
