"""Condition types, condition reasons and Event reasons: the words users grep for.

Each is a named constant documented once, here. They are ``StrEnum`` members, so they are plain
strings on the wire (``Ready``, ``MissSchedule``) and a typo is a NameError, not a silent miss.
Condition reasons must match metav1's reason pattern (CamelCase, no spaces); a unit test checks
every member. ``set_condition`` applies metav1's rule that ``lastTransitionTime`` moves only when
the status changes, with the time passed in rather than read from a clock.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Sequence

from sundial.api import common

MAX_MESSAGE_LENGTH = 32768


class ConditionType(enum.StrEnum):
    """Condition types on a ScheduledJob's (and a JobRun's) ``status.conditions``."""

    READY = "Ready"
    """True when the spec is accepted, the schedule is stored and runs fire as declared."""
    RECONCILING = "Reconciling"
    """True while the operator is applying a new generation (abnormal-true: absent when idle)."""
    STALLED = "Stalled"
    """True when only a person can help: a spec that can't be acted on (bad cron, unknown zone,
    a ``jobRef`` naming nothing), a quarantined ScheduledJob, a JobRun that ended in failure.
    kstatus (Flux, ``kubectl wait``, Helm's ``--wait``) reads it as Failed."""
    SUSPENDED = "Suspended"
    """True while no new runs fire: ``spec.suspend`` or a quarantine."""
    QUARANTINED = "Quarantined"
    """True after ``quarantineAfter`` consecutive failed runs; clear it by editing the spec."""
    SCHEDULE_MISSED = "ScheduleMissed"
    """True when fires were missed (operator down, startingDeadlineSeconds exceeded)."""
    DEGRADED = "Degraded"
    """True while the job runs but not as declared (circuit open, store unreachable)."""
    COMPLETE = "Complete"
    """JobRun only, as on a Job: True once its run succeeded (``kubectl wait
    --for=condition=Complete``)."""
    FAILED = "Failed"
    """JobRun only, as on a Job: True once its run ended without success (failed, timed out,
    dead-lettered or cancelled; the reason says which)."""


class ConditionReason(enum.StrEnum):
    """Reasons set on conditions; each names the cause a person can act on."""

    RECONCILED = "Reconciled"
    """Ready=True: the current generation is stored and scheduled."""
    PROGRESSING = "Progressing"
    """Reconciling=True: a new generation is being applied."""
    INVALID_SCHEDULE = "InvalidSchedule"
    """Stalled=True: ``spec.schedule`` is not a valid 5-field cron expression or macro."""
    UNKNOWN_TIME_ZONE = "UnknownTimeZone"
    """Stalled=True: ``spec.timeZone`` is not an IANA time zone known to the operator."""
    INVALID_SPEC = "InvalidSpec"
    """Stalled=True: the spec breaks a rule the schema could not check (e.g. args size)."""
    JOB_NOT_FOUND = "JobNotFound"
    """Stalled=True on a JobRun whose ``jobRef`` names no ScheduledJob in its namespace."""
    SUSPENDED_BY_SPEC = "SuspendedBySpec"
    """Suspended=True: ``spec.suspend`` is true."""
    CONSECUTIVE_FAILURES = "ConsecutiveFailures"
    """Quarantined=True (and Suspended=True, Stalled=True): ``quarantineAfter`` runs failed in
    a row."""
    QUARANTINE_RULE = "QuarantineRule"
    """Quarantined=True (and Suspended=True, Stalled=True): a failurePolicy rule with action
    Quarantine matched."""
    MISSED_SCHEDULE = "MissSchedule"
    """ScheduleMissed=True: a fire was not started within ``startingDeadlineSeconds``."""
    TOO_MANY_MISSED = "TooManyMissedTimes"
    """ScheduleMissed=True: more fires were missed than the missed-fire policy replays."""
    CIRCUIT_OPEN = "CircuitOpen"
    """Degraded=True: the circuit breaker of ``spec.dependency`` is open; runs wait. Also
    Reconciling=True on a JobRun handed back because that circuit was open (it is due again
    later without spending a retry)."""
    STORE_UNAVAILABLE = "StoreUnavailable"
    """Degraded=True (or Ready=Unknown): PostgreSQL could not be reached."""
    NO_RECENT_SUCCESS = "NoRecentSuccess"
    """Degraded=True: ``slo.freshnessSeconds`` passed with no run of the ScheduledJob completed
    (the message says since when); False again once one completes."""
    NAME_TAKEN = "NameTaken"
    """Stalled=True: the ScheduledJob's name belongs to another active job in the namespace
    (one defined from Python with ``sundial.client``); nothing was stored."""
    LATE_START = "LateStart"
    """Degraded=True: a run waits, or the latest run started, more than
    ``slo.startLatenessSeconds`` after its fire time; False again once a run starts in time."""
    RUN_TOO_LONG = "RunTooLong"
    """Degraded=True: a run runs, or the latest run ran, longer than ``slo.maxDurationSeconds``;
    False again once a run ends in time."""
    AS_EXPECTED = "AsExpected"
    """An abnormal-true condition (Stalled, Suspended, …) is False: nothing to report."""
    WAITING_FOR_UPSTREAM = "WaitingForUpstream"
    """Reconciling=True on a JobRun whose ``dependsOn`` names a JobRun not submitted yet, or
    whose run is blocked on upstream runs that have not completed (the message names them)."""
    DEPENDENCY_CYCLE = "DependencyCycle"
    """Stalled=True on a JobRun whose ``dependsOn`` forms a cycle, or waits on a JobRun that is
    on one: it can never start until a person removes an edge (``dependsOn`` is editable until
    the run is submitted)."""
    SUBMITTED = "Submitted"
    """Ready=True on a JobRun: its run exists in PostgreSQL (``status.runId``)."""
    RUN_NOT_FINISHED = "RunNotFinished"
    """Reconciling=True, Complete=False and Failed=False on a JobRun whose run is pending,
    blocked, running or waiting to retry."""
    SUCCEEDED = "Succeeded"
    """Complete=True on a JobRun: its run succeeded."""
    RUN_FAILED = "Failed"
    """Failed=True and Stalled=True on a JobRun: its run failed and has no retries left."""
    TIMED_OUT = "TimedOut"
    """Failed=True and Stalled=True on a JobRun: its run's attempts kept exceeding
    ``timeoutSeconds`` until its retries were spent."""
    DEAD_LETTERED = "DeadLettered"
    """Failed=True and Stalled=True on a JobRun: its run was dead-lettered (replayable)."""
    CANCELLED = "Cancelled"
    """Failed=True on a JobRun whose run was cancelled (``spec.cancel``, a deletion, the CLI);
    not Stalled: nothing needs fixing."""
    UNCLAIMABLE = "Unclaimable"
    """A JobRun's ``status.reason`` while its pending run can be claimed by no live runner
    (no runner registers its handler, or its ``executionModel`` differs from the handler's
    registration); ``status.lastError`` says which and what to change."""
    # Why a run waits (``scheduling.waiting.WaitReason``, one member each; a test checks):
    # the reason of a waiting JobRun's Reconciling=True, whose message is ``status.waiting``.
    # Unclaimable, WaitingForUpstream and CircuitOpen (above) are three of them.
    RETRY_BUDGET_SPENT = "RetryBudgetSpent"
    """Reconciling=True on a JobRun whose retry was deferred past its backoff because its
    dependency's retry budget was spent."""
    RETRY_BACKOFF = "RetryBackoff"
    """Reconciling=True on a JobRun waiting out its backoff before the next attempt."""
    CONCURRENCY_LIMIT = "ConcurrencyLimit"
    """Reconciling=True on a JobRun that is due but waits for room under its concurrency key."""
    RUN_AT_IN_FUTURE = "RunAtInFuture"
    """Reconciling=True on a JobRun whose run time (a delay, ``runAt``, a spread) is ahead."""
    WAITING_FOR_RUNNER = "WaitingForRunner"
    """Reconciling=True on a JobRun that is due and claimable, waiting for a runner's slot."""
    QUOTA_EXCEEDED = "QuotaExceeded"
    """Reconciling=True on a JobRun not submitted yet: its namespace holds as many active runs
    as its quota allows; it is submitted once some have ended."""


class EventReason(enum.StrEnum):
    """Reasons of the Kubernetes Events Sundial records on its objects (docs/design.md)."""

    MISS_SCHEDULE = "MissSchedule"
    """Warning: a fire was missed (past ``startingDeadlineSeconds``), as CronJob reports it."""
    TOO_MANY_MISSED_TIMES = "TooManyMissedTimes"
    """Warning: too many fires were missed to replay them all."""
    JOB_ALREADY_ACTIVE = "JobAlreadyActive"
    """Normal: a fire was skipped because a run is active and concurrencyPolicy is Forbid."""
    UNKNOWN_TIME_ZONE = "UnknownTimeZone"
    """Warning: ``spec.timeZone`` is not a known IANA zone."""
    INVALID_SCHEDULE = "InvalidSchedule"
    """Warning: ``spec.schedule`` is not a cron expression, a macro or ``@every``."""
    INVALID_POLICY = "InvalidPolicy"
    """Warning: a policy field (``spreadSeconds``, ``maxBackfill`` …) holds an unusable value."""
    INVALID_SCHEDULING_INPUT = "InvalidSchedulingInput"
    """Warning: another ScheduledJob field the scheduling layer cannot use."""
    CONCURRENCY_LIMITS_BACKFILL = "ConcurrencyLimitsBackfill"
    """Normal: concurrencyPolicy Forbid or Replace kept only the newest of several due fires."""
    REPLACED_ACTIVE_RUN = "ReplacedActiveRun"
    """Normal: concurrencyPolicy Replace cancelled the active run for a new fire."""
    FIRE_BUFFERED = "FireBuffered"
    """Normal: concurrencyPolicy BufferOne keeps a fire waiting until the active run ends."""
    BUFFER_FULL = "BufferFull"
    """Normal: concurrencyPolicy BufferOne skipped a fire: one is waiting already."""
    SUCCESSFUL_CREATE = "SuccessfulCreate"
    """Normal: a run (and its JobRun or Pod) was created."""
    COALESCED = "Coalesced"
    """Normal: missed fires were coalesced into one run."""
    BACKFILLED = "Backfilled"
    """Normal: missed fires were each run, oldest first, up to ``maxBackfill``."""
    QUARANTINED = "Quarantined"
    """Warning: the job was suspended after repeated failures."""
    CIRCUIT_OPEN = "CircuitOpen"
    """Warning: the dependency's circuit breaker opened; runs wait instead of failing."""
    NO_RECENT_SUCCESS = "NoRecentSuccess"
    """Warning: ``slo.freshnessSeconds`` passed with no run of the ScheduledJob completed."""
    NAME_TAKEN = "NameTaken"
    """Warning: the ScheduledJob's name belongs to another active job; nothing was stored."""
    QUOTA_EXCEEDED = "QuotaExceeded"
    """Warning: a fire was dropped, or a JobRun waits, because its namespace holds as many
    active runs as its quota allows."""
    LATE_START = "LateStart"
    """Warning: a run did not start within ``slo.startLatenessSeconds`` of its fire time."""
    RUN_TOO_LONG = "RunTooLong"
    """Warning: a run ran longer than ``slo.maxDurationSeconds``."""
    DEAD_LETTERED = "DeadLettered"
    """Warning: a run used up its retries and was dead-lettered (replayable)."""
    TIMED_OUT = "TimedOut"
    """Warning: a run's attempts kept exceeding ``timeoutSeconds`` until its retries were spent
    (the run ends ``timed_out``, replayable)."""
    OOM_KILLED = "OOMKilled"
    """Warning: an attempt was killed for running out of memory."""
    EVICTED = "Evicted"
    """Warning: an attempt's Pod was evicted, preempted or lost with its node (retried without
    using an attempt of ``maxRetries``)."""
    FAILED_START = "FailedStart"
    """Warning: an attempt's Pod never started (ImagePullBackOff, CreateContainerConfigError,
    unschedulable past ``startTimeoutSeconds``, or refused by the apiserver); failed fast."""
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    """Warning: an attempt's Pod ran past ``timeoutSeconds`` and was deleted."""
    UNCLAIMABLE = "Unclaimable"
    """Warning: a pending run can be claimed by no live runner; the message says why (no runner
    registers its handler, or ``executionModel`` differs from the handler's registration)."""
    REPLAYED = "Replayed"
    """Normal: a JobRun's ``sundial.dev/replay`` annotation put its run back in the queue with a
    fresh retry budget."""
    REPLAY_REFUSED = "ReplayRefused"
    """Warning: a replay was asked for a run that cannot be replayed (not DeadLettered, Failed or
    TimedOut, or archived away)."""
    POD_DELETED = "PodDeleted"
    """Normal: an attempt's Pod was deleted by someone else before it ended and the job's
    ``podDeletionPolicy: Cancel`` cancelled the run (under ``Retry`` it is retried, no Event)."""
    FORGED_POD = "ForgedPod"
    """Warning, on a Pod: it carries the labels of a run's attempt but is not the Pod Sundial
    created for it (another namespace, name or UID), so its end was ignored."""
    FORGED_MIRROR = "ForgedMirror"
    """Warning, on a JobRun: it is labelled as a mirror of a ScheduledJob's run but the operator
    did not make it (another namespace than its ScheduledJob's, or no identity the operator
    recorded), so it changed nothing."""


def find_condition(
    conditions: Sequence[common.Condition] | None, condition_type: str
) -> common.Condition | None:
    """The condition of ``condition_type``, or None."""
    return next((c for c in conditions or () if c.type == condition_type), None)


def set_condition(
    conditions: Sequence[common.Condition] | None,
    condition_type: str,
    status: common.ConditionStatus,
    reason: str,
    message: str,
    *,
    now: datetime.datetime,
    observed_generation: int | None = None,
) -> list[common.Condition]:
    """``conditions`` with ``condition_type`` set: replaced in place, or appended if new.

    ``lastTransitionTime`` is kept while the status stays the same (a changed reason or message is
    not a transition), as metav1 specifies; ``message`` is cut to the schema's bound.
    """
    previous = find_condition(conditions, condition_type)
    if previous is not None and previous.status == status:
        transition_time = previous.last_transition_time
    else:
        transition_time = now
    updated = common.Condition(
        type=condition_type,
        status=status,
        reason=reason,
        message=message[:MAX_MESSAGE_LENGTH],
        last_transition_time=transition_time,
        observed_generation=observed_generation,
    )
    result = [updated if c.type == condition_type else c for c in conditions or ()]
    if previous is None:
        result.append(updated)
    return result
