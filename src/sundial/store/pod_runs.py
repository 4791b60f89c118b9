"""What the pod launcher reads and writes besides claim, heartbeat and finish.

* ``launch_context``: the job's template, namespace, failure policy, start timeout, OOM
  memory bump and pod deletion policy for claimed runs, and how many of each run's earlier
  attempts were OOMKilled.
* ``record_pod``: the Pod of the current attempt (name and UID, then exit code and reason),
  fenced on ``(id, attempt, lease owner, running)`` like every worker write: a stale
  launcher's write changes nothing and returns False.
* ``held_runs``: pod runs a worker id still holds, so a launcher restarted with the same id
  adopts their Pods instead of waiting for the reaper, each with the Pod name last recorded
  on the run: ``record_pod`` runs only after the create succeeded, so the current attempt's
  name there means its Pod was created (and, if it is gone now, was deleted).
* ``current_attempts``: each run's state, attempt and lease owner, to tell current Pods from
  stale ones.
* ``quarantine_schedule``: a failurePolicy ``Quarantine`` action on the run's schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sundial.api import error_text
from sundial.scheduling.run_state import RunState, coerce_state
from sundial.store import claims, queries
from sundial.store.pool import Pool

__all__ = [
    "HeldRun",
    "LaunchContext",
    "RunAttempt",
    "current_attempts",
    "held_runs",
    "launch_context",
    "quarantine_schedule",
    "record_pod",
    "take_over",
]


@dataclass(frozen=True)
class LaunchContext:
    run_id: int
    namespace: str
    job_name: str
    pod_template: dict[str, Any]
    failure_policy: list[dict[str, Any]]
    start_timeout_seconds: int | None
    #: The job's oom.memoryIncreasePercent and oom.maxMemory (bytes); None: the launcher's.
    oom_memory_increase_percent: int | None
    oom_max_memory_bytes: int | None
    #: podDeletionPolicy: ``Retry`` or ``Cancel``.
    pod_deletion_policy: str
    oom_kills: int


@dataclass(frozen=True)
class HeldRun:
    run: claims.ClaimedRun
    #: The Pod name last recorded on the run, or None; compare it with the current
    #: attempt's (deterministic) name: it may be an earlier attempt's.
    recorded_pod_name: str | None
    #: The UID recorded with that name (None: not recorded, or by a version that did not).
    recorded_pod_uid: str | None = None


@dataclass(frozen=True)
class RunAttempt:
    run_id: int
    state: RunState
    attempt: int
    lease_owner: str | None

    def __post_init__(self) -> None:
        coerce_state(self)


async def launch_context(pool: Pool, run_ids: Sequence[int]) -> dict[int, LaunchContext]:
    if not run_ids:
        return {}
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("pod_launch_context"), {"ids": list(run_ids)})
        rows = await cursor.fetchall()
    return {
        row[0]: LaunchContext(
            row[0],
            row[1],
            row[2],
            row[3] or {},
            row[4] or [],
            row[5],
            row[6],
            row[7],
            row[8],
            row[9],
        )
        for row in rows
    }


async def record_pod(
    pool: Pool,
    worker: str,
    run_id: int,
    attempt: int,
    *,
    pod_name: str,
    pod_uid: str | None = None,
    exit_code: int | None = None,
    reason: str | None = None,
) -> bool:
    """Record the attempt's Pod (``pod_uid``: the object created, None before there is one);
    False when the attempt is no longer this worker's."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("pod_record"),
            {
                "id": run_id,
                "attempt": attempt,
                "worker": worker,
                "pod_name": pod_name,
                "pod_uid": pod_uid,
                "exit_code": exit_code,
                "reason": None if reason is None else reason[:256],
            },
        )
        return await cursor.fetchone() is not None


async def held_runs(pool: Pool, worker: str) -> list[HeldRun]:
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("pod_held_runs"), {"worker": worker})
        rows = await cursor.fetchall()
    return [HeldRun(claims.ClaimedRun._make(row[:-2]), row[-2], row[-1]) for row in rows]


async def take_over(pool: Pool, *, previous: str, worker: str) -> list[int]:
    """Make the pod runs ``previous`` still holds ``worker``'s, under the same attempts; return
    their ids. For a new leader whose predecessor stopped (an upgrade, a failover): it adopts
    their Pods (``held_runs``) instead of leaving them to the reaper, which would start each
    run over under a new attempt. Call it only while holding the lease ``previous`` held."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("pod_take_over"), {"previous": previous, "worker": worker}
        )
        return sorted(row[0] for row in await cursor.fetchall())


async def current_attempts(pool: Pool, run_ids: Sequence[int]) -> dict[int, RunAttempt]:
    if not run_ids:
        return {}
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("pod_run_attempts"), {"ids": list(run_ids)})
        rows = await cursor.fetchall()
    return {row[0]: RunAttempt(*row) for row in rows}


async def quarantine_schedule(pool: Pool, run_id: int, message: str) -> bool:
    """Quarantine the schedule that fired ``run_id``; False for a one-shot run or when it
    was quarantined already."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("pod_quarantine_schedule"),
            {"id": run_id, "message": error_text.truncate(message)},
        )
        return await cursor.fetchone() is not None
