"""Schedules in the store: what the operator upserts, and the trigger's transaction.

``upsert`` turns a ScheduledJob (uid, namespace, name, generation, spec) into its
``job_definitions`` and ``schedules`` rows; the schedule's id is the object's uid. An invalid
cron expression or time zone is stored as *stalled* (the schedule stops firing, with the error
naming the field) rather than raised, so an edit to a bad value never leaves the old schedule
firing.

``fire_due`` is one trigger transaction over at most ``batch_size`` due schedules. It

1. locks due schedules ``FOR UPDATE SKIP LOCKED`` (a second trigger loop takes other rows),
2. reads each job's active-run count and, where ``quarantineAfter`` is set, its failure streak
   from the newest ended runs (so the finish path stays untouched),
3. asks ``scheduling.plan.plan_fires`` what to do (the pure layer holds every rule),
4. cancels active runs for Replace, inserts the runs - each through its unique
   ``(schedule_id, fire_time)`` key in ``schedule_fires``, ``ON CONFLICT DO NOTHING`` - and
   advances ``next_fire_time`` and the fire counters,

and commits all of it at once: a crash anywhere leaves either everything or nothing, and a
fire is created once even when two loops run (docs/adr/0004-trigger-loop.md). A schedule
whose cron or zone cannot be parsed is marked stalled and skipped; it never stops the others.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from psycopg.types.json import Jsonb

from sundial.api import scheduled_job
from sundial.scheduling import concurrency, cron, missed_fires, plan, quarantine, spread
from sundial.scheduling import errors as scheduling_errors
from sundial.scheduling.clock import require_aware
from sundial.store import dependencies, queries
from sundial.store.pool import Connection, Pool

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_TIMEOUT_SECONDS",
    "FireReport",
    "FiredRun",
    "ScheduleInfo",
    "ScheduleOutcome",
    "UpsertResult",
    "clear_quarantine",
    "deactivate",
    "fire_due",
    "get",
    "next_due",
    "set_suspended",
    "upsert",
]

#: Schedules per trigger transaction: big enough that 10,000 fires take a handful of round
#: trips, small enough that row locks are held for tens of milliseconds.
DEFAULT_BATCH_SIZE = 1000
DEFAULT_TIMEOUT_SECONDS = 300
REPLACED_REASON = "replaced by a newer fire (concurrencyPolicy: Replace)"
_FAILED_STATES = frozenset({"failed", "timed_out", "dead_lettered"})


@dataclass(frozen=True)
class UpsertResult:
    schedule_id: uuid.UUID
    created: bool
    next_fire_time: datetime | None
    #: The error that stalls the schedule (it names the field), or ``None``.
    stalled: scheduling_errors.SchedulingError | None
    #: False when a newer generation was stored already and this call changed nothing.
    applied: bool = True


@dataclass(frozen=True)
class ScheduleInfo:
    id: uuid.UUID
    job_id: uuid.UUID
    schedule: str
    time_zone: str
    next_fire_time: datetime
    suspended: bool
    quarantined: bool
    quarantine_message: str | None
    consecutive_failures: int
    stalled_reason: str | None
    last_error: str | None
    active: bool
    last_fire_time: datetime | None
    fires_total: int
    fires_coalesced: int
    fires_skipped: int
    fires_backfilled: int


@dataclass(frozen=True)
class FiredRun:
    run_id: int
    schedule_id: uuid.UUID
    fire_time: datetime
    run_at: datetime
    state: str


@dataclass(frozen=True)
class ScheduleOutcome:
    """What happened to one schedule: the operator turns ``events`` into Kubernetes Events."""

    schedule_id: uuid.UUID
    events: tuple[str, ...]
    stalled: str | None = None
    newly_quarantined: str | None = None


@dataclass
class FireReport:
    """The totals of one or more trigger transactions."""

    schedules: int = 0
    created: int = 0
    ran: int = 0
    backfilled: int = 0
    coalesced: int = 0
    skipped: int = 0
    duplicates: int = 0
    cancelled: int = 0
    stalled: int = 0
    quarantined: int = 0
    runs: list[FiredRun] = field(default_factory=list)
    outcomes: list[ScheduleOutcome] = field(default_factory=list)

    def add(self, other: FireReport) -> None:
        for name in (
            "schedules",
            "created",
            "ran",
            "backfilled",
            "coalesced",
            "skipped",
            "duplicates",
            "cancelled",
            "stalled",
            "quarantined",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.runs.extend(other.runs)
        self.outcomes.extend(other.outcomes)


# ---------------------------------------------------------------------------------------------
# What the operator calls


async def upsert(
    pool: Pool,
    *,
    uid: uuid.UUID | str,
    namespace: str,
    name: str,
    generation: int,
    spec: scheduled_job.ScheduledJobSpec,
    now: datetime,
) -> UpsertResult:
    """Create or update the job and schedule of a ScheduledJob; see the module docstring."""
    schedule_id = uuid.UUID(str(uid))
    require_aware(now, "now")
    stalled: scheduling_errors.SchedulingError | None = None
    next_fire_time = now
    try:
        parsed = cron.parse_schedule(spec.schedule, spec.time_zone)
        _rules(
            spec.spread_seconds,
            spec.concurrency_policy,
            spec.missed_fire_policy,
            spec.max_backfill or 1,
            spec.starting_deadline_seconds,
        )
        next_fire_time = parsed.next_fire_after(now)
    except scheduling_errors.SchedulingError as error:
        stalled = error
    job_row = _job_row(schedule_id, namespace, name, generation, spec)
    handler = spec.handler
    schedule_row = {
        "id": schedule_id,
        "cron": spec.schedule,
        "timezone": spec.time_zone or "UTC",
        "next_fire_time": next_fire_time,
        "spread_seconds": spec.spread_seconds,
        "spread_offset_ms": _offset_ms(schedule_id, spec.spread_seconds),
        "concurrency_policy": spec.concurrency_policy,
        "missed_fire_policy": spec.missed_fire_policy,
        "max_backfill": spec.max_backfill or 1,
        "starting_deadline_seconds": spec.starting_deadline_seconds,
        "suspended": spec.suspend,
        "run_args": Jsonb(dict(handler.args) if handler is not None and handler.args else {}),
        "stalled_reason": None if stalled is None else stalled.reason,
        "last_error": None if stalled is None else str(stalled),
    }
    async with pool.connection() as conn, conn.transaction():
        cursor = await conn.execute(queries.get("schedule_upsert_job"), job_row)
        if await cursor.fetchone() is None:
            stored = await _get(conn, schedule_id)
            return UpsertResult(
                schedule_id, False, stored.next_fire_time if stored else None, stalled, False
            )
        cursor = await conn.execute(queries.get("schedule_upsert"), schedule_row)
        row = await cursor.fetchone()
        assert row is not None
    return UpsertResult(schedule_id, bool(row[1]), None if stalled is not None else row[0], stalled)


async def set_suspended(pool: Pool, schedule_id: uuid.UUID, suspended: bool) -> bool:
    """Suspend or resume; on resume the missed-fire policy decides what the pause owes."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("schedule_set_suspended"), {"id": schedule_id, "suspended": suspended}
        )
        return await cursor.fetchone() is not None


async def clear_quarantine(pool: Pool, schedule_id: uuid.UUID) -> bool:
    """Lift the quarantine and forget the failure streak (runs ended so far never count)."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("schedule_clear_quarantine"), {"id": schedule_id})
        return await cursor.fetchone() is not None


async def deactivate(pool: Pool, schedule_id: uuid.UUID) -> bool:
    """The ScheduledJob was deleted: stop firing; keep its runs and fire keys."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("schedule_deactivate"), {"id": schedule_id})
        return await cursor.fetchone() is not None


async def get(pool: Pool, schedule_id: uuid.UUID) -> ScheduleInfo | None:
    async with pool.connection() as conn:
        return await _get(conn, schedule_id)


async def next_due(pool: Pool) -> datetime | None:
    """The earliest ``next_fire_time`` of a schedule that may fire, for the loop's sleep."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("trigger_next_due"))
        row = await cursor.fetchone()
    return None if row is None else row[0]


# ---------------------------------------------------------------------------------------------
# The trigger transaction


async def fire_due(
    pool: Pool,
    *,
    now: datetime,
    batch_size: int = DEFAULT_BATCH_SIZE,
    pace: Callable[[datetime], datetime] | None = None,
) -> FireReport:
    """Handle up to ``batch_size`` due schedules at ``now`` in one transaction.

    ``pace`` (the loop's fire budget) is called once per run to create, in ``run_at`` order,
    and returns the ``run_at`` to store (the same instant or later).
    """
    require_aware(now, "now")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    report = FireReport()
    async with pool.connection() as conn, conn.transaction():
        cursor = await conn.execute(
            queries.get("trigger_due_schedules"), {"now": now, "limit": batch_size}
        )
        rows = [_DueSchedule(*row) for row in await cursor.fetchall()]
        if not rows:
            return report
        report.schedules = len(rows)
        active = await _active_runs(conn, rows)
        streaks = await _failure_streaks(conn, rows)

        planned: list[tuple[_DueSchedule, plan.PlannedRun]] = []
        replace_jobs: list[uuid.UUID] = []
        advances: list[dict[str, Any]] = []
        stalls: list[tuple[uuid.UUID, str, str]] = []
        remembered: dict[tuple[str | None, int | None, str], _RememberedSchedule] = {}
        for row in rows:
            try:
                schedule = _parse(row, remembered)
                rules = _rules(
                    row.spread_seconds,
                    row.concurrency_policy,
                    row.missed_fire_policy,
                    row.max_backfill,
                    row.starting_deadline_seconds,
                )
            except scheduling_errors.SchedulingError as error:
                stalls.append((row.id, error.reason, str(error)))
                report.outcomes.append(ScheduleOutcome(row.id, (error.reason,), str(error)))
                continue
            state = _quarantine_state(streaks.get(row.id, 0), row.quarantine_after)
            fire_plan = plan.plan_fires(
                job_identity=row.id,
                schedule=schedule,
                rules=rules,
                next_fire_time=row.next_fire_time,
                now=now,
                active_runs=active.get(row.job_id, 0),
                quarantine_state=state,
            )
            if fire_plan.cancel_active:
                replace_jobs.append(row.job_id)
            planned.extend((row, run) for run in fire_plan.runs)
            report.ran += fire_plan.ran
            report.backfilled += fire_plan.backfilled
            report.coalesced += fire_plan.coalesced
            report.skipped += fire_plan.skipped
            advances.append(
                {
                    "id": row.id,
                    "next_fire_time": fire_plan.next_fire_time,
                    "last_fire_time": fire_plan.runs[-1].fire_time if fire_plan.runs else None,
                    "created": len(fire_plan.runs),
                    "coalesced": fire_plan.coalesced,
                    "skipped": fire_plan.skipped,
                    "backfilled": fire_plan.backfilled,
                    "consecutive_failures": state.consecutive_failures,
                    "quarantined": state.quarantined,
                    "quarantine_message": state.message,
                }
            )
            if state.quarantined:
                report.quarantined += 1
                report.outcomes.append(
                    ScheduleOutcome(row.id, (quarantine.QUARANTINED,), None, state.message)
                )
            elif fire_plan.events:
                report.outcomes.append(ScheduleOutcome(row.id, fire_plan.events))

        if stalls:
            report.stalled = len(stalls)
            await conn.execute(
                queries.get("trigger_stall_schedules"),
                {
                    "ids": [s[0] for s in stalls],
                    "reasons": [s[1] for s in stalls],
                    "errors": [s[2] for s in stalls],
                },
            )
        if replace_jobs:
            report.cancelled = await _cancel_active(conn, replace_jobs)
        if planned:
            report.runs = await _insert_fires(conn, planned, pace)
            report.created = len(report.runs)
            report.duplicates = len(planned) - report.created
        if advances:
            await conn.execute(queries.get("trigger_advance_schedules"), _columns(advances))
    return report


@dataclass(frozen=True)
class _DueSchedule:
    id: uuid.UUID
    job_id: uuid.UUID
    cron: str | None
    interval_seconds: int | None
    timezone: str
    next_fire_time: datetime
    spread_seconds: int
    concurrency_policy: str
    missed_fire_policy: str
    max_backfill: int
    starting_deadline_seconds: int | None
    consecutive_failures: int
    failures_counted_after: int
    quarantine_after: int | None


class _RememberedSchedule:
    """A schedule that answers each question once per transaction.

    Thousands of jobs share a handful of expressions (``0 * * * *``) and the same
    ``next_fire_time``; croniter takes a fraction of a millisecond per step, which for 10,000
    fires would dominate the transaction. Answers are pure, so remembering them is safe.
    """

    def __init__(self, schedule: cron.Schedule) -> None:
        self._schedule = schedule
        self._next: dict[datetime, datetime] = {}
        self._previous: dict[datetime, datetime] = {}

    @property
    def text(self) -> str:
        return self._schedule.text

    def next_fire_after(self, after: datetime) -> datetime:
        found = self._next.get(after)
        if found is None:
            found = self._next[after] = self._schedule.next_fire_after(after)
        return found

    def previous_fire_at_or_before(self, at: datetime) -> datetime:
        found = self._previous.get(at)
        if found is None:
            found = self._previous[at] = self._schedule.previous_fire_at_or_before(at)
        return found


def _parse(
    row: _DueSchedule, remembered: dict[tuple[str | None, int | None, str], _RememberedSchedule]
) -> cron.Schedule:
    key = (row.cron, row.interval_seconds, row.timezone)
    found = remembered.get(key)
    if found is not None:
        return found
    if row.cron is not None:
        parsed: cron.Schedule = cron.parse_schedule(row.cron, row.timezone)
    else:
        assert row.interval_seconds is not None  # the table's CHECK: one of the two is set
        parsed = cron.IntervalSchedule(
            every=timedelta(seconds=row.interval_seconds), text=f"@every {row.interval_seconds}s"
        )
    found = remembered[key] = _RememberedSchedule(parsed)
    return found


def _rules(
    spread_seconds: int,
    concurrency_policy: str,
    missed_fire_policy: str,
    max_backfill: int,
    starting_deadline_seconds: int | None,
) -> plan.ScheduleRules:
    return plan.ScheduleRules(
        missed_fire_rules=missed_fires.MissedFireRules.from_spec(
            missed_fire_policy,
            # maxBackfill means something only with Backfill; the column defaults to 10.
            max_backfill if missed_fire_policy == "Backfill" else 1,
            starting_deadline_seconds,
        ),
        concurrency_policy=concurrency.ConcurrencyPolicy.from_spec(concurrency_policy),
        spread_seconds=spread_seconds,
    )


def _quarantine_state(streak: int, quarantine_after: int | None) -> quarantine.QuarantineState:
    if streak == 0:
        return quarantine.QuarantineState()
    before = quarantine.QuarantineState(consecutive_failures=streak - 1)
    return quarantine.record_failure(before, quarantine_after)


async def _active_runs(conn: Connection, rows: Sequence[_DueSchedule]) -> dict[uuid.UUID, int]:
    # Allow never looks at active runs; the common case (Forbid) needs one indexed probe per job.
    job_ids = [row.job_id for row in rows if row.concurrency_policy != "Allow"]
    if not job_ids:
        return {}
    cursor = await conn.execute(queries.get("trigger_active_runs"), {"job_ids": job_ids})
    return {job_id: int(count) for job_id, count in await cursor.fetchall()}


async def _failure_streaks(conn: Connection, rows: Sequence[_DueSchedule]) -> dict[uuid.UUID, int]:
    """Consecutive failed runs, newest first, counted up to each schedule's threshold."""
    watched = [row for row in rows if row.quarantine_after]
    if not watched:
        return {}
    cursor = await conn.execute(
        queries.get("trigger_recent_outcomes"),
        {
            "schedule_ids": [row.id for row in watched],
            "job_ids": [row.job_id for row in watched],
            "after_ids": [row.failures_counted_after for row in watched],
            "limits": [row.quarantine_after for row in watched],
        },
    )
    newest_first: dict[uuid.UUID, list[str]] = collections.defaultdict(list)
    for schedule_id, _run_id, state in await cursor.fetchall():
        newest_first[schedule_id].append(state)
    streaks: dict[uuid.UUID, int] = {}
    for schedule_id, states in newest_first.items():
        streak = 0
        for state in states:
            if state not in _FAILED_STATES:
                break
            streak += 1
        streaks[schedule_id] = streak
    return streaks


async def _cancel_active(conn: Connection, job_ids: Sequence[uuid.UUID]) -> int:
    cursor = await conn.execute(
        queries.get("trigger_cancel_active"), {"job_ids": list(job_ids), "reason": REPLACED_REASON}
    )
    rows = await cursor.fetchall()
    # A run that had not started ends now, and so do its dependents (as runs.cancel does);
    # a running one ends when its worker sees the request.
    doomed = {
        run_id: "cancelled"
        for run_id, state, has_dependents in rows
        if has_dependents and state == "cancelled"
    }
    if doomed:
        await dependencies.fail_dependents(conn, doomed)
    return len(rows)


async def _insert_fires(
    conn: Connection,
    planned: Sequence[tuple[_DueSchedule, plan.PlannedRun]],
    pace: Callable[[datetime], datetime] | None,
) -> list[FiredRun]:
    ordered = sorted(planned, key=lambda item: (item[1].run_at, item[0].id))
    run_ats = [run.run_at if pace is None else pace(run.run_at) for _, run in ordered]
    cursor = await conn.execute(
        queries.get("trigger_insert_fires"),
        {
            "schedule_ids": [row.id for row, _ in ordered],
            "job_ids": [row.job_id for row, _ in ordered],
            "fire_times": [run.fire_time for _, run in ordered],
            "run_ats": run_ats,
        },
    )
    return [FiredRun(*row) for row in await cursor.fetchall()]


def _columns(advances: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    names = {
        "id": "ids",
        "next_fire_time": "next_fire_times",
        "last_fire_time": "last_fire_times",
        "created": "created",
        "coalesced": "coalesced",
        "skipped": "skipped",
        "backfilled": "backfilled",
        "consecutive_failures": "consecutive_failures",
        "quarantined": "quarantined",
        "quarantine_message": "quarantine_messages",
    }
    return {plural: [advance[key] for advance in advances] for key, plural in names.items()}


def _offset_ms(schedule_id: uuid.UUID, spread_seconds: int) -> int:
    try:
        offset = spread.offset_for(schedule_id, spread_seconds)
    except scheduling_errors.SchedulingError:
        return 0
    return int(offset / timedelta(milliseconds=1))


def _job_row(
    job_id: uuid.UUID,
    namespace: str,
    name: str,
    generation: int,
    spec: scheduled_job.ScheduledJobSpec,
) -> dict[str, Any]:
    retry = spec.retry
    template = spec.template
    handler = spec.handler
    if template is not None:
        handler_name, model = (handler.name if handler else f"pod:{namespace}/{name}"), "pod"
    else:
        assert handler is not None  # the CRD's CEL rule: exactly one of handler / template
        handler_name, model = handler.name, handler.execution_model
    policy = spec.failure_policy
    return {
        "id": job_id,
        "namespace": namespace,
        "name": name,
        "generation": generation,
        "handler": handler_name,
        "execution_model": model,
        "queue": spec.queue,
        "priority": spec.priority,
        "timeout_seconds": spec.timeout_seconds or DEFAULT_TIMEOUT_SECONDS,
        "max_retries": retry.max_retries if retry else 3,
        "backoff_base_seconds": float(retry.backoff_base_seconds) if retry else 1.0,
        "backoff_cap_seconds": float(retry.backoff_cap_seconds) if retry else 300.0,
        "dependency": spec.dependency,
        "quarantine_after": spec.quarantine_after,
        "pod_template": (
            # A handler run as a Pod of the runner image needs no template of its own.
            (Jsonb({}) if model == "pod" else None)
            if template is None
            else Jsonb(template.model_dump(mode="json", by_alias=True, exclude_none=True))
        ),
        "failure_policy": Jsonb(
            []
            if policy is None
            else [
                rule.model_dump(mode="json", by_alias=True, exclude_none=True)
                for rule in policy.rules
            ]
        ),
        "successful_runs_history_limit": spec.successful_runs_history_limit,
        "failed_runs_history_limit": spec.failed_runs_history_limit,
    }


async def _get(conn: Connection, schedule_id: uuid.UUID) -> ScheduleInfo | None:
    cursor = await conn.execute(queries.get("schedule_get"), {"id": schedule_id})
    row = await cursor.fetchone()
    return None if row is None else ScheduleInfo(*row)
