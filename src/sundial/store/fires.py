"""The trigger's transaction: due schedules into runs, once each, with every policy.

``fire_due`` is one transaction over at most ``batch_size`` due schedules. It

1. locks due schedules ``FOR NO KEY UPDATE SKIP LOCKED`` (a second trigger loop takes other
   rows; a run's foreign-key check, which takes KEY SHARE, never waits for it: ADR 0006),
   and the schedules whose waiting fire (BufferOne) may start because no run of theirs is
   active,
2. reads each job's active-run count and, where ``quarantineAfter`` is set, its failure streak
   from the newest ended runs (so the finish path stays untouched),
3. asks ``scheduling.plan.plan_fires`` what to do (the pure layer holds every rule),
4. cancels active runs for Replace, inserts the runs - each through its unique
   ``(schedule_id, fire_time)`` key in ``schedule_fires``, ``ON CONFLICT DO NOTHING`` - and
   advances ``next_fire_time`` and the fire counters,

and commits all of it at once: a crash anywhere leaves either everything or nothing, and a
fire is created once even when two loops run (docs/adr/0006-trigger-loop.md). A schedule
whose cron or zone cannot be parsed is marked stalled and skipped; it never stops the others.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sundial.scheduling import cron, plan, quarantine, run_state, union
from sundial.scheduling import errors as scheduling_errors
from sundial.scheduling.clock import require_aware
from sundial.scheduling.run_state import RunState, coerce_state
from sundial.store import dependencies, queries, quotas, runs
from sundial.store.pool import Connection, Pool

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "REPLACED_REASON",
    "FireReport",
    "FiredRun",
    "ScheduleOutcome",
    "fire_due",
]

#: Schedules per trigger transaction: big enough that 10,000 fires take a handful of round
#: trips, small enough that row locks are held for a few hundred milliseconds at most.
DEFAULT_BATCH_SIZE = 1000
REPLACED_REASON = "replaced by a newer fire (concurrencyPolicy: Replace)"
#: The outcome of a schedule whose fires were dropped for its namespace's active-run quota.
QUOTA_EXCEEDED = "QuotaExceeded"


@dataclass(frozen=True)
class FiredRun:
    run_id: int
    schedule_id: uuid.UUID
    fire_time: datetime
    run_at: datetime
    state: RunState

    def __post_init__(self) -> None:
        coerce_state(self)


@dataclass(frozen=True)
class ScheduleOutcome:
    """What happened to one schedule: the operator turns ``events`` into Kubernetes Events."""

    schedule_id: uuid.UUID
    events: tuple[str, ...]
    stalled: str | None = None
    newly_quarantined: str | None = None
    #: The ``MissSchedule`` Event's message: the due fires counted (``plan.FirePlan``).
    missed_message: str | None = None
    #: The ``QuotaExceeded`` Event's message: fires dropped for the namespace's quota.
    quota_message: str | None = None


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
    #: Fires BufferOne set waiting behind an active run, and waiting fires that started.
    buffered: int = 0
    released: int = 0
    #: Fires dropped because their namespace was at its active-run quota (also in ``skipped``).
    over_quota: int = 0
    runs: list[FiredRun] = field(default_factory=list)
    #: (schedule id, fire time) of the waiting fires among ``runs``: created long after their
    #: fire time by design, so they stay out of the creation-lag figure.
    released_fires: set[tuple[uuid.UUID, datetime]] = field(default_factory=set)
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
            "buffered",
            "released",
            "over_quota",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.runs.extend(other.runs)
        self.released_fires |= other.released_fires
        self.outcomes.extend(other.outcomes)


async def fire_due(
    pool: Pool,
    *,
    now: datetime,
    batch_size: int = DEFAULT_BATCH_SIZE,
    pace: Callable[[datetime, str], datetime] | None = None,
    hot: Any = None,
) -> FireReport:
    """Handle up to ``batch_size`` due schedules at ``now`` in one transaction.

    ``pace`` (the loop's fire budget) is called once per run to create, with its ``run_at``
    and its job's namespace, and returns the ``run_at`` to store (the same instant or later).
    ``hot``: the hot queue's Redis client, where the database's hot queue is on: ``Replace``
    then cancels a run Redis holds as a running run (``runs.cancel``).
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
        if len(rows) < batch_size:
            cursor = await conn.execute(
                queries.get("trigger_buffered_schedules"),
                {"taken": [row.id for row in rows], "limit": batch_size - len(rows)},
            )
            rows.extend(_DueSchedule(*row) for row in await cursor.fetchall())
        if not rows:
            return report
        report.schedules = len(rows)
        active = await _active_runs(conn, rows)
        streaks = await _failure_streaks(conn, rows)

        planned: list[tuple[_DueSchedule, plan.PlannedRun]] = []
        replace_jobs: list[uuid.UUID] = []
        advances: list[dict[str, Any]] = []
        stalls: list[tuple[uuid.UUID, str, str]] = []
        remembered: dict[_ScheduleKey, _RememberedSchedule] = {}
        for row in rows:
            try:
                schedule = _parse(row, remembered)
                rules = plan.rules_from_policy(
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
                buffered_fire_time=row.buffered_fire_time,
            )
            if fire_plan.cancel_active:
                replace_jobs.append(row.job_id)
            planned.extend((row, run) for run in fire_plan.runs)
            report.ran += fire_plan.ran
            report.backfilled += fire_plan.backfilled
            report.coalesced += fire_plan.coalesced
            report.skipped += fire_plan.skipped
            report.buffered += fire_plan.buffered
            report.released += fire_plan.released
            if fire_plan.released:
                assert row.buffered_fire_time is not None
                report.released_fires.add((row.id, row.buffered_fire_time))
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
                    "buffered_fire_time": fire_plan.buffered_fire_time,
                }
            )
            if state.quarantined:
                report.quarantined += 1
                report.outcomes.append(
                    ScheduleOutcome(row.id, (quarantine.QUARANTINED,), None, state.message)
                )
            elif fire_plan.events:
                report.outcomes.append(
                    ScheduleOutcome(
                        row.id, fire_plan.events, missed_message=fire_plan.missed_message
                    )
                )

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
            report.cancelled = await _cancel_active(conn, replace_jobs, hot)
        if planned:
            planned = await _within_quotas(conn, planned, advances, report)
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
    namespace: str
    dst_skipped_time: str
    dst_repeated_time: str
    buffered_fire_time: datetime | None


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


#: What makes two schedule rows fire alike: cron or interval, zone, and DST policy.
_ScheduleKey = tuple[str | None, int | None, str, str, str]


def _parse(row: _DueSchedule, remembered: dict[_ScheduleKey, _RememberedSchedule]) -> cron.Schedule:
    key = (
        row.cron,
        row.interval_seconds,
        row.timezone,
        row.dst_skipped_time,
        row.dst_repeated_time,
    )
    found = remembered.get(key)
    if found is not None:
        return found
    if row.cron is not None:
        dst_policy = cron.DstPolicy(row.dst_skipped_time, row.dst_repeated_time)
        parsed: cron.Schedule = union.parse_stored(row.cron, row.timezone, dst_policy)
    else:
        assert row.interval_seconds is not None  # the table's CHECK: one of the two is set
        parsed = cron.IntervalSchedule(
            every=timedelta(seconds=row.interval_seconds), text=f"@every {row.interval_seconds}s"
        )
    found = remembered[key] = _RememberedSchedule(parsed)
    return found


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
            if state not in run_state.FAILED:
                break
            streak += 1
        streaks[schedule_id] = streak
    return streaks


async def _cancel_active(conn: Connection, job_ids: Sequence[uuid.UUID], hot: Any) -> int:
    held: set[int] = set()
    if hot is not None:  # runs Redis holds are asked to stop as running runs are (runs.cancel)
        cursor = await conn.execute(
            queries.get("cancel_targets_of_jobs"), {"job_ids": list(job_ids)}
        )
        held = await runs.held_in_redis(hot, [(row[0], row[1]) for row in await cursor.fetchall()])
        if held:
            await conn.execute(
                queries.get("cancel_held"), {"ids": sorted(held), "reason": REPLACED_REASON}
            )
    cursor = await conn.execute(
        queries.get("trigger_cancel_active"),
        {"job_ids": list(job_ids), "reason": REPLACED_REASON, "held": sorted(held)},
    )
    rows = await cursor.fetchall()
    # A run that had not started ends now, and so do its dependents (as runs.cancel does);
    # a running one ends when its worker sees the request.
    doomed = {
        run_id: run_state.RunState.CANCELLED
        for run_id, state, has_dependents in rows
        if has_dependents and state == run_state.RunState.CANCELLED
    }
    if doomed:
        await dependencies.fail_dependents(conn, doomed)
    return len(rows) + len(held)


async def _within_quotas(
    conn: Connection,
    planned: list[tuple[_DueSchedule, plan.PlannedRun]],
    advances: Sequence[dict[str, Any]],
    report: FireReport,
) -> list[tuple[_DueSchedule, plan.PlannedRun]]:
    """The planned runs that fit their namespaces' active-run quotas (earliest fires first);
    the rest are dropped, counted as skipped and reported (``QuotaExceeded``). The quota
    rows stay locked until the commit, so what fits now still fits at the insert."""
    room = await quotas.room(conn, collections.Counter(row.namespace for row, _ in planned))
    if not room:
        return planned
    kept: list[tuple[_DueSchedule, plan.PlannedRun]] = []
    dropped: dict[uuid.UUID, list[plan.PlannedRun]] = collections.defaultdict(list)
    rows: dict[uuid.UUID, _DueSchedule] = {}
    for row, run in sorted(planned, key=lambda item: (item[1].fire_time, item[0].id)):
        left = room.get(row.namespace)
        if left is None or left.room > 0:
            if left is not None:
                room[row.namespace] = left.taking_one()
            kept.append((row, run))
        else:
            dropped[row.id].append(run)
            rows[row.id] = row
    if not dropped:
        return planned
    by_id = {advance["id"]: advance for advance in advances}
    for schedule_id, cut in dropped.items():
        advance = by_id[schedule_id]
        advance["created"] -= len(cut)
        advance["skipped"] += len(cut)
        ours = [run.fire_time for row, run in kept if row.id == schedule_id]
        advance["last_fire_time"] = max(ours) if ours else None
        report.skipped += len(cut)
        report.over_quota += len(cut)
        quota = room[rows[schedule_id].namespace]
        fire_times = ", ".join(run.fire_time.isoformat() for run in cut[:3])
        more = f" and {len(cut) - 3} more" if len(cut) > 3 else ""
        report.outcomes.append(
            ScheduleOutcome(
                schedule_id,
                (QUOTA_EXCEEDED,),
                quota_message=(
                    f"dropped the fire of {fire_times}{more}: namespace "
                    f"{rows[schedule_id].namespace} holds {quota.active} active runs, its quota"
                    f" is {quota.quota}; it fires again once some have ended"
                ),
            )
        )
    return kept


async def _insert_fires(
    conn: Connection,
    planned: Sequence[tuple[_DueSchedule, plan.PlannedRun]],
    pace: Callable[[datetime, str], datetime] | None,
) -> list[FiredRun]:
    ordered = sorted(planned, key=lambda item: (item[1].run_at, item[0].id))
    run_ats = [
        run.run_at if pace is None else pace(run.run_at, row.namespace) for row, run in ordered
    ]
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
        "buffered_fire_time": "buffered_fire_times",
    }
    return {plural: [advance[key] for advance in advances] for key, plural in names.items()}
