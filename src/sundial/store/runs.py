"""Submitting runs, and what a person does to one afterwards: look, cancel, replay.

A submission is validated before anything is written, and everything it writes (the
idempotency key or fire key, the run, its dependency edges) commits in one transaction, so a
refused or failed submission leaves no trace. A retried submission with the same idempotency
key — or the same (schedule, fire time) — returns the run the first one created, even when the
two race: the second waits on the key's unique index and then finds the first's row. Keys
are kept for the maintainer's key retention (a week by default), never while their run is in
the hot table; a submission retried after that makes a new run (docs/adr/0034-key-retention.md).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Jsonb

from sundial.api import job_run, validate
from sundial.scheduling import run_state
from sundial.scheduling.run_state import RunState, coerce_state
from sundial.store import dependencies, errors, queries
from sundial.store.pool import Connection, Pool

__all__ = [
    "MAX_IDEMPOTENCY_KEY_LENGTH",
    "MAX_PRIORITY",
    "MIN_PRIORITY",
    "BatchItem",
    "CancelResult",
    "GraphNode",
    "RunInfo",
    "Submitted",
    "args_hash",
    "cancel",
    "get",
    "replay",
    "run_for_key",
    "scoped_key",
    "submit",
    "submit_graph",
    "submit_many",
]

#: The longest idempotency key the store keeps (``scoped_key`` fits any scope and key into it).
MAX_IDEMPOTENCY_KEY_LENGTH = 256
MIN_PRIORITY = 0
MAX_PRIORITY = 9

#: A queue is a DNS-1123 label, as a job's ``queue`` is (``api.common.DnsLabel``).
_QUEUE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

#: An upstream run in one of these states will never complete, so its dependents never start.
_UPSTREAM_DOOMED = run_state.FINISHED - {run_state.RunState.COMPLETED}


@dataclass(frozen=True)
class Submitted:
    run_id: int
    #: False when an earlier submission with the same key (or fire) already created the run.
    created: bool
    #: None: the run has left the hot table (archived; ``sundial runs`` has its end).
    state: RunState | None

    def __post_init__(self) -> None:
        if self.state is not None:
            coerce_state(self)


@dataclass(frozen=True)
class RunInfo:
    id: int
    job_id: uuid.UUID
    state: RunState
    attempt: int
    priority: int
    run_at: datetime
    retries_used: int
    lease_owner: str | None
    lease_until: datetime | None
    cancel_requested: bool
    failure_reason: str | None
    last_error: str | None
    pending_dependencies: int
    fire_time: datetime | None
    schedule_id: uuid.UUID | None
    idempotency_key: str | None
    args: Any
    started_at: datetime | None
    finished_at: datetime | None
    archived: bool
    failure_detail: str | None = None
    queue: str | None = None

    def __post_init__(self) -> None:
        coerce_state(self)


class CancelResult(enum.StrEnum):
    CANCELLED = "cancelled"  # it had not started: it is cancelled now
    REQUESTED = "requested"  # it is running: its worker sees the request on its next heartbeat
    ALREADY_FINISHED = "already_finished"


def _encode_args(args: Mapping[str, Any] | None) -> tuple[Any, str]:
    value: Any = {} if args is None else dict(args)
    try:
        # jsonb's text form uses ", " and ": ", so measure with the same separators.
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise errors.InvalidSubmissionError(
            f"args must be a JSON object of JSON values: {error}"
        ) from error
    # The bound is the API's (compact JSON), so args the models admit are never refused here;
    # jsonb's text form is at most half as long again, within the table's CHECK of 128 KiB.
    # The text above is never shorter than the compact form: only past the bound in it is the
    # compact form worth measuring.
    if len(text.encode()) > validate.MAX_ARGS_BYTES:
        size = validate.args_size(value)
        if size > validate.MAX_ARGS_BYTES:
            raise errors.ArgsTooLargeError(size, validate.MAX_ARGS_BYTES)
    return value, hashlib.sha256(text.encode()).hexdigest()


def args_hash(args: Mapping[str, Any] | None) -> str:
    """The hash an idempotency key remembers its arguments by."""
    return _encode_args(args)[1]


def _check_priority(priority: object) -> None:
    if (
        not isinstance(priority, int)
        or isinstance(priority, bool)
        or not MIN_PRIORITY <= priority <= MAX_PRIORITY
    ):
        raise errors.InvalidPriorityError(priority, MIN_PRIORITY, MAX_PRIORITY)


def _job_lookup(job: uuid.UUID | str) -> dict[str, Any]:
    if isinstance(job, uuid.UUID):
        return {"job_id": job, "namespace": None, "name": None}
    try:
        return {"job_id": uuid.UUID(job), "namespace": None, "name": None}
    except ValueError:
        pass
    namespace, slash, name = job.partition("/")
    if not slash:
        namespace, name = "default", job
    return {"job_id": None, "namespace": namespace, "name": name}


@dataclass(frozen=True)
class _Request:
    """A validated submission: everything checked that can be checked without the database."""

    job: uuid.UUID | str
    args: Any
    args_hash: str
    priority: int | None
    run_at: datetime | None
    delay_seconds: float
    idempotency_key: str | None
    depends_on: list[int]
    schedule_id: uuid.UUID | None
    fire_time: datetime | None
    queue: str | None = None


def scoped_key(scope: str, key: str, *, separator: str = "/") -> str:
    """``key`` under ``scope`` (``scope/key``) as the store keeps it: unchanged while it fits
    ``MAX_IDEMPOTENCY_KEY_LENGTH``, else the key part replaced by its SHA-256 (hex), so two keys
    never collide by being cut to the same prefix, and the same key always maps the same way.
    A namespace (63) plus a JobRun's ``idempotencyKey`` (255) does not fit as it is."""
    whole = f"{scope}{separator}{key}"
    if len(whole) <= MAX_IDEMPOTENCY_KEY_LENGTH:
        return whole
    return f"{scope}{separator}sha256:{hashlib.sha256(key.encode()).hexdigest()}"


def _validate(
    job: uuid.UUID | str,
    *,
    args: Mapping[str, Any] | None,
    priority: int | None,
    run_at: datetime | None,
    delay_seconds: float,
    idempotency_key: str | None,
    depends_on: Sequence[int],
    schedule_id: uuid.UUID | None = None,
    fire_time: datetime | None = None,
    queue: str | None = None,
) -> _Request:
    if run_at is not None and run_at.tzinfo is None:
        raise errors.InvalidSubmissionError(
            "run_at must be timezone-aware: pass e.g. datetime.now(timezone.utc)"
        )
    if delay_seconds < 0:
        raise errors.InvalidSubmissionError(f"delay_seconds must be >= 0, got {delay_seconds}")
    # A run waits as a row of the hot table; one due next year or later belongs to a schedule.
    ahead = job_run.MAX_AHEAD
    if delay_seconds > ahead.total_seconds():
        raise errors.InvalidSubmissionError(
            f"delay_seconds must be at most {ahead.total_seconds():.0f} (366 days), got"
            f" {delay_seconds}; a run further out belongs to a schedule"
        )
    if run_at is not None and run_at > datetime.now(UTC) + ahead:
        raise errors.InvalidSubmissionError(
            f"run_at {run_at.isoformat()} is more than 366 days ahead; a run further out"
            " belongs to a schedule"
        )
    # A fire_time alone is the logical time of a one-off run (a backfilled day); only a
    # schedule_id makes the run a schedule fire, deduplicated on (schedule_id, fire_time).
    if schedule_id is not None and fire_time is None:
        raise errors.InvalidSubmissionError("a schedule_id needs the fire_time of that fire")
    if idempotency_key is not None and not 1 <= len(idempotency_key) <= MAX_IDEMPOTENCY_KEY_LENGTH:
        raise errors.InvalidSubmissionError(
            f"idempotency_key must be 1 to {MAX_IDEMPOTENCY_KEY_LENGTH} characters long"
        )
    if priority is not None:
        _check_priority(priority)
    if queue is not None and (len(queue) > 63 or not _QUEUE.fullmatch(queue)):
        raise errors.InvalidSubmissionError(
            f"queue {queue[:80]!r} is not a queue name: 1 to 63 lowercase letters, digits and"
            " '-', starting and ending with a letter or digit (as a job's spec.queue)"
        )
    args_value, digest = _encode_args(args)
    return _Request(
        job=job,
        args=args_value,
        args_hash=digest,
        priority=priority,
        run_at=run_at,
        delay_seconds=float(delay_seconds),
        idempotency_key=idempotency_key,
        depends_on=sorted(set(depends_on)),
        schedule_id=schedule_id,
        fire_time=fire_time,
        queue=queue,
    )


async def submit(
    pool: Pool,
    job: uuid.UUID | str,
    *,
    args: Mapping[str, Any] | None = None,
    priority: int | None = None,
    run_at: datetime | None = None,
    delay_seconds: float = 0.0,
    idempotency_key: str | None = None,
    depends_on: Sequence[int] = (),
    schedule_id: uuid.UUID | None = None,
    fire_time: datetime | None = None,
    queue: str | None = None,
) -> Submitted:
    """Create a run of ``job`` (its uid, or ``"namespace/name"``); see the module docstring.

    ``run_at`` (aware) wins over ``delay_seconds``; both count from the database clock, and
    neither may be more than 366 days ahead (``api.job_run.MAX_AHEAD``).
    ``queue`` sends this run to another runner queue than the job's (``spec.queue``).
    ``schedule_id`` + ``fire_time`` make the run a schedule fire, deduplicated as long as its
    fire key is kept (the maintainer's key retention, as for ``idempotency_key``);
    ``fire_time`` alone is the logical time handed to a one-off run (a backfill).
    """
    request = _validate(
        job,
        args=args,
        priority=priority,
        run_at=run_at,
        delay_seconds=delay_seconds,
        idempotency_key=idempotency_key,
        depends_on=depends_on,
        schedule_id=schedule_id,
        fire_time=fire_time,
        queue=queue,
    )
    try:
        async with pool.connection() as conn, conn.transaction():
            return await _submit_in(conn, request)
    except _FireExists as exists:
        # Our transaction rolled back (including any key we reserved); the fire has its run.
        state = await _state(pool, exists.run_id)
        return Submitted(run_id=exists.run_id, created=False, state=state)


@dataclass(frozen=True)
class BatchItem:
    """One run of a batch given to :func:`submit_many`: ``submit``'s arguments for one run."""

    args: Mapping[str, Any] | None = None
    priority: int | None = None
    run_at: datetime | None = None
    delay_seconds: float = 0.0
    idempotency_key: str | None = None
    #: Another runner queue than the job's for this run; None: the job's ``spec.queue``.
    queue: str | None = None


async def submit_many(
    pool: Pool, job: uuid.UUID | str, items: Sequence[BatchItem]
) -> list[Submitted]:
    """Create many runs of ``job`` in one transaction and (without key conflicts) one round trip.

    Each item means what the same arguments mean to :func:`submit`, result for result, in the
    order given: a key used before with the same args returns that run (``created=False``), with
    other args raises ``IdempotencyConflictError``; a key given twice in the batch is one run.
    The batch is all or nothing: a refused item (bad args, a conflict, an unknown job) raises
    and writes none of the batch. Dependencies and schedule fires are not batched: use
    :func:`submit_graph` and the trigger.
    """
    requests = [
        _validate(
            job,
            args=item.args,
            priority=item.priority,
            run_at=item.run_at,
            delay_seconds=item.delay_seconds,
            idempotency_key=item.idempotency_key,
            depends_on=(),
            queue=item.queue,
        )
        for item in items
    ]
    if not requests:
        return []
    # A key given twice is one run: send its first item; the others take that item's result.
    first_of_key: dict[str, int] = {}
    sent: list[int] = []
    for ordinal, request in enumerate(requests):
        key = request.idempotency_key
        if key is None or key not in first_of_key:
            if key is not None:
                first_of_key[key] = ordinal
            sent.append(ordinal)
    parameters = {
        **_job_lookup(job),
        "ordinals": sent,
        "keys": [requests[i].idempotency_key for i in sent],
        "args_hashes": [requests[i].args_hash for i in sent],
        # As text, cast in SQL: adapting a list of Jsonb costs more than the statement.
        "args": [json.dumps(requests[i].args, ensure_ascii=False) for i in sent],
        "priorities": [requests[i].priority for i in sent],
        "run_ats": [requests[i].run_at for i in sent],
        "delays": [requests[i].delay_seconds for i in sent],
        "queues": [requests[i].queue for i in sent],
    }
    results: dict[int, Submitted] = {}
    async with pool.connection() as conn, conn.transaction():
        cursor = await conn.execute(queries.get("submit_many"), parameters)
        for ordinal, run_id, state in await cursor.fetchall():
            if ordinal < 0:
                raise errors.UnknownJobError(str(job))
            results[ordinal] = Submitted(run_id=run_id, created=True, state=state)
        taken = [i for i in sent if i not in results]
        if taken:
            keys = [requests[i].idempotency_key for i in taken]
            cursor = await conn.execute(queries.get("existing_idempotency_keys"), {"keys": keys})
            existing = {row[0]: row[1:] for row in await cursor.fetchall()}
            for ordinal in taken:
                key = requests[ordinal].idempotency_key
                assert key is not None and key in existing  # the conflict hit a committed row
                stored_hash, run_id, state = existing[key]
                if stored_hash != requests[ordinal].args_hash:
                    raise errors.IdempotencyConflictError(key, run_id)
                results[ordinal] = Submitted(run_id=run_id, created=False, state=state)
        for ordinal, request in enumerate(requests):
            key = request.idempotency_key
            if ordinal in results or key is None:
                continue
            first = results[first_of_key[key]]
            if request.args_hash != requests[first_of_key[key]].args_hash:
                raise errors.IdempotencyConflictError(key, first.run_id)
            results[ordinal] = Submitted(run_id=first.run_id, created=False, state=first.state)
    return [results[ordinal] for ordinal in range(len(requests))]


@dataclass(frozen=True)
class GraphNode:
    """One run of a graph given to :func:`submit_graph`."""

    job: uuid.UUID | str
    args: Mapping[str, Any] | None = None
    priority: int | None = None
    run_at: datetime | None = None
    delay_seconds: float = 0.0
    idempotency_key: str | None = None
    depends_on: Sequence[str] = ()  # names of other nodes of the same graph
    depends_on_runs: Sequence[int] = ()  # ids of runs that already exist


async def submit_graph(pool: Pool, nodes: Mapping[str, GraphNode]) -> dict[str, Submitted]:
    """Submit a DAG of runs atomically: all of them, or (on any error) none.

    Cycles and edges to undefined nodes are refused before anything is written
    (``CyclicDependencyError``, ``DependencyError``). Runs are created parents first.
    """
    order = dependencies.topological_order({n: list(node.depends_on) for n, node in nodes.items()})
    requests = {
        name: _validate(
            node.job,
            args=node.args,
            priority=node.priority,
            run_at=node.run_at,
            delay_seconds=node.delay_seconds,
            idempotency_key=node.idempotency_key,
            depends_on=node.depends_on_runs,
        )
        for name, node in nodes.items()
    }
    submitted: dict[str, Submitted] = {}
    async with pool.connection() as conn, conn.transaction():
        for name in order:
            inside = [submitted[parent].run_id for parent in nodes[name].depends_on]
            request = dataclasses.replace(
                requests[name], depends_on=sorted({*requests[name].depends_on, *inside})
            )
            submitted[name] = await _submit_in(conn, request)
    return submitted


async def _submit_in(conn: Connection, request: _Request) -> Submitted:
    """Write one validated submission in the caller's transaction."""
    cursor = await conn.execute(queries.get("job_for_submit"), _job_lookup(request.job))
    found = await cursor.fetchone()
    if found is None:
        raise errors.UnknownJobError(str(request.job))
    (
        job_id,
        queue,
        handler,
        model,
        job_priority,
        timeout,
        max_retries,
        base,
        cap,
        oom_retries,
        max_lost_leases,
    ) = found

    run_id: int | None = None
    if request.idempotency_key is not None:
        cursor = await conn.execute(
            queries.get("reserve_idempotency_key"),
            {"key": request.idempotency_key, "args_hash": request.args_hash},
        )
        reserved = await cursor.fetchone()
        if reserved is None:
            return await _existing_for_key(conn, request.idempotency_key, request.args_hash)
        run_id = reserved[0]
    if request.schedule_id is not None:
        fire = {
            "schedule_id": request.schedule_id,
            "fire_time": request.fire_time,
            "run_id": run_id,
        }
        cursor = await conn.execute(queries.get("reserve_fire"), fire)
        reserved = await cursor.fetchone()
        if reserved is None:
            cursor = await conn.execute(queries.get("existing_fire"), fire)
            existing = await cursor.fetchone()
            assert existing is not None  # the conflict we just hit is committed
            raise _FireExists(existing[0])
        run_id = reserved[0]

    pending, doomed_state, doomed_reason, doomed_error = await _upstream(conn, request.depends_on)
    cursor = await conn.execute(
        queries.get("insert_run"),
        {
            "run_id": run_id,
            "job_id": job_id,
            "schedule_id": request.schedule_id,
            "fire_time": request.fire_time,
            "idempotency_key": request.idempotency_key,
            "queue": request.queue or queue,
            "handler": handler,
            "execution_model": model,
            "timeout_seconds": timeout,
            "max_retries": max_retries,
            "backoff_base_seconds": base,
            "backoff_cap_seconds": cap,
            "oom_max_retries": oom_retries,
            "max_lost_leases": max_lost_leases,
            "doomed_state": doomed_state,
            "pending_dependencies": pending,
            "priority": job_priority if request.priority is None else request.priority,
            "run_at": request.run_at,
            "delay_seconds": request.delay_seconds,
            "args": Jsonb(request.args),
            "failure_reason": doomed_reason,
            "last_error": doomed_error,
        },
    )
    inserted = await cursor.fetchone()
    assert inserted is not None
    if request.depends_on:
        await conn.execute(
            queries.get("insert_dependency_edges"),
            {"run_id": inserted[0], "depends_on": request.depends_on},
        )
    return Submitted(run_id=inserted[0], created=True, state=inserted[1])


class _FireExists(Exception):
    def __init__(self, run_id: int) -> None:
        self.run_id = run_id


async def _existing_for_key(conn: Connection, key: str, digest: str) -> Submitted:
    cursor = await conn.execute(queries.get("existing_idempotency_key"), {"key": key})
    row = await cursor.fetchone()
    assert row is not None  # the conflict we hit is a committed row
    stored_hash, run_id = row
    if stored_hash != digest:
        raise errors.IdempotencyConflictError(key, run_id)
    cursor = await conn.execute(queries.get("run_state"), {"id": run_id})
    state = await cursor.fetchone()
    return Submitted(run_id=run_id, created=False, state=state[0] if state else None)


async def _upstream(
    conn: Connection, upstream: list[int]
) -> tuple[int, str | None, str | None, str | None]:
    """Lock the upstream runs; return (pending count, doomed state, reason, error)."""
    if not upstream:
        return 0, None, None, None
    cursor = await conn.execute(queries.get("lock_upstream_runs"), {"ids": upstream})
    states = {row[0]: row[1] for row in await cursor.fetchall()}
    absent = [run_id for run_id in upstream if run_id not in states]
    if absent:
        cursor = await conn.execute(queries.get("archived_upstream_runs"), {"ids": absent})
        states.update({row[0]: row[1] for row in await cursor.fetchall()})
    missing = [run_id for run_id in upstream if run_id not in states]
    if missing:
        raise errors.MissingDependencyError(missing)
    for run_id in upstream:
        if states[run_id] in _UPSTREAM_DOOMED:
            if states[run_id] == run_state.RunState.CANCELLED:
                return (
                    0,
                    run_state.RunState.CANCELLED,
                    "cancelled",
                    (f"upstream run {run_id} was cancelled"),
                )
            reason = f"upstream run {run_id} failed ({states[run_id]})"
            return 0, run_state.RunState.FAILED, "upstream_failed", reason
    live = [run_id for run_id in upstream if states[run_id] != run_state.RunState.COMPLETED]
    if live:
        await conn.execute(queries.get("mark_has_dependents"), {"ids": live})
    return len(live), None, None, None


async def _state(pool: Pool, run_id: int) -> RunState | None:
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("run_state"), {"id": run_id})
        row = await cursor.fetchone()
        return None if row is None else RunState(row[0])


async def get(pool: Pool, run_id: int, *, hot: Any = None) -> RunInfo | None:
    """One run, live or archived; ``None`` if there is no such run. ``hot``: the hot queue's
    Redis client, to show a run a claimer holds there as running (``hot_queue.overlay``)."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("get_run"), {"id": run_id})
        row = await cursor.fetchone()
    if row is None:
        return None
    info = RunInfo(*row)
    if hot is not None:
        from sundial.store.hot_queue import overlay

        [info] = await overlay.overlay(hot, [info])
    return info


async def cancel(
    pool: Pool, run_id: int, *, reason: str = "cancelled on request", hot: Any = None
) -> CancelResult:
    """Cancel a run; a run that had not started ends now, with its dependents; a running one
    is asked to stop (``REQUESTED``: its attempt's next heartbeat sees it).

    ``hot``: the hot queue's Redis client, where the database's hot queue is on. A run Redis
    holds is pending in the record while its attempt runs; with ``hot`` it is asked to stop as
    a running run is, and keeps its place under concurrency keys and quotas until its attempt
    ends. Without it, the record would end it at once, under a still running attempt.

    Raises ``NoSuchRunError`` if no run, live or archived, has the id ``run_id``;
    ``HotQueueUnavailableError`` when ``hot`` is given and Redis does not answer."""
    async with pool.connection() as conn, conn.transaction():
        if hot is not None and await _held_in_redis(conn, hot, run_id):
            cursor = await conn.execute(
                queries.get("cancel_held"), {"ids": [run_id], "reason": reason}
            )
            if await cursor.fetchone() is not None:
                return CancelResult.REQUESTED
        cursor = await conn.execute(queries.get("cancel"), {"id": run_id, "reason": reason})
        row = await cursor.fetchone()
        if row is None:
            cursor = await conn.execute(queries.get("run_state"), {"id": run_id})
            if await cursor.fetchone() is None:
                raise errors.NoSuchRunError(run_id)
            return CancelResult.ALREADY_FINISHED
        state, has_dependents = row
        if state == run_state.RunState.RUNNING:
            return CancelResult.REQUESTED
        if has_dependents:
            await dependencies.fail_dependents(conn, {run_id: run_state.RunState.CANCELLED})
        return CancelResult.CANCELLED


async def _held_in_redis(conn: Connection, hot: Any, run_id: int) -> bool:
    """Whether a claim on the hot queue holds ``run_id``, settled against claims in one Redis
    step: a run still due there is taken out of its due set (so the cancel that follows ends
    it before any claim can start it), with the record's row locked until the cancel commits.
    Should that commit fail, the reconciler makes the run due again (it is pending in the
    record and nowhere in Redis)."""
    cursor = await conn.execute(queries.get("cancel_target"), {"id": run_id})
    row = await cursor.fetchone()
    if row is None or not row[1]:
        return False
    return bool(await held_in_redis(hot, [(run_id, row[0])]))


async def held_in_redis(hot: Any, targets: Sequence[tuple[int, str]]) -> set[int]:
    """Of ``targets`` ((run id, queue) of runs pending in the record, their rows locked by the
    caller until its cancel commits), the runs a claim on the hot queue holds; every other one
    still due in Redis is taken out of its due set in the same step, so no claim can start it
    after the cancel ends it (``HotQueue.cancel``)."""
    from sundial.store.hot_queue import HotQueue, redis_calls

    by_queue: dict[str, list[int]] = {}
    for run_id, queue in targets:
        by_queue.setdefault(queue, []).append(run_id)
    held: set[int] = set()
    with redis_calls():
        for queue, ids in by_queue.items():
            found = await HotQueue(hot, queue).cancel(ids)
            held.update(run_id for run_id, where in zip(ids, found, strict=True) if where == "held")
    return held


async def run_for_key(pool: Pool, key: str) -> int | None:
    """The id of the run submitted with the idempotency key ``key``, or None."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("existing_idempotency_key"), {"key": key})
        row = await cursor.fetchone()
    return None if row is None else int(row[1])


async def replay(pool: Pool, run_id: int) -> int:
    """Put a dead-lettered, failed or timed-out run back in the queue with a fresh retry budget.

    Returns the run's current attempt; its next claim makes it attempt + 1, so a fencing token
    is never reused. Dependents already failed by this run stay failed: submit them again.
    Raises ``NoSuchRunError`` for an id no run has, ``RunNotReplayableError`` for a run whose
    state does not allow it.
    """
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("replay"), {"id": run_id})
        row = await cursor.fetchone()
        if row is None:
            cursor = await conn.execute(queries.get("run_state"), {"id": run_id})
            state = await cursor.fetchone()
            if state is None:
                raise errors.NoSuchRunError(run_id)
            raise errors.RunNotReplayableError(run_id, str(state[0]))
        return int(row[1])
