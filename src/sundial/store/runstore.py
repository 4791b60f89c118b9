"""``RunStore``: the interface the runner and operator program against, and its PostgreSQL form.

The seed moves the hot queue to Redis sorted sets beyond ~10-20K dispatches/s, with
PostgreSQL staying the system of record. Callers that hold a ``RunStore`` rather than a pool
keep that step possible: a Redis-backed store would implement the same methods. The
PostgreSQL implementation is a thin binding of a pool and a worker identity to the
module-level functions (``runs``, ``claims``, ``reaper``), which remain usable directly.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from sundial.store import claims, reaper, runs
from sundial.store.pool import Pool

__all__ = ["PostgresRunStore", "RunStore"]


class RunStore(Protocol):
    async def submit(
        self,
        job: uuid.UUID | str,
        *,
        args: Mapping[str, Any] | None = None,
        priority: int | None = None,
        run_at: datetime | None = None,
        delay_seconds: float = 0.0,
        idempotency_key: str | None = None,
        depends_on: Sequence[int] = (),
    ) -> runs.Submitted: ...

    async def submit_many(
        self, job: uuid.UUID | str, items: Sequence[runs.BatchItem]
    ) -> list[runs.Submitted]: ...

    async def claim(
        self,
        *,
        queues: Sequence[str],
        handlers: Sequence[str] | None = None,
        execution_models: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[claims.ClaimedRun]: ...

    async def heartbeat(self, runs: Sequence[tuple[int, int]]) -> claims.HeartbeatResult: ...

    async def finish(self, outcomes: Sequence[claims.Outcome]) -> claims.FinishResult: ...

    async def cancel(self, run_id: int) -> runs.CancelResult: ...

    async def replay(self, run_id: int) -> int: ...

    async def get(self, run_id: int) -> runs.RunInfo | None: ...


class PostgresRunStore:
    """A ``RunStore`` on a psycopg pool, for one worker identity and lease length."""

    def __init__(
        self,
        pool: Pool,
        *,
        worker: str,
        lease_seconds: float = claims.DEFAULT_LEASE_SECONDS,
    ) -> None:
        self.pool = pool
        self.worker = worker
        self.lease_seconds = lease_seconds

    async def submit(
        self,
        job: uuid.UUID | str,
        *,
        args: Mapping[str, Any] | None = None,
        priority: int | None = None,
        run_at: datetime | None = None,
        delay_seconds: float = 0.0,
        idempotency_key: str | None = None,
        depends_on: Sequence[int] = (),
    ) -> runs.Submitted:
        return await runs.submit(
            self.pool,
            job,
            args=args,
            priority=priority,
            run_at=run_at,
            delay_seconds=delay_seconds,
            idempotency_key=idempotency_key,
            depends_on=depends_on,
        )

    async def submit_many(
        self, job: uuid.UUID | str, items: Sequence[runs.BatchItem]
    ) -> list[runs.Submitted]:
        return await runs.submit_many(self.pool, job, items)

    async def claim(
        self,
        *,
        queues: Sequence[str],
        handlers: Sequence[str] | None = None,
        execution_models: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[claims.ClaimedRun]:
        return await claims.claim(
            self.pool,
            self.worker,
            queues=queues,
            handlers=handlers,
            execution_models=execution_models,
            limit=limit,
            lease_seconds=self.lease_seconds,
        )

    async def heartbeat(self, runs: Sequence[tuple[int, int]]) -> claims.HeartbeatResult:
        return await claims.heartbeat(
            self.pool, self.worker, runs, lease_seconds=self.lease_seconds
        )

    async def finish(self, outcomes: Sequence[claims.Outcome]) -> claims.FinishResult:
        return await claims.finish(self.pool, self.worker, outcomes)

    async def cancel(self, run_id: int) -> runs.CancelResult:
        return await runs.cancel(self.pool, run_id)

    async def replay(self, run_id: int) -> int:
        return await runs.replay(self.pool, run_id)

    async def get(self, run_id: int) -> runs.RunInfo | None:
        return await runs.get(self.pool, run_id)

    async def reap(self) -> reaper.ReapResult:
        return await reaper.reap(self.pool)

    async def promote_due(self) -> int:
        return await reaper.promote_due(self.pool)
