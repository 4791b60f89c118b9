"""What a runner does with runs, behind one interface: claim, heartbeat, finish, give back.

Two implementations keep the same contract (``sundial.store.claims``' guarantees: one claim
per attempt, fenced writes, consequences in the finish's transaction):

* ``PostgresDispatch``: every step a statement on ``job_runs`` (the default);
* ``sundial.store.hot_queue.dispatch.HotDispatch``: claims, heartbeats and give-backs in
  Redis, the finish fenced in Redis and then in PostgreSQL (docs/adr/0024-hot-queue-move.md).

The runner holds one and never learns which; the pod launcher claims from PostgreSQL in
either mode (its runs never enter Redis).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from sundial.store import claims, releases
from sundial.store.pool import Pool

__all__ = ["Dispatch", "PostgresDispatch"]


class Dispatch(Protocol):
    """The runner's side of a run, as ``sundial.store.claims`` and ``releases`` define it."""

    #: Whether ``claim`` uses ``floors`` (``claims.ClaimFloors``): only PostgreSQL's claim
    #: walks an index past dead entries.
    uses_floors: bool

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
        floors: Mapping[str, float] | None,
        weights: Mapping[str, float] | None,
        held: Mapping[str, int] | None,
        reserved: int,
    ) -> list[claims.ClaimedRun]: ...

    async def heartbeat(
        self, worker: str, runs: Sequence[tuple[int, int]], *, lease_seconds: float
    ) -> claims.HeartbeatResult: ...

    async def finish(
        self, worker: str, outcomes: Sequence[claims.Finish]
    ) -> claims.FinishResult: ...

    async def release(
        self, worker: str, runs: Sequence[releases.Release]
    ) -> releases.ReleaseResult: ...


class PostgresDispatch:
    """Every step a statement on PostgreSQL (``claims``, ``releases``)."""

    uses_floors = True

    def __init__(self, pool: Callable[[], Pool]) -> None:
        """``pool``: the runner's pool, asked for at each call (it may be reopened)."""
        self._pool = pool

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
        floors: Mapping[str, float] | None,
        weights: Mapping[str, float] | None,
        held: Mapping[str, int] | None,
        reserved: int,
    ) -> list[claims.ClaimedRun]:
        return await claims.claim(
            self._pool(),
            worker,
            queues=queues,
            handlers=handlers,
            execution_models=execution_models,
            registered_model=registered_model,
            limit=limit,
            lease_seconds=lease_seconds,
            namespaces=namespaces,
            floors=floors,
            weights=weights,
            held=held,
            reserved=reserved,
        )

    async def heartbeat(
        self, worker: str, runs: Sequence[tuple[int, int]], *, lease_seconds: float
    ) -> claims.HeartbeatResult:
        return await claims.heartbeat(self._pool(), worker, runs, lease_seconds=lease_seconds)

    async def finish(self, worker: str, outcomes: Sequence[claims.Finish]) -> claims.FinishResult:
        return await claims.finish(self._pool(), worker, outcomes)

    async def release(
        self, worker: str, runs: Sequence[releases.Release]
    ) -> releases.ReleaseResult:
        return await releases.release(self._pool(), worker, runs)
