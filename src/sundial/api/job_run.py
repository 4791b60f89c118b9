"""The JobRun resource: one run, submitted by a person or mirrored from PostgreSQL.

A JobRun created by a user is a one-shot or delayed run of a ScheduledJob's job (``jobRef``) or
of an inline ``job``; the operator turns it into a run in PostgreSQL, idempotently (the object's
uid is the idempotency key unless ``idempotencyKey`` is given). JobRuns that mirror scheduled
runs are written by the status mirror. Either way ``status`` follows the run in PostgreSQL.
"""

from __future__ import annotations

import datetime
import math
from typing import Annotated, Final, Literal

import pydantic

from sundial.api import common, error_text

KIND: Final = "JobRun"

Phase = Literal[
    "Pending",
    "Blocked",
    "Running",
    "RetryWait",
    "Succeeded",
    "Failed",
    "TimedOut",
    "Cancelled",
    "DeadLettered",
]
ENDED_PHASES: frozenset[str] = frozenset(
    {"Succeeded", "Failed", "TimedOut", "Cancelled", "DeadLettered"}
)
"""Phases a run never leaves."""

MAX_DEPENDENCIES = 32
#: How far after its creation a JobRun may start, by ``runAt`` as by ``delaySeconds``. A run
#: waits as a row of the hot table; one due next year or later belongs to a ScheduledJob, whose
#: schedule is stored as a rule and fires when due.
MAX_AHEAD: Final = datetime.timedelta(days=366)
#: ``status.waiting`` is a sentence or two (an unclaimable reason is at most 2 KiB).
MAX_WAITING_CHARS = 2048

REPLAY_ANNOTATION: Final = "sundial.dev/replay"
"""On a JobRun whose run is DeadLettered, Failed or TimedOut: put the run back in the queue with
a fresh retry budget (the value is any token the requester picks, e.g. a timestamp). The
operator replays the run, then removes the annotation; ``kubectl sundial replay`` sets it."""
REPLAYABLE_PHASES: frozenset[str] = frozenset({"DeadLettered", "Failed", "TimedOut"})
"""Phases a replay is accepted from (the store's ``runs.replay``)."""

EXACTLY_ONE_OF_JOB_REF_OR_JOB = common.CelRule(
    rule="has(self.jobRef) != has(self.job)",
    message="exactly one of jobRef or job must be set",
)
RUN_AT_OR_DELAY = common.CelRule(
    rule="!(has(self.runAt) && has(self.delaySeconds))",
    message="set at most one of runAt or delaySeconds",
    field_path=".delaySeconds",
)
JOB_SOURCE_IS_FIXED = common.CelRule(
    rule="has(self.jobRef) == has(oldSelf.jobRef) && has(self.job) == has(oldSelf.job)",
    message="a JobRun cannot switch between jobRef and job after it is created",
)
CANCEL_IS_FINAL = common.CelRule(
    rule="!oldSelf.cancel || self.cancel",
    message="a cancelled JobRun cannot be un-cancelled",
    field_path=".cancel",
)
IMMUTABLE = common.CelRule(rule="self == oldSelf", message="this field is immutable")
DEPENDS_ON_FIXED_ONCE_SUBMITTED = common.CelRule(
    rule=(
        "!has(oldSelf.status) || !has(oldSelf.status.runId)"
        " || (has(self.spec.dependsOn) == has(oldSelf.spec.dependsOn)"
        " && (!has(self.spec.dependsOn)"
        # Element-wise rather than ==, so the rule reads the same in every CEL (the
        # apiserver's == ignores the order of a set, cel-python's does not).
        " || (self.spec.dependsOn.all(d, d in oldSelf.spec.dependsOn)"
        " && oldSelf.spec.dependsOn.all(d, d in self.spec.dependsOn))))"
    ),
    message="dependsOn cannot change once the run is submitted (status.runId is set)",
    field_path=".spec.dependsOn",
)
NOT_ITS_OWN_DEPENDENCY = common.CelRule(
    rule="!has(self.spec.dependsOn) || !(self.metadata.name in self.spec.dependsOn)",
    message="a JobRun cannot depend on itself",
    field_path=".spec.dependsOn",
)


class JobRef(common.ApiModel):
    """A ScheduledJob in the JobRun's namespace."""

    name: str = pydantic.Field(min_length=1, max_length=253, pattern=common.DNS_SUBDOMAIN_PATTERN)


class JobRunSpec(common.ApiModel):
    """What to run, when, and after what."""

    model_config = pydantic.ConfigDict(
        json_schema_extra=common.cel_rules(
            EXACTLY_ONE_OF_JOB_REF_OR_JOB, RUN_AT_OR_DELAY, JOB_SOURCE_IS_FIXED, CANCEL_IS_FINAL
        )
    )

    job_ref: JobRef | None = pydantic.Field(
        default=None, json_schema_extra=common.cel_rules(IMMUTABLE)
    )
    """Run the job of this ScheduledJob (its current generation), now or at ``runAt``. The run
    is not one of the ScheduledJob's own fires (as with ``kubectl create job
    --from=cronjob/NAME``): its status (``lastSuccessfulTime``, ``active``,
    ``consecutiveFailures``) ignores it, while its concurrencyPolicy, which counts every active
    run of the job, does not. ``sundial.dev/run-now`` on the ScheduledJob makes a run that
    counts in its status."""
    job: common.JobSpec | None = None
    """An inline job, for a run that belongs to no ScheduledJob."""
    run_at: common.Timestamp | None = pydantic.Field(
        default=None, json_schema_extra=common.cel_rules(IMMUTABLE)
    )
    """Do not start before this time (RFC 3339): at most 366 days after the JobRun was
    created, as ``delaySeconds``."""
    delay_seconds: int | None = pydantic.Field(
        default=None,
        ge=0,
        le=int(MAX_AHEAD.total_seconds()),
        json_schema_extra=common.cel_rules(IMMUTABLE),
    )
    """Do not start before this many seconds after the JobRun was created."""
    fire_time: common.Timestamp | None = pydantic.Field(
        default=None, json_schema_extra=common.cel_rules(IMMUTABLE)
    )
    """The logical time handed to the job as its fire time, e.g. a day being backfilled
    (``kubectl sundial backfill`` sets it); absent: the run has no fire time."""
    args: common.Args | None = None
    """Arguments for this run, merged key by key over the handler's ``args``."""
    priority: int | None = pydantic.Field(default=None, ge=0, le=9)
    """Overrides the job's priority for this run."""
    idempotency_key: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=255,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/=+-]*$",
        json_schema_extra=common.cel_rules(IMMUTABLE),
    )
    """Runs with the same key in a namespace are one run; the JobRun's uid when absent."""
    depends_on: (
        list[Annotated[str, pydantic.Field(max_length=253, pattern=common.DNS_SUBDOMAIN_PATTERN)]]
        | None
    ) = pydantic.Field(
        default=None,
        max_length=MAX_DEPENDENCIES,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    """JobRuns in the same namespace that must succeed before this one starts (a DAG). It can
    be edited until the run is submitted (``status.runId`` set) - to break a cycle, or to wait
    for another upstream - and is fixed from then on, like a Job's template once it started."""
    cancel: bool = False
    """Set to true to cancel the run; it cannot be set back."""
    ttl_seconds_after_finished: int | None = pydantic.Field(default=None, ge=0, le=366 * 86400)
    """Delete the JobRun this long after it finished (the run stays in PostgreSQL)."""

    @pydantic.model_validator(mode="after")
    def _shape(self) -> JobRunSpec:
        if (self.job_ref is None) == (self.job is None):
            raise ValueError(EXACTLY_ONE_OF_JOB_REF_OR_JOB.message)
        if self.run_at is not None and self.delay_seconds is not None:
            raise ValueError(RUN_AT_OR_DELAY.message)
        if self.depends_on is not None and len(set(self.depends_on)) != len(self.depends_on):
            raise ValueError("dependsOn must not name a JobRun twice")
        return self


def run_at_problem(spec: JobRunSpec, created: datetime.datetime) -> str | None:
    """Why ``spec.runAt`` may not be used by a JobRun created at ``created``; None: it may.
    A check of its own, not a rule of the model: it needs the creation time, which the
    spec does not hold (the operator passes the object's, ``kubectl sundial lint`` now)."""
    if spec.run_at is None or spec.run_at - created <= MAX_AHEAD:
        return None
    return (
        f"spec.runAt: {common.rfc3339(spec.run_at)} is more than 366 days after the JobRun was"
        f" created ({common.rfc3339(created)}); a run that far out belongs to a ScheduledJob"
        " (a schedule waits as a rule, not as a run)"
    )


class JobRunStatus(common.ApiModel):
    """The run as PostgreSQL has it, mirrored by the operator through ``/status``."""

    phase: Phase | None = None
    conditions: common.Conditions | None = None
    observed_generation: int | None = pydantic.Field(default=None, ge=0)
    run_id: str | None = pydantic.Field(default=None, max_length=64)
    """The run's id in PostgreSQL (``sundial runs`` shows it)."""
    fire_time: common.Timestamp | None = None
    """The logical time the run was due, handed to the job."""
    attempt: int | None = pydantic.Field(default=None, ge=0)
    """The current attempt; the job's fencing token is this number (with the hot queue's epoch
    above it when that is on)."""
    reason: str | None = pydantic.Field(default=None, max_length=128)
    """Why the run is in its phase, from the failure table (e.g. OOMKilled, Evicted)."""
    exit_code: int | None = pydantic.Field(default=None, ge=-255, le=255)
    started_at: common.Timestamp | None = None
    finished_at: common.Timestamp | None = None
    duration: str | None = pydantic.Field(default=None, max_length=32)
    """``finishedAt - startedAt`` as kubectl prints durations (``1m23s``), set when it finishes."""
    pod_name: str | None = pydantic.Field(default=None, max_length=253)
    last_error: str | None = pydantic.Field(default=None, max_length=error_text.MAX_ERROR_CHARS)
    """The last attempt's error, cut to fit (``error_text.truncate``)."""
    waiting: str | None = pydantic.Field(default=None, max_length=MAX_WAITING_CHARS)
    """Why a run that has not finished and is not running waits: no runner serves its queue or
    execution model, an upstream run is unfinished (named), a retry is deferred or backs off
    (until when), its run time is in the future. The Reconciling condition's reason names the
    case (``Unclaimable``, ``WaitingForUpstream``, ``RetryBudgetSpent``, ``CircuitOpen``,
    ``RetryBackoff``, ``RunAtInFuture``, ``WaitingForRunner``). Absent otherwise."""


class JobRun(common.ApiModel):
    """One run of a job (``sundial.dev/v1alpha1``)."""

    model_config = pydantic.ConfigDict(
        json_schema_extra=common.cel_rules(NOT_ITS_OWN_DEPENDENCY, DEPENDS_ON_FIXED_ONCE_SUBMITTED)
    )

    api_version: Literal["sundial.dev/v1alpha1"] = common.API_VERSION
    kind: Literal["JobRun"] = KIND
    metadata: common.ObjectMeta = pydantic.Field(default_factory=common.ObjectMeta)
    spec: JobRunSpec
    status: JobRunStatus | None = None

    @pydantic.model_validator(mode="after")
    def _not_its_own_dependency(self) -> JobRun:
        if self.metadata.name is not None and self.metadata.name in (self.spec.depends_on or ()):
            raise ValueError(NOT_ITS_OWN_DEPENDENCY.message)
        return self


def format_duration(seconds: float) -> str:
    """A duration the way kubectl prints one: ``45s``, ``1m23s``, ``2h5m``, ``3d4h``."""
    total = max(0, math.floor(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"
