"""The worker's side of a run: claim a batch, heartbeat it, finish it — all fenced.

Guarantees:

* **Exactly one claim.** ``claim`` is one ``UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)``
  statement: under any number of concurrent claimers a pending run goes to one of them, and
  its ``attempt`` grows by one. The attempt is the fencing token handed to the job.
* **Fenced writes.** ``heartbeat`` and ``finish`` change a run only where ``(id, attempt)``
  and the lease owner still match and the run is still running. A run they did not change is
  reported in ``lost`` — the caller must discard that result, never treat it as success.
* **Same-transaction consequences.** ``finish`` releases or fails dependent runs and records
  failed attempts in the transaction that records the outcome, so no crash can separate them.
* **One clock.** Lease expiry and due-ness use the database's ``now()``, so machines with
  skewed clocks agree on who holds what.

A worker serves ``queues`` and, optionally, only some ``handlers`` (names it has registered)
or ``execution_models`` (the pod launcher claims ``pod`` runs). A run whose model is not set
(NULL: the handler's registration decides, ``sundial.api.execution_model``) goes only to a
claimer that passes ``registered_model=True``: one whose ``handlers`` are registered under the
``execution_models`` it asks for.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import psycopg

from sundial.scheduling import failures
from sundial.store import queries, reaper
from sundial.store.pool import Connection, Pool

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "FULL_CLAIM_SECONDS",
    "INDEX_ORDER_ONLY",
    "RESERVE_FROM_SLOTS",
    "ClaimFloors",
    "ClaimedRun",
    "Finish",
    "FinishResult",
    "HeartbeatResult",
    "announce_released",
    "claim",
    "fetch_in_index_order",
    "finish",
    "finish_parameters",
    "finish_result",
    "heartbeat",
]

DEFAULT_LEASE_SECONDS = 30.0
#: A claimer (a runner's executor, the pod launcher) of fewer slots keeps none ``reserved``:
#: one slot would be too large a part of it (ADR 0049).
RESERVE_FROM_SLOTS = 8


class ClaimedRun(NamedTuple):
    """A run this worker now holds. A named tuple, not a dataclass: a claim builds hundreds
    per batch, and a tuple is built in C from the database row."""

    id: int
    attempt: int  # which claim of the run this is; finish with it
    job_id: uuid.UUID
    queue: str
    handler: str
    execution_model: str | None  # None: the handler's registration decides
    args: Any
    timeout_seconds: int | None  # None: the handler's registration decides, else the default
    schedule_id: uuid.UUID | None
    fire_time: datetime | None
    idempotency_key: str  # per run, not per attempt ("run:<id>" when none was given)
    lease_until: datetime
    priority: int
    run_at: datetime
    max_retries: int
    retries_used: int
    backoff_base_seconds: float
    backoff_cap_seconds: float
    cancel_requested: bool
    #: The namespace of the run's job (a tenant boundary: a runner serves some namespaces).
    #: None only for a run inserted by a process older than the column.
    namespace: str | None = None
    #: The job's ``spec.dependency``: its circuit-breaker key, named in the manifest (None: the
    #: job names none, and the handler's registered dependency, if any, is the key).
    dependency: str | None = None
    #: The hot queue's epoch the attempt was handed out under (``hot_epoch``), 0 when no
    #: Redis ever held the run. On PostgreSQL alone it is the row's last epoch, unchanged.
    epoch: int = 0

    @property
    def fencing_token(self) -> int:
        """What a handler guards its side effects with: ``(epoch << 32) | attempt``. An
        attempt number can repeat after a Redis that lost its data started a new epoch (the
        claims it handed out under the old one were never recorded); the token cannot, since
        every epoch PostgreSQL issues is greater than the last. With no hot queue it is the
        attempt."""
        return (self.epoch << 32) | self.attempt


#: Planner settings for the statements that take runs from the head of the queue, in their own
#: transaction. Over a backlog that grew faster than the statistics (autovacuum's analyze comes
#: once a naptime, a minute by default), the planner takes the pending indexes for nearly
#: empty; it then read the whole backlog (318,592 runs), three times, and sorted it to claim 37:
#: 60-1,000 ms a claim, and completions fell from 3,941/s to 156/s. With sorts and bitmap scans
#: off, only the walks in index order remain, which read what they return
#: (docs/adr/0050-claims-under-a-deep-backlog.md).
INDEX_ORDER_ONLY = "SET LOCAL enable_sort = off; SET LOCAL enable_bitmapscan = off"
#: The same settings as one SELECT (``set_config(..., is_local => true)``), which can share a
#: pipeline with the statement they are for (``fetch_in_index_order``).
_INDEX_ORDER_ONLY_SELECT = (
    "SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true)"
)
#: How often a claimer with floors walks every namespace from its head again.
FULL_CLAIM_SECONDS = 1.0
#: Below the highest key claimed: runs that share it (a batch submitted in one statement shares
#: its run_at) stay above the floor whatever the rounding of a float epoch.
_FLOOR_SLACK = 0.001


class ClaimFloors:
    """Where a busy claimer's next claim starts in each namespace.

    A claim walks a namespace's pending runs in dispatch order from its head. A run claimed
    leaves its index entry behind until a vacuum, so with a backlog the head is a growing
    stretch of dead entries that every claim steps over again: with PostgreSQL's default
    autovacuum (once a minute) 240,000 to 480,000 of them at 4,000-8,000 runs/s, 1,757 index
    pages read per claim, and throughput fell to a quarter
    (docs/adr/0050-claims-under-a-deep-backlog.md). After a claim that filled up,
    everything this claimer may take in a namespace is at or past the highest key it just
    claimed there, except runs that arrive below it since (a higher priority, a delay that came
    due); so the next claim starts there. A claim that found fewer runs than it asked for, and
    one claim every ``full_every`` seconds, walk from the head again: such a run waits at most
    that long."""

    def __init__(
        self, full_every: float = FULL_CLAIM_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._full_every = full_every
        self._clock = clock
        self._floors: dict[str, float] = {}
        self._next_full = -math.inf

    def for_claim(self) -> dict[str, float] | None:
        """The floors for the next claim; ``None``: walk every namespace from its head."""
        if not self._floors:
            return None
        now = self._clock()
        if now >= self._next_full:
            self._floors.clear()
            return None
        return self._floors

    def claimed(self, runs: Sequence[ClaimedRun], limit: int, floored: bool) -> None:
        """Record what the claim (``floored``: made with floors) returned for ``limit``."""
        if len(runs) < limit:
            self._floors = {}
            return
        if not floored:
            self._next_full = self._clock() + self._full_every
            self._floors = {}
        floors = self._floors
        for run in runs:
            if run.namespace is None:
                continue
            # sundial_dispatch_key(run_at, priority): each priority level is worth 60 s.
            key = run.run_at.timestamp() - run.priority * 60.0 - _FLOOR_SLACK
            if key > floors.get(run.namespace, -math.inf):
                floors[run.namespace] = key


class Finish(NamedTuple):
    """What one fenced finish writes for an attempt: a plain record. What it says (the failure
    class, the error text, the retry's delay) is decided above the store
    (``sundial.attempt.finishes``); the store only writes it."""

    run_id: int
    attempt: int
    failure: failures.FailureClass | None = None  # None: succeeded
    error: str | None = None
    retry_delay_seconds: float = 0.0  # used only if the run is retried
    #: What exactly failed, finer than ``failure`` (BadArgs, UnknownHandler …): the run's
    #: ``failure_detail``, shown as a JobRun's reason and by `sundial runs`. None: no detail.
    detail: str | None = None


@dataclass(frozen=True)
class HeartbeatResult:
    extended: dict[int, datetime] = field(default_factory=dict)  # run id -> new lease_until
    cancel_requested: frozenset[int] = frozenset()
    lost: frozenset[int] = frozenset()  # stop working on these: another attempt owns them


@dataclass(frozen=True)
class FinishResult:
    states: dict[int, str] = field(default_factory=dict)  # run id -> state it is in now
    lost: frozenset[int] = frozenset()  # discarded: the lease was lost before the write
    released: dict[int, str] = field(default_factory=dict)  # dependents whose state changed


async def claim(
    pool: Pool,
    worker: str,
    *,
    queues: Sequence[str] = ("default",),
    handlers: Sequence[str] | None = None,
    execution_models: Sequence[str] | None = None,
    registered_model: bool = False,
    limit: int = 10,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    namespaces: Sequence[str] | None = None,
    excluded_namespaces: Sequence[str] | None = None,
    floors: Mapping[str, float] | None = None,
    weights: Mapping[str, float] | None = None,
    held: Mapping[str, int] | None = None,
    reserved: int = 0,
) -> list[ClaimedRun]:
    """Claim up to ``limit`` due runs (size it to free slots): dealt round-robin over the
    namespaces that have some, by aged priority within each (queries/claim.sql).

    ``namespaces``: claim only runs of jobs in these namespaces (None: every namespace). Each
    namespace is a tenant boundary, so a runner that serves one team never runs another's.
    ``excluded_namespaces``: none of these, whatever ``namespaces`` says (a claimer with no room
    left for them, as the pod launcher at a namespace's Pod limit).

    ``floors``: per namespace, a dispatch key below which this claimer expects nothing it may
    take (``ClaimFloors``): the claim starts its walk of that namespace there, past the index
    entries of runs claimed since the last vacuum.

    ``weights``: per namespace, its share of the slots against the others' (a namespace not
    named weighs 1): weights 3 and 1 give three runs to one for as long as both have runs.

    ``held``: per namespace, the runs this claimer holds: claimed, and their finish not yet
    committed. They count as shares it had, so the slots freed one at a time beside a flood go
    first to the namespace it holds least of for its weight, not to a draw.

    ``reserved``: of the ``limit`` slots, how many take only runs of a namespace that, with
    them, still holds no more than the one ``held`` has most of (for their weights); the one
    held most fills ``limit - reserved`` at most."""
    if limit <= 0:
        return []
    if not 0 <= reserved <= limit:
        raise ValueError(f"reserved slots must be between 0 and the limit {limit}, got {reserved}")
    if weights and not all(0 < weight < math.inf for weight in weights.values()):
        raise ValueError(f"namespace weights must be numbers above 0, got {dict(weights)}")
    async with pool.connection() as conn:
        rows = await fetch_in_index_order(
            conn,
            queries.get("claim"),
            {
                "worker": worker,
                "queues": list(queues),
                "handlers": None if handlers is None else list(handlers),
                "execution_models": None if execution_models is None else list(execution_models),
                "unset_model": registered_model,
                "limit": limit,
                "lease_seconds": float(lease_seconds),
                "namespaces": None if namespaces is None else list(namespaces),
                "excluded": list(excluded_namespaces) if excluded_namespaces else None,
                "floor_namespaces": list(floors) if floors else None,
                "floor_keys": list(floors.values()) if floors else None,
                "weight_namespaces": list(weights) if weights else None,
                "weights": [float(w) for w in weights.values()] if weights else None,
                "held_namespaces": list(held) if held else None,
                "held": [int(count) for count in held.values()] if held else None,
                "reserved": reserved,
            },
        )
    return [ClaimedRun._make(row) for row in rows]


async def fetch_in_index_order(
    conn: psycopg.AsyncConnection[Any], sql: str, params: Mapping[str, Any]
) -> list[Any]:
    """The rows of ``sql``, planned under ``INDEX_ORDER_ONLY``, in one round trip.

    The settings and the statement go out together in a pipeline: on the pool's autocommit
    connections, what a pipeline sends up to its sync runs as one implicit transaction, so
    ``is_local`` settings last for this statement only, as ``SET LOCAL`` in ``BEGIN`` ...
    ``COMMIT`` did in four round trips (a claim of an empty queue took 0.70 ms that way,
    0.39 ms pipelined: docs/adr/0072-a-claim-is-one-round-trip.md). An error in either rolls
    both back and is raised here."""
    async with conn.pipeline():
        await conn.execute(_INDEX_ORDER_ONLY_SELECT)
        cursor = await conn.execute(sql, params)
    return await cursor.fetchall()


async def heartbeat(
    pool: Pool,
    worker: str,
    runs: Sequence[tuple[int, int]],
    *,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
) -> HeartbeatResult:
    """Extend the leases on ``runs`` (pairs of run id and attempt) in one statement."""
    if not runs:
        return HeartbeatResult()
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("heartbeat"),
            {
                "worker": worker,
                "ids": [run_id for run_id, _ in runs],
                "attempts": [attempt for _, attempt in runs],
                "lease_seconds": float(lease_seconds),
            },
        )
        rows = await cursor.fetchall()
    extended = {row[0]: row[2] for row in rows}
    return HeartbeatResult(
        extended=extended,
        cancel_requested=frozenset(row[0] for row in rows if row[1]),
        lost=frozenset(run_id for run_id, _ in runs if run_id not in extended),
    )


async def finish(pool: Pool, worker: str, outcomes: Sequence[Finish]) -> FinishResult:
    """Record ``outcomes`` in one transaction; see the module docstring for the guarantees."""
    if not outcomes:
        return FinishResult()
    async with pool.connection() as conn:
        # One statement: the outcome, its dependents and the attempt history commit together.
        cursor = await conn.execute(queries.get("finish"), finish_parameters(worker, outcomes))
        rows = await cursor.fetchall()
        result = finish_result(outcomes, rows)
        await announce_released(conn, result)
    return result


async def announce_released(conn: Connection, result: FinishResult) -> None:
    """Dependents a finish made pending can be claimed now: wake every runner (its claim loop
    on PostgreSQL alone, its relay on the hot queue), as a submission's insert does, rather
    than leave them to their next poll, up to a second later for each step of a chain. One
    NOTIFY, only after a finish that released some."""
    if any(state == "pending" for state in result.released.values()):
        await reaper.announce(conn)


def finish_parameters(worker: str, outcomes: Sequence[Finish]) -> dict[str, Any]:
    """The finish statement's parameters for ``outcomes`` (shared with the hot queue's)."""
    params: dict[str, Any] = {
        "worker": worker,
        "ids": [o.run_id for o in outcomes],
        "attempts": [o.attempt for o in outcomes],
        "infra_limit": failures.INFRASTRUCTURE_RETRY_LIMIT,
    }
    if all(o.failure is None for o in outcomes):
        # The common batch: all succeeded. unnest() pads missing arrays with NULLs, and a NULL
        # failure class means "completed", so the other seven arrays need not be sent.
        params.update(
            details=None,
            failure_classes=None,
            errors=None,
            delays=None,
            retryable=None,
            counts=None,
            finished_states=None,
        )
    else:
        rules = [None if o.failure is None else failures.rule_for(o.failure) for o in outcomes]
        params.update(
            failure_classes=[None if o.failure is None else o.failure.value for o in outcomes],
            errors=[o.error for o in outcomes],
            delays=[max(0.0, o.retry_delay_seconds) for o in outcomes],
            retryable=[r is not None and r.retryable for r in rules],
            counts=[r is None or r.counts_against_max_retries for r in rules],
            finished_states=[None if r is None else r.finished_state for r in rules],
            details=[o.detail for o in outcomes],
        )
    return params


def finish_result(outcomes: Sequence[Finish], rows: Sequence[tuple[Any, ...]]) -> FinishResult:
    """What the finish statement's rows say: the outcomes written, those fenced out, and the
    dependents whose state changed."""
    states = {run_id: state for run_id, state, is_dependent in rows if not is_dependent}
    released = {run_id: state for run_id, state, is_dependent in rows if is_dependent}
    return FinishResult(
        states=states,
        lost=frozenset(o.run_id for o in outcomes if o.run_id not in states),
        released=released,
    )
