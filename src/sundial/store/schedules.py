"""Schedules in the store: what the operator writes from ScheduledJob objects.

``upsert`` turns a ScheduledJob (uid, namespace, name, generation, spec) into its
``job_definitions`` and ``schedules`` rows; the schedule's id is the object's uid.
``next_fire_time`` is kept while the schedule text, zone and DST policy are unchanged (fires
missed while the operator was away still go through the missed-fire policy) and recomputed
when they change. PostgreSQL refusing a value (a NUL the models would have refused) leaves
the store's edge as ``errors.RefusedValueError``, after a rollback. An invalid cron
expression or time zone is stored as *stalled* (the schedule stops firing, with the error
naming the field) rather than raised, so an edit to a bad value never
leaves the old schedule firing. A newer generation of a quarantined ScheduledJob lifts the
quarantine (``clear_quarantine``, in the same transaction): a spec change is how a person says
the job is fixed. ``set_suspended``, ``clear_quarantine`` and ``deactivate`` are the other
changes a user makes; the trigger's transaction is in ``fires``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from psycopg.types.json import Jsonb

from sundial.api import common, error_text, scheduled_job
from sundial.scheduling import cron, plan, spread, time_zones, union
from sundial.scheduling import errors as scheduling_errors
from sundial.scheduling.clock import require_aware
from sundial.store import errors, queries
from sundial.store.pool import Connection, Pool

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "ScheduleInfo",
    "UpsertResult",
    "active_job_id",
    "clear_quarantine",
    "deactivate",
    "get",
    "next_due",
    "set_suspended",
    "upsert",
    "upsert_job",
]

DEFAULT_TIMEOUT_SECONDS = common.DEFAULT_TIMEOUT_SECONDS


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
    dst_policy = _dst_policy(spec)
    try:
        time_zones.require_iana(spec.time_zone)
        parsed = union.parse(
            spec.schedule,
            spec.additional_schedules or (),
            spec.exclusions or (),
            spec.time_zone,
            dst_policy,
        )
        plan.rules_from_policy(
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
        "cron": union.stored_text(
            spec.schedule, spec.additional_schedules or (), spec.exclusions or ()
        ),
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
        "last_error": None if stalled is None else error_text.truncate(str(stalled)),
        "dst_skipped_time": dst_policy.skipped_time,
        "dst_repeated_time": dst_policy.repeated_time,
    }
    async with pool.connection() as conn, conn.transaction():
        cursor = await conn.execute(queries.get("schedule_stored_generation"), {"id": schedule_id})
        before = await cursor.fetchone()
        cursor = await conn.execute(
            queries.get("active_job_by_name"), {"namespace": namespace, "name": name}
        )
        holder = await cursor.fetchone()
        if holder is not None and holder[0] != schedule_id:
            raise await _name_taken(conn, namespace, name, holder[0])
        cursor = await conn.execute(queries.get("schedule_upsert_job"), job_row)
        if await cursor.fetchone() is None:
            stored = await _get(conn, schedule_id)
            return UpsertResult(
                schedule_id, False, stored.next_fire_time if stored else None, stalled, False
            )
        cursor = await conn.execute(queries.get("schedule_upsert"), schedule_row)
        row = await cursor.fetchone()
        assert row is not None
        if before is not None and before[1] and generation > before[0]:
            # A spec change lifts a quarantine, as the Stalled condition promises: the person
            # fixed the job (or decided to try again), so the old failure streak is forgotten.
            await conn.execute(queries.get("schedule_clear_quarantine"), {"id": schedule_id})
    return UpsertResult(schedule_id, bool(row[1]), None if stalled is not None else row[0], stalled)


async def _name_taken(
    conn: Connection, namespace: str, name: str, holder: uuid.UUID
) -> errors.NameTakenError:
    cursor = await conn.execute(queries.get("schedule_exists"), {"id": holder})
    row = await cursor.fetchone()
    return errors.NameTakenError(namespace, name, by_schedule=bool(row and row[0]))


async def upsert_job(
    pool: Pool,
    *,
    uid: uuid.UUID | str,
    namespace: str,
    name: str,
    generation: int,
    spec: common.JobSpec,
) -> bool:
    """Create or update a job definition with no schedule (a JobRun's inline ``job``).

    ``name`` must not be a ScheduledJob's name in ``namespace`` (one active definition owns a
    name): the operator uses ``jobrun:<uid>``. False when a newer generation is stored already.
    """
    row = _job_row(uuid.UUID(str(uid)), namespace, name, generation, spec)
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("schedule_upsert_job"), row)
        return await cursor.fetchone() is not None


async def active_job_id(pool: Pool, namespace: str, name: str) -> uuid.UUID | None:
    """The id of the active job named ``name`` in ``namespace`` (a ScheduledJob's, a JobRun's
    inline one, or one defined from Python), or None."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("active_job_by_name"), {"namespace": namespace, "name": name}
        )
        row = await cursor.fetchone()
    return None if row is None else uuid.UUID(str(row[0]))


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


async def database_now(pool: Pool) -> datetime:
    """The database's clock (the one that wrote ``created_at``)."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("database_now"))
        row = await cursor.fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


async def deactivate_orphans(
    pool: Pool,
    *,
    kept: Sequence[uuid.UUID],
    listed_at: datetime,
    namespaces: Sequence[str] | None,
) -> list[tuple[uuid.UUID, str, str]]:
    """Deactivate the schedules whose ScheduledJob a complete LIST, begun at ``listed_at``
    (the database's clock), did not return: (id, namespace, name) of each.

    Only schedules stored before the LIST began and in the namespaces it covered: one stored
    since may belong to an object created after it."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("schedule_deactivate_orphans"),
            {
                "kept": list(kept),
                "listed_at": listed_at,
                "namespaces": None if namespaces is None else list(namespaces),
            },
        )
        return [(row[0], row[1], row[2]) for row in await cursor.fetchall()]


async def get(pool: Pool, schedule_id: uuid.UUID) -> ScheduleInfo | None:
    async with pool.connection() as conn:
        return await _get(conn, schedule_id)


async def next_due(pool: Pool) -> datetime | None:
    """The earliest ``next_fire_time`` of a schedule that may fire, for the loop's sleep."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("trigger_next_due"))
        row = await cursor.fetchone()
    return None if row is None else row[0]


def _dst_policy(spec: scheduled_job.ScheduledJobSpec) -> cron.DstPolicy:
    """The spec's ``dstPolicy`` (the models admitted only known choices)."""
    chosen = spec.dst_policy or scheduled_job.DstPolicy()
    return cron.DstPolicy(chosen.skipped_time, chosen.repeated_time)


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
    spec: common.JobSpec,
) -> dict[str, Any]:
    retry = spec.retry
    template = spec.template
    handler = spec.handler
    # None: the handler's registration decides (sundial.api.execution_model).
    model: common.ExecutionModel | None
    if template is not None:
        handler_name = handler.name if handler else f"pod:{namespace}/{name}"
        model = common.ExecutionModel.POD
    else:
        assert handler is not None  # the CRD's CEL rule: exactly one of handler / template
        handler_name, model = handler.name, handler.execution_model
    policy = spec.failure_policy
    oom = spec.oom or common.OomSpec()
    return {
        "id": job_id,
        "namespace": namespace,
        "name": name,
        "generation": generation,
        "handler": handler_name,
        "execution_model": None if model is None else model.value,
        "queue": spec.queue,
        "priority": spec.priority,
        # NULL: the handler's registration decides, else DEFAULT_TIMEOUT_SECONDS (migration 0080).
        "timeout_seconds": spec.timeout_seconds,
        "max_retries": retry.max_retries if retry else 3,
        "max_lost_leases": retry.max_lost_leases if retry else 3,
        "backoff_base_seconds": float(retry.backoff_base_seconds) if retry else 1.0,
        "backoff_cap_seconds": float(retry.backoff_cap_seconds) if retry else 300.0,
        "dependency": spec.dependency,
        "quarantine_after": getattr(spec, "quarantine_after", None),
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
        # A JobRun's inline job has no history limits of its own; the columns' defaults apply.
        "successful_runs_history_limit": getattr(spec, "successful_runs_history_limit", 3),
        "failed_runs_history_limit": getattr(spec, "failed_runs_history_limit", 1),
        # Pod jobs only (the CRD's CEL rules); NULL: the launcher's default.
        "start_timeout_seconds": spec.start_timeout_seconds,
        "oom_max_retries": oom.max_retries,
        "oom_memory_increase_percent": oom.memory_increase_percent,
        "oom_max_memory_bytes": oom.max_memory_bytes,
        "pod_deletion_policy": spec.pod_deletion_policy or "Retry",
        "concurrency_key": None if spec.concurrency_key is None else spec.concurrency_key.name,
        "concurrency_limit": None if spec.concurrency_key is None else spec.concurrency_key.limit,
    }


async def _get(conn: Connection, schedule_id: uuid.UUID) -> ScheduleInfo | None:
    cursor = await conn.execute(queries.get("schedule_get"), {"id": schedule_id})
    row = await cursor.fetchone()
    return None if row is None else ScheduleInfo(*row)
