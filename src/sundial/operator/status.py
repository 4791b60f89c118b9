"""What the status of a ScheduledJob or a JobRun should be, computed from PostgreSQL.

Pure functions: given the object as the apiserver has it and the store's view of its runs,
they return the whole desired ``status`` (``None`` values mean "absent", which a JSON merge
patch deletes). ``changes`` compares that with the object's status so the operator writes
only when something a user can see changed; that is what bounds the status mirror's write
rate by the number of objects rather than by the number of runs. Conditions keep their
``lastTransitionTime`` unless their status changes (``api.conditions.set_condition``).

The conditions follow kstatus (``sigs.k8s.io/cli-utils``, read by Flux, ``kubectl wait`` and
Helm): ``observedGeneration``, ``Reconciling=True`` while work is under way, ``Stalled=True``
when only a person can help (an invalid spec, a quarantine, a JobRun that ended in failure);
a JobRun also gets Job-style ``Complete`` and ``Failed`` (``job_run_conditions``).
"""

from __future__ import annotations

import datetime
import functools
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic

from sundial.api import common, conditions, error_text, job_run
from sundial.api.conditions import ConditionReason, ConditionType
from sundial.operator import slos
from sundial.scheduling.run_state import RunState
from sundial.store import circuits, history

__all__ = [
    "FAILED_PHASES",
    "PHASES",
    "changes",
    "circuit_open_message",
    "job_run_conditions",
    "job_run_status",
    "mirror_name",
    "rfc3339",
    "scheduled_job_status",
]

#: Run states in PostgreSQL -> JobRun phases.
PHASES: Mapping[str, job_run.Phase] = {  # every RunState (a test checks)
    RunState.SCHEDULED: "Pending",
    RunState.PENDING: "Pending",
    RunState.BLOCKED: "Blocked",
    RunState.RUNNING: "Running",
    RunState.RETRY_WAIT: "RetryWait",
    RunState.COMPLETED: "Succeeded",
    RunState.FAILED: "Failed",
    RunState.TIMED_OUT: "TimedOut",
    RunState.CANCELLED: "Cancelled",
    RunState.DEAD_LETTERED: "DeadLettered",
}


#: JobRun phases of a run that ended in failure: Failed=True and Stalled=True (kstatus: Failed).
FAILED_PHASES: Mapping[str, ConditionReason] = {
    "Failed": ConditionReason.RUN_FAILED,
    "TimedOut": ConditionReason.TIMED_OUT,
    "DeadLettered": ConditionReason.DEAD_LETTERED,
}

#: How the message of a quarantine by a failurePolicy rule starts (``pods.launcher`` writes it).
QUARANTINE_RULE_PREFIX = "failurePolicy Quarantine"

Wanted = tuple[str, common.ConditionStatus, str, str]


rfc3339 = common.rfc3339


def mirror_name(scheduled_job_name: str, run_id: int) -> str:
    """The JobRun that mirrors run ``run_id`` of a ScheduledJob (names are at most 52 + 11)."""
    return f"{scheduled_job_name}-{run_id}"


def job_run_status(run: history.RunView, *, generation: int | None) -> dict[str, Any]:
    """A JobRun's status for ``run``: phase, attempt, reason, times, the last error, why an
    unfinished run that is not running waits (``waiting``), and for a pod run its Pod
    (``podName``, ``exitCode``).

    The Pod fields are written only while the run row knows its Pod: an archived run has no
    Pod columns, and a merge patch of this dict then leaves what an earlier pass wrote. A new
    attempt's Pod clears the previous attempt's ``exitCode``. ``reason`` is the last failure's
    detail: the runner's (BadArgs, UnknownHandler …) or the Pod's own reason (OOMKilled,
    Evicted, ImagePullBackOff …), which the pod launcher keeps with the failure so a retry's
    Pod does not change the word; ``Timeout`` for a timeout in either mode. Without a detail
    it is the reason of a pod run's Pod that did not succeed, else the failure class of the
    failure table.
    """
    duration = None
    if run.started_at is not None and run.finished_at is not None:
        duration = job_run.format_duration((run.finished_at - run.started_at).total_seconds())
    reason = run.failure_detail
    if not reason and run.pod_reason and run.state != RunState.COMPLETED:
        reason = run.pod_reason
    reason = reason or run.failure_reason
    last_error = run.last_error
    if run.state == RunState.PENDING and run.unclaimable_reason:
        # A run no live runner can claim says so, with what to change (store.runners).
        reason, last_error = conditions.ConditionReason.UNCLAIMABLE, run.unclaimable_reason
    waits = run.why_it_waits()
    desired: dict[str, Any] = {
        "phase": PHASES.get(run.state),
        "runId": str(run.id),
        "attempt": run.attempt,
        "reason": reason[:128] if reason else None,
        "fireTime": rfc3339(run.fire_time),
        "startedAt": rfc3339(run.started_at),
        "finishedAt": rfc3339(run.finished_at),
        "duration": duration,
        "lastError": error_text.truncate(last_error) if last_error else None,
        "waiting": waits.message[: job_run.MAX_WAITING_CHARS] if waits else None,
        "observedGeneration": generation,
    }
    if run.pod_name is not None:
        desired["podName"] = run.pod_name
        desired["exitCode"] = run.pod_exit_code
    return desired


def job_run_conditions(run: history.RunView) -> list[Wanted]:
    """A JobRun's kstatus and Job-style conditions for ``run``.

    Unfinished: Reconciling=True (kstatus: InProgress). Succeeded: Complete=True (Current).
    Failed, TimedOut, DeadLettered: Failed=True and Stalled=True (kstatus: Failed; a new run is
    what helps). Cancelled: Failed=True only, for ``kubectl wait --for=condition=Failed``.
    """
    phase = PHASES.get(run.state, "Pending")
    detail = run.last_error or run.failure_reason or ""
    detail = error_text.truncate(detail) if detail else f"run {run.id} ended {phase}"
    if phase == "Succeeded":
        message = f"run {run.id} succeeded (attempt {run.attempt})"
        return [
            (ConditionType.COMPLETE, "True", ConditionReason.SUCCEEDED, message),
            _ok(ConditionType.FAILED),
            _ok(ConditionType.RECONCILING),
            _ok(ConditionType.STALLED),
        ]
    if phase in FAILED_PHASES:
        reason = FAILED_PHASES[phase]
        return [
            (ConditionType.COMPLETE, "False", reason, f"run {run.id} ended {phase}"),
            (ConditionType.FAILED, "True", reason, detail),
            _ok(ConditionType.RECONCILING),
            (ConditionType.STALLED, "True", reason, detail),
        ]
    if phase == "Cancelled":
        reason = ConditionReason.CANCELLED
        return [
            (ConditionType.COMPLETE, "False", reason, f"run {run.id} was cancelled"),
            (ConditionType.FAILED, "True", reason, detail),
            _ok(ConditionType.RECONCILING),
            _ok(ConditionType.STALLED),
        ]
    message = f"run {run.id} is {phase} (attempt {run.attempt})"
    reason = ConditionReason.RUN_NOT_FINISHED
    # Reconciling says why a run that is not running waits (scheduling.waiting); the words
    # hold absolute times only, so the condition changes only when the reason does.
    waits = run.why_it_waits()
    progress: Wanted = (ConditionType.RECONCILING, "True", reason, message)
    if waits is not None:
        text = error_text.truncate(f"run {run.id} is {phase}: {waits.message}")
        progress = (ConditionType.RECONCILING, "True", waits.reason, text)
    return [
        (ConditionType.COMPLETE, "False", reason, message),
        (ConditionType.FAILED, "False", reason, message),
        progress,
        _ok(ConditionType.STALLED),
    ]


def circuit_open_message(circuit: circuits.OpenCircuit) -> str:
    """The message of Degraded=True CircuitOpen: the dependency, how many runners see it open,
    and what happens to the runs. It names no time and no runner, so a pass writes it again
    only when the count changes (``changes``)."""
    return (
        f"the circuit breaker of dependency {circuit.dependency!r} is {circuit.summary()}: "
        "runs that call it wait in RetryWait without spending a retry, and run again once "
        "a probe call succeeds"
    )


def quarantine_reason(message: str | None) -> ConditionReason:
    """QuarantineRule for a quarantine by a failurePolicy rule, else ConsecutiveFailures."""
    if message is not None and message.startswith(QUARANTINE_RULE_PREFIX):
        return ConditionReason.QUARANTINE_RULE
    return ConditionReason.CONSECUTIVE_FAILURES


def changes(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that turns ``current`` into ``desired``; empty when they agree."""
    current = current or {}
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        if value is None:
            if current.get(key) is not None:
                patch[key] = None
        elif current.get(key) != value:
            patch[key] = value
    return patch


def _conditions(current: Mapping[str, Any] | None) -> list[common.Condition]:
    parsed: list[common.Condition] = []
    for raw in (current or {}).get("conditions") or ():
        try:
            parsed.append(common.Condition.model_validate(raw))
        except pydantic.ValidationError:
            continue  # a condition someone else wrote badly is replaced, not fatal
    return parsed


def conditions_with(
    current: Mapping[str, Any] | None,
    wanted: Sequence[Wanted],
    *,
    now: datetime.datetime,
    generation: int | None,
) -> list[dict[str, Any]]:
    """``current``'s conditions with each (type, status, reason, message) of ``wanted`` set.

    A ``generation`` that is not a whole number (a body that never passed the apiserver) is
    left out rather than allowed to fail the very condition that reports the bad body."""
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        generation = None
    unchanged = _unchanged(current, wanted, generation)
    if unchanged is not None:
        return unchanged
    now = now.replace(microsecond=0)
    result = _conditions(current)
    for condition_type, condition_status, reason, message in wanted:
        result = conditions.set_condition(
            result,
            condition_type,
            condition_status,
            reason,
            message,
            now=now,
            observed_generation=generation,
        )
    return [condition.to_manifest() for condition in result]


#: A lastTransitionTime as ``Condition.to_manifest`` writes one (whole seconds, UTC).
_CANONICAL_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_CONDITION_KEYS = frozenset(
    ("type", "status", "reason", "message", "lastTransitionTime", "observedGeneration")
)


def _unchanged(
    current: Mapping[str, Any] | None, wanted: Sequence[Wanted], generation: int | None
) -> list[dict[str, Any]] | None:
    """``current``'s conditions as they are, when setting ``wanted`` on them would give them
    back unchanged; else ``None`` (the full path then parses and rebuilds them).

    The common case of every pass over an object nothing happened to: validating, rebuilding
    and dumping each condition through pydantic was most of a pass over 10,000 idle
    ScheduledJobs (ADR 0038, amended). Only conditions in the exact form ``to_manifest``
    writes qualify, and only when they are exactly the wanted ones, so the result is the one
    the full path would return (a test compares them)."""
    raw = (current or {}).get("conditions")
    if not isinstance(raw, list) or len(raw) != len(wanted):
        return None
    by_type = {condition.get("type"): condition for condition in raw if isinstance(condition, dict)}
    if len(by_type) != len(raw):
        return None
    for condition_type, condition_status, reason, message in wanted:
        found = by_type.get(condition_type)
        if (
            found is None
            or found.keys() - _CONDITION_KEYS
            or found.get("status") != condition_status
            or found.get("reason") != reason
            or found.get("message") != message[: conditions.MAX_MESSAGE_LENGTH]
            or "\x00" in message
            or found.get("observedGeneration") != generation
            or (generation is None and "observedGeneration" in found)
            or (generation is not None and type(found["observedGeneration"]) is not int)
            or not _canonical_time(found.get("lastTransitionTime"))
        ):
            return None
    return [dict(condition) for condition in raw]


def _canonical_time(value: Any) -> bool:
    if not isinstance(value, str) or not _CANONICAL_TIME.match(value):
        return False
    try:
        datetime.datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _ok(condition_type: ConditionType) -> Wanted:
    return (condition_type, "False", ConditionReason.AS_EXPECTED, "")


def scheduled_job_status(
    body: Mapping[str, Any],
    *,
    spec_error: str | None,
    schedule: history.ScheduleView | None,
    window: history.Window | None,
    missed: tuple[str, str] | None,
    now: datetime.datetime,
    circuit: circuits.OpenCircuit | None = None,
    spec_error_reason: str = ConditionReason.INVALID_SPEC,
) -> dict[str, Any]:
    """A ScheduledJob's whole status (see the module docstring).

    ``spec_error_reason``: the Stalled reason ``spec_error`` is reported with (InvalidSpec, or
    NameTaken for a name another job holds).

    ``circuit``: the open circuit of the dependency its ``spec.dependency`` names, if any:
    Degraded=True, reason CircuitOpen, until the circuit closes on every live runner.
    """
    metadata = body.get("metadata") or {}
    name = metadata.get("name", "")
    namespace = metadata.get("namespace", "")
    generation = metadata.get("generation")
    current = body.get("status") or {}
    wanted: list[Wanted] = []
    observed: int | None = generation
    firing = False
    if spec_error is not None:
        reason = spec_error_reason
        wanted += [
            (ConditionType.STALLED, "True", reason, spec_error),
            (ConditionType.READY, "False", reason, spec_error),
            _ok(ConditionType.RECONCILING),
        ]
    elif schedule is None or not schedule.active:
        message = f"storing generation {generation} in PostgreSQL"
        wanted += [
            (ConditionType.RECONCILING, "True", ConditionReason.PROGRESSING, message),
            (ConditionType.READY, "Unknown", ConditionReason.PROGRESSING, message),
        ]
        observed = current.get("observedGeneration")
    elif schedule.stalled_reason is not None:
        message = schedule.last_error or schedule.stalled_reason
        wanted += [
            (ConditionType.STALLED, "True", schedule.stalled_reason, message),
            (ConditionType.READY, "False", schedule.stalled_reason, message),
            _ok(ConditionType.RECONCILING),
        ]
        observed = schedule.generation
    else:
        observed = schedule.generation
        firing = not (schedule.suspended or schedule.quarantined)
        if schedule.quarantined:
            # Only a spec change (or clearing the quarantine) resumes it: kstatus' Stalled.
            message = schedule.quarantine_message or "quarantined after repeated failures"
            reason = quarantine_reason(schedule.quarantine_message)
            wanted.append((ConditionType.STALLED, "True", reason, message))
        else:
            wanted.append(_ok(ConditionType.STALLED))
        if generation is not None and schedule.generation < generation:
            message = f"applying generation {generation} (stored: {schedule.generation})"
            wanted.append((ConditionType.RECONCILING, "True", ConditionReason.PROGRESSING, message))
        else:
            wanted.append(_ok(ConditionType.RECONCILING))
        if schedule.quarantined:
            message = schedule.quarantine_message or "quarantined after repeated failures"
            reason = quarantine_reason(schedule.quarantine_message)
            wanted.append((ConditionType.READY, "False", reason, message))
        else:
            message = f"generation {schedule.generation} is stored and scheduled"
            wanted.append((ConditionType.READY, "True", ConditionReason.RECONCILED, message))
    if schedule is not None and schedule.quarantined:
        message = schedule.quarantine_message or "quarantined after repeated failures"
        reason = quarantine_reason(schedule.quarantine_message)
        wanted += [
            (ConditionType.QUARANTINED, "True", reason, message),
            (ConditionType.SUSPENDED, "True", reason, message),
        ]
    else:
        wanted.append(_ok(ConditionType.QUARANTINED))
        if schedule is not None and schedule.suspended:
            message = "spec.suspend is true: no new runs fire"
            wanted.append(
                (ConditionType.SUSPENDED, "True", ConditionReason.SUSPENDED_BY_SPEC, message)
            )
        else:
            wanted.append(_ok(ConditionType.SUSPENDED))
    if missed is not None:
        wanted.append((ConditionType.SCHEDULE_MISSED, "True", missed[0], missed[1]))
    else:
        wanted.append(_ok(ConditionType.SCHEDULE_MISSED))

    active: list[dict[str, Any]] = []
    last_successful = None
    streak = 0
    if window is not None:
        active = [
            {"name": mirror_name(name, run.id), "namespace": namespace, "runId": str(run.id)}
            for run in window.active
        ]
        if window.successful:
            last_successful = window.successful[0].finished_at
        streak = sum(
            1
            for run in window.failed
            if run.state != RunState.CANCELLED
            and (last_successful is None or (run.finished_at or now) > last_successful)
        )
    if schedule is not None and schedule.quarantine_after is not None:
        streak = schedule.consecutive_failures
    broken: list[slos.Breach] = []
    if firing and window is not None:
        broken = slos.breaches(body, window, last_successful, now)
    if circuit is not None:
        reason = ConditionReason.CIRCUIT_OPEN
        wanted.append((ConditionType.DEGRADED, "True", reason, circuit_open_message(circuit)))
    elif broken:
        wanted.append((ConditionType.DEGRADED, "True", broken[0].reason, broken[0].message))
    else:
        wanted.append(_ok(ConditionType.DEGRADED))
    next_fire = None
    if firing and schedule is not None:
        next_fire = schedule.next_fire_time + datetime.timedelta(
            milliseconds=schedule.spread_offset_ms
        )
    return {
        "conditions": conditions_with(current, wanted, now=now, generation=observed),
        "observedGeneration": observed,
        "lastScheduleTime": rfc3339(schedule.last_fire_time) if schedule else None,
        "nextScheduleTime": rfc3339(next_fire),
        "bufferedScheduleTime": rfc3339(schedule.buffered_fire_time) if schedule else None,
        "lastSuccessfulTime": rfc3339(last_successful),
        "active": active or None,
        "activeCount": window.active_count if window is not None else 0,
        "consecutiveFailures": streak,
        "brokenSlos": [breach.as_status() for breach in broken] or None,
    }


def schedule_id(body: Mapping[str, Any]) -> uuid.UUID:
    """The id of a ScheduledJob's schedule in PostgreSQL: its object's UID."""
    return _uuid_of(str(body["metadata"]["uid"]))


@functools.lru_cache(maxsize=65_536)
def _uuid_of(uid: str) -> uuid.UUID:
    # A mirror pass asks for every ScheduledJob's several times; parsing the text each time
    # was a fifth of an idle pass at 10,000 ScheduledJobs.
    return uuid.UUID(uid)
