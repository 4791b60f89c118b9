"""What the status mirror reads: a bounded window of runs per schedule, runs by id, and the
schedule facts a ScheduledJob's status shows.

Each call is one statement for any number of schedules or runs, so a mirror pass over a
thousand ScheduledJobs costs a handful of round trips, not thousands. Finished runs are read
from the hot table and from the month partitions alike, so archiving never makes a run
disappear from a window it belongs to.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sundial.scheduling import waiting
from sundial.scheduling.run_state import RunState, coerce_state
from sundial.store import queries
from sundial.store.pool import Pool

__all__ = [
    "Digest",
    "HistoryRow",
    "RunView",
    "ScheduleView",
    "WindowRequest",
    "changes",
    "digests",
    "recent",
    "runs",
    "schedules",
    "upstream_of",
    "window",
]

_Row = TypeVar("_Row")

#: At most this many unfinished runs of one schedule are listed (``activeCount`` is exact).
MAX_ACTIVE_LISTED = 100


@dataclass(frozen=True)
class RunView:
    """The part of a run a JobRun's status shows.

    The ``pod_*`` fields are the Pod of the run's latest attempt, as the pod launcher recorded
    it, live or archived; None for runs that are not pod runs (and for runs archived before
    migration 0060, which kept no Pod columns).
    """

    id: int
    state: RunState
    attempt: int
    failure_reason: str | None
    last_error: str | None
    fire_time: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    pod_name: str | None = None
    pod_exit_code: int | None = None
    pod_reason: str | None = None
    #: What exactly failed, finer than ``failure_reason`` (BadArgs, UnknownHandler …).
    failure_detail: str | None = None
    #: Why no live runner can claim this pending run (``runners.mark_unclaimable``), or None.
    unclaimable_reason: str | None = None
    queue: str | None = None
    run_at: datetime | None = None
    #: How many upstream runs have not completed yet (a blocked run), and the first few.
    pending_dependencies: int = 0
    upstream: Any = None
    #: The concurrency key that holds this due run back, or None (migration 0280).
    held_by_key: str | None = None

    def why_it_waits(self) -> waiting.Waiting | None:
        """Why this run waits (``scheduling.waiting``); None unless it is unfinished and not
        running."""
        return waiting.why(
            waiting.WaitFacts(
                run_id=self.id,
                state=self.state,
                attempt=self.attempt,
                queue=self.queue,
                run_at=self.run_at,
                unclaimable_reason=self.unclaimable_reason,
                last_error=self.last_error,
                failure_reason=self.failure_reason,
                pending_dependencies=self.pending_dependencies,
                upstream=upstream_of(self.upstream),
                held_by_key=self.held_by_key,
            )
        )

    def __post_init__(self) -> None:
        coerce_state(self)


def upstream_of(column: Any) -> tuple[waiting.Upstream, ...]:
    """The queries' ``upstream`` column (a JSON array of [id, job, state]) as Upstream runs."""
    if not isinstance(column, list):
        return ()
    return tuple(
        waiting.Upstream(run_id=int(item[0]), job=str(item[1]), state=RunState(str(item[2])))
        for item in column
        if isinstance(item, list) and len(item) == 3
    )


@dataclass(frozen=True)
class WindowRequest:
    schedule_id: uuid.UUID
    successful: int
    failed: int


@dataclass
class Window:
    """One schedule's window, newest first in each part."""

    active: list[RunView]
    successful: list[RunView]
    failed: list[RunView]
    #: How many unfinished runs the schedule has (``active`` lists at most MAX_ACTIVE_LISTED);
    #: the length of ``active`` when not given.
    active_count: int = -1

    def __post_init__(self) -> None:
        if self.active_count < 0:
            self.active_count = len(self.active)


@dataclass(frozen=True)
class ScheduleView:
    id: uuid.UUID
    generation: int
    next_fire_time: datetime
    spread_offset_ms: int
    suspended: bool
    quarantined: bool
    quarantine_message: str | None
    consecutive_failures: int
    quarantine_after: int | None
    stalled_reason: str | None
    last_error: str | None
    active: bool
    last_fire_time: datetime | None
    #: The fire concurrencyPolicy BufferOne keeps waiting for the active run to end.
    buffered_fire_time: datetime | None = None


async def window(
    pool: Pool, requests: Sequence[WindowRequest], *, hot: Any = None
) -> dict[uuid.UUID, Window]:
    """The unfinished runs and the newest successful and failed runs of each schedule.
    ``hot``: the hot queue's Redis client, to show the unfinished runs a claimer holds there
    as running (one round trip for every window)."""
    result = {request.schedule_id: Window([], [], []) for request in requests}
    if not requests:
        return result
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("history_window"),
            {
                "schedule_ids": [request.schedule_id for request in requests],
                "successful": [request.successful for request in requests],
                "failed": [request.failed for request in requests],
            },
        )
        rows = await cursor.fetchall()
        for schedule_id, kind, *columns in rows:
            getattr(result[schedule_id], kind).append(RunView(*columns))
        capped = [key for key, found in result.items() if len(found.active) >= MAX_ACTIVE_LISTED]
        counts: dict[uuid.UUID, int] = {}
        if capped:  # rare: count only where the list stopped short
            cursor = await conn.execute(
                queries.get("history_active_counts"), {"schedule_ids": capped}
            )
            counts = dict(await cursor.fetchall())
    for key, found in result.items():
        found.active_count = counts.get(key, len(found.active))
    if hot is not None:
        shown = iter(
            await _overlay(hot, [run for found in result.values() for run in found.active])
        )
        for found in result.values():
            found.active = [next(shown) for _ in found.active]
    return result


@dataclass(frozen=True)
class Digest:
    """A number that changes whenever what ``schedules`` and ``window`` return of one
    schedule changes (a hash: equal inputs, equal numbers; a collision is possible, and the
    mirror syncs every ScheduledJob once a minute whatever its digest says)."""

    value: int
    #: The window lists MAX_ACTIVE_LISTED unfinished runs, so its ``active_count`` (exact,
    #: counted apart) is not in ``value``.
    capped: bool


async def changes(pool: Pool) -> int | None:
    """A number that moves whenever a row behind ``schedules`` and ``window`` is written, within
    about a second of the commit (PostgreSQL's cumulative row counters), or None when the
    server keeps no counters. Equal numbers mean nothing a mirror pass would read changed, so
    at rest a pass can skip even the digests: one cheap statement instead of one per slice."""
    async with pool.connection() as conn:
        row = await (await conn.execute(queries.get("history_changes"))).fetchone()
    return None if row is None or row[0] is None else int(row[0])


async def hot_changes(pool: Pool, hot: Any) -> tuple[object, ...] | None:
    """On the hot queue, what ``changes`` cannot see: a claim, a give-back or a lease taken
    back moves nothing in PostgreSQL (the record says pending while a claimer holds a run),
    so the mirror also compares this, a text per queue that moves with every lease begun or
    ended in Redis, and the count of reads Redis left unanswered (those showed runs as
    recorded). None when Redis does not answer now."""
    from sundial.store.hot_queue import overlay

    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("hot_queue_queues"))
        queues = [row[0] for row in await cursor.fetchall()]
    moves = await overlay.moves(hot, queues)
    return None if moves is None else (moves, overlay.unanswered())


@functools.cache
def _digest_query() -> str:
    """history_digests.sql with the two queries it digests put where its markers stand.

    Each marker must stand exactly once: a marker also written in a comment would be
    replaced there too, and the statement would no longer say what the mirror reads."""
    query = queries.get("history_digests")
    for marker, name in (("(:schedules)", "history_schedules"), ("(:window)", "history_window")):
        if query.count(marker) != 1:
            raise ValueError(
                f"history_digests.sql must name {marker} exactly once, "
                f"found {query.count(marker)}: write the marker only where {name}.sql goes"
            )
        query = query.replace(marker, f"(\n{queries.get(name)}\n)")
    return query


async def digests(pool: Pool, requests: Sequence[WindowRequest]) -> dict[uuid.UUID, Digest]:
    """The digest of each requested schedule's view and window, in one statement: a handful
    of numbers per schedule to fetch instead of its rows, so a mirror pass at rest costs
    little however many ScheduledJobs there are."""
    if not requests:
        return {}
    # Sent as array literals: psycopg dumps a list element by element in Python, which at
    # 10,000 ScheduledJobs was most of an idle mirror pass's time in this call.
    ids = _array_literal(request.schedule_id for request in requests)
    async with pool.connection() as conn:
        cursor = await conn.execute(
            _digest_query(),
            {
                "ids": ids,
                "schedule_ids": ids,
                "successful": _array_literal(request.successful for request in requests),
                "failed": _array_literal(request.failed for request in requests),
            },
        )
        rows = await cursor.fetchall()
    return {
        requests[place - 1].schedule_id: Digest(value, active >= MAX_ACTIVE_LISTED)
        for place, value, active in rows
    }


def _array_literal(values: Iterable[uuid.UUID | int]) -> str:
    """``values`` as a PostgreSQL array literal (UUIDs and integers need no quoting)."""
    return "{" + ",".join(map(str, values)) + "}"


async def runs(pool: Pool, run_ids: Iterable[int], *, hot: Any = None) -> dict[int, RunView]:
    """The runs with these ids that exist, live or archived. ``hot``: the hot queue's Redis
    client, to show the runs a claimer holds there as running (``hot_queue.overlay``)."""
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("history_runs"), {"ids": ids})
        rows = await cursor.fetchall()
    views = [RunView(*row) for row in rows]
    if hot is not None:
        views = await _overlay(hot, views)
    return {view.id: view for view in views}


async def _overlay(hot: Any, rows: Sequence[_Row]) -> list[_Row]:
    from sundial.store.hot_queue import overlay

    return await overlay.overlay(hot, rows)


async def schedules(pool: Pool, schedule_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, ScheduleView]:
    """The schedules with these ids that exist (active or deactivated)."""
    ids = sorted(set(schedule_ids))
    if not ids:
        return {}
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("history_schedules"), {"ids": ids})
        rows = await cursor.fetchall()
    return {row[0]: ScheduleView(*row) for row in rows}


@dataclass(frozen=True)
class HistoryRow:
    id: int
    namespace: str
    job: str
    state: RunState
    attempt: int
    fire_time: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    failure_reason: str | None
    #: The Pod of the latest attempt of a pod run, as JobRun status shows it; None otherwise.
    pod_name: str | None = None
    pod_exit_code: int | None = None
    pod_reason: str | None = None
    #: What exactly failed, finer than ``failure_reason`` (BadArgs, UnknownHandler …).
    failure_detail: str | None = None
    #: Why no live runner can claim this pending run, or None.
    unclaimable_reason: str | None = None
    created_at: datetime | None = None
    queue: str | None = None
    run_at: datetime | None = None
    last_error: str | None = None
    pending_dependencies: int = 0
    upstream: Any = None
    #: The concurrency key that holds this due run back, or None (migration 0280).
    held_by_key: str | None = None

    def why_it_waits(self) -> waiting.Waiting | None:
        """Why this run waits (``scheduling.waiting``), as a JobRun of it says."""
        return waiting.why(
            waiting.WaitFacts(
                run_id=self.id,
                state=self.state,
                attempt=self.attempt,
                queue=self.queue,
                run_at=self.run_at,
                unclaimable_reason=self.unclaimable_reason,
                last_error=self.last_error,
                failure_reason=self.failure_reason,
                pending_dependencies=self.pending_dependencies,
                upstream=upstream_of(self.upstream),
                held_by_key=self.held_by_key,
            )
        )

    def __post_init__(self) -> None:
        coerce_state(self)


async def recent(
    pool: Pool,
    *,
    namespace: str | None = None,
    job: str | None = None,
    limit: int = 50,
    before: int | None = None,
    states: Iterable[str] | None = None,
    since: datetime | None = None,
    hot: Any = None,
) -> list[HistoryRow]:
    """The newest ``limit`` runs (all of PostgreSQL's history), optionally of one job, newest
    first; ``before``: only runs with a smaller id, to page back from the last one seen;
    ``states``: only runs in one of these; ``since``: only runs created at or after it.
    ``hot``: the hot queue's Redis client, to show the runs a claimer holds there as running
    (``hot_queue.overlay``); ``states`` then filters what is shown. A held run is pending in
    the record, so for ``running`` the runs Redis holds are read by id beside the recorded
    ones, and for ``pending`` without ``running`` they are left out of the read: either way a
    page is full whatever the pending backlog around them."""
    wanted = None if states is None else set(states)
    arguments: dict[str, Any] = {
        "namespace": namespace,
        "name": job,
        "limit": limit,
        "before": before,
        "since": since,
        "states": None if wanted is None else sorted(wanted),
        "ids": None,
        "held": None,
    }
    async with pool.connection() as conn:
        if hot is None:
            return [HistoryRow(*row) for row in await _recent(conn, arguments)]
        ids: set[int] = set()
        if wanted is not None and wanted & {RunState.RUNNING, RunState.PENDING}:
            from sundial.store.hot_queue import overlay

            ids = await overlay.held_anywhere(conn, hot)
        if ids and RunState.RUNNING not in (wanted or ()):
            arguments["held"] = sorted(ids)  # shown running: no room taken in a pending page
        listed = [HistoryRow(*row) for row in await _recent(conn, arguments)]
        held: list[HistoryRow] = []
        if ids and RunState.RUNNING in (wanted or ()):
            arguments |= {"states": [RunState.PENDING], "ids": sorted(ids), "held": None}
            held = [HistoryRow(*row) for row in await _recent(conn, arguments)]
    seen = {row.id for row in listed}
    shown = await _overlay(hot, listed + [row for row in held if row.id not in seen])
    kept = shown if wanted is None else [row for row in shown if row.state in wanted]
    return sorted(kept, key=lambda row: row.id, reverse=True)[:limit]


async def _recent(conn: Any, arguments: dict[str, Any]) -> list[Any]:
    cursor = await conn.execute(queries.get("history_recent"), arguments)
    return list(await cursor.fetchall())
