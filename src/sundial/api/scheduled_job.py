"""The ScheduledJob resource: a job and the cron schedule it fires on.

Field names follow CronJob where the meaning is the same (``schedule``, ``timeZone``,
``concurrencyPolicy``, ``startingDeadlineSeconds``, ``suspend``, the history limits), so that
Kubernetes users already know them. The job itself (handler or Pod template, retries, failure
policy) is shared with JobRun through ``common.JobSpec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

import pydantic

from sundial.api import common, messages

KIND: Final = "ScheduledJob"

MAX_NAME_LENGTH = 52
"""Like CronJob: JobRun and Pod names and label values derived from it must stay within 63."""

ConcurrencyPolicy = Literal["Forbid", "Allow", "Replace", "BufferOne"]
MissedFirePolicy = Literal["Coalesce", "Backfill", "Skip"]
SkippedTime = Literal["AtTransition", "Skip"]
RepeatedTime = Literal["First", "Second", "Both"]

_ENTRY_WORD = r"[^\x00-\x20\x7f]+"
"""A word of a schedule or an exclusion: no space and no control character (PostgreSQL cannot
store a NUL, and ``additionalSchedules`` and ``exclusions`` are kept as lines of one text)."""
SCHEDULE_PATTERN = (
    r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)"
    r"|@every ([0-9]+[hms])+"
    rf"|{_ENTRY_WORD}( +{_ENTRY_WORD}){{4}})$"
)
r"""Five space-separated fields, a macro, or ``@every <duration>`` (an interval, e.g. ``@every
90s``, as robfig/cron spells it); the operator parses the schedule and reports errors as
Stalled, since a pattern cannot check field ranges. The word class is spelled out rather than
``\S``: RE2 (the apiserver) reads ``\S`` as ASCII-only, the models' regex engine as Unicode,
and the two must refuse the same schedules."""
ADDITIONAL_SCHEDULE_PATTERN = SCHEDULE_PATTERN
"""The forms of ``schedule``."""
ScheduleText = Annotated[
    str, pydantic.Field(min_length=1, max_length=128, pattern=ADDITIONAL_SCHEDULE_PATTERN)
]
"""One entry of ``additionalSchedules``: the same forms as ``schedule``."""
EXCLUSION_PATTERN = rf"^(([0-9]{{4}}-)?[0-9]{{2}}-[0-9]{{2}}|{_ENTRY_WORD}( +{_ENTRY_WORD}){{4}})$"
"""A date (``MM-DD``, ``YYYY-MM-DD``) or five space-separated cron fields; the operator checks
the date and the fields (Stalled, InvalidSchedule, naming ``exclusions[i]``)."""
ExclusionText = Annotated[
    str, pydantic.Field(min_length=1, max_length=128, pattern=EXCLUSION_PATTERN)
]
MAX_ADDITIONAL_SCHEDULES = 9
MAX_EXCLUSIONS = 20
TIME_ZONE_PATTERN = r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,3}$"
"""The shape of an IANA zone name; whether the zone exists is checked by the operator."""

MAX_BACKFILL_ONLY_WITH_BACKFILL = common.CelRule(
    rule="!has(self.maxBackfill) || self.missedFirePolicy == 'Backfill'",
    message="maxBackfill is only valid with missedFirePolicy Backfill",
    field_path=".maxBackfill",
)
SCHEDULE_RULES = (*common.JOB_RULES, MAX_BACKFILL_ONLY_WITH_BACKFILL)

NAME_LENGTH = common.CelRule(
    rule=f"size(self.metadata.name) <= {MAX_NAME_LENGTH}",
    message=f"a ScheduledJob name must be at most {MAX_NAME_LENGTH} characters",
)


class DstPolicy(common.ApiModel):
    """What a cron schedule does with the wall-clock times a DST change skips or repeats (in
    ``timeZone``; an ``@every`` interval has no DST). The defaults are Sundial's rule without
    the field."""

    skipped_time: SkippedTime = "AtTransition"
    """A time the clocks skip (spring forward): AtTransition fires it at the first instant after
    the gap, several skipped times sharing one fire; Skip does not fire it that day."""
    repeated_time: RepeatedTime = "First"
    """A time the clocks show twice (fall back): First or Second fires it once, at that
    occurrence; Both fires it at each."""


SLO_NAMES = ("freshness", "startLateness", "maxDuration")
"""The promises ``slo`` can hold, as ``status.brokenSlos`` and the ``slo`` label name them."""
SloName = Literal["freshness", "startLateness", "maxDuration"]

SLO_NOT_EMPTY = common.CelRule(
    rule="has(self.freshnessSeconds) || has(self.startLatenessSeconds)"
    " || has(self.maxDurationSeconds)",
    message="slo promises nothing: set freshnessSeconds, startLatenessSeconds or"
    " maxDurationSeconds (or leave slo out)",
)


class Slo(common.ApiModel):
    """What the job promises, checked by the operator: a promise broken is listed in
    ``status.brokenSlos``, sets the Degraded condition with its own reason, records a Warning
    Event and sets a gauge an alert reads."""

    model_config = pydantic.ConfigDict(json_schema_extra=common.cel_rules(SLO_NOT_EMPTY))

    freshness_seconds: int | None = pydantic.Field(default=None, ge=60, le=366 * 86400)
    """A run of this ScheduledJob completes at least this often: when none has completed for
    this long (counted from the ScheduledJob's creation until its first success), it is
    Degraded with reason NoRecentSuccess until one does. Not checked while suspended."""
    start_lateness_seconds: int | None = pydantic.Field(default=None, ge=1, le=31 * 86400)
    """A run starts within this many seconds of its fire time (its schedule's time; a spread
    and the fire budget count, so set it above spreadSeconds): while a run waits longer, and
    from a run that started later until the next run starts in time, it is Degraded with
    reason LateStart. Judged on the first attempt of the runs in its window."""
    max_duration_seconds: int | None = pydantic.Field(default=None, ge=1, le=31 * 86400)
    """A run takes at most this many seconds from its start to its end: while a run runs
    longer, and from a run that took longer until the next run ends in time, it is Degraded
    with reason RunTooLong. Unlike timeoutSeconds, nothing is stopped: it is a promise
    watched, not a limit enforced."""

    @pydantic.model_validator(mode="after")
    def _promises_something(self) -> Slo:
        if (
            self.freshness_seconds is None
            and self.start_lateness_seconds is None
            and self.max_duration_seconds is None
        ):
            raise ValueError(SLO_NOT_EMPTY.message)
        return self


class ScheduledJobSpec(common.JobSpec):
    """When the job fires and what happens to fires that are missed or overlap."""

    model_config = pydantic.ConfigDict(json_schema_extra=common.cel_rules(*SCHEDULE_RULES))

    schedule: str = pydantic.Field(min_length=1, max_length=128, pattern=SCHEDULE_PATTERN)
    """A 5-field cron expression (minute hour day-of-month month day-of-week) or a macro such as
    ``@hourly``, read in ``timeZone``."""
    additional_schedules: list[ScheduleText] | None = pydantic.Field(
        default=None, max_length=MAX_ADDITIONAL_SCHEDULES
    )
    """More schedules, in the same forms: the job fires on the union of all of them, once per
    instant however many name it (``0 9 * * 1-5`` and ``0 12 * * 6,0``)."""
    exclusions: list[ExclusionText] | None = pydantic.Field(default=None, max_length=MAX_EXCLUSIONS)
    """Fire times not fired, matched on the wall clock of ``timeZone``: a date (``12-25``
    every year, ``2026-12-31`` once), or a cron expression naming the minutes excluded
    (``* * * * 0``: all of Sunday; ``* 0-6 * * *``: 00:00 to 06:59). A fire they drop is not
    missed: it never was one."""
    time_zone: str | None = pydantic.Field(default=None, max_length=64, pattern=TIME_ZONE_PATTERN)
    """An IANA time zone such as ``Europe/Paris``; UTC when absent."""
    dst_policy: DstPolicy | None = None
    """What the schedule does at DST changes in ``timeZone``; absent: a skipped time fires at
    the transition and a repeated time once, at its first occurrence."""
    concurrency_policy: ConcurrencyPolicy = "Forbid"
    """Forbid skips a fire while a run is active; Allow runs both; Replace cancels the old run;
    BufferOne keeps the first such fire waiting and starts it when the active run ends (later
    fires meanwhile are skipped)."""
    starting_deadline_seconds: int | None = pydantic.Field(default=None, ge=1, le=31 * 86400)
    """The catch-up window: a fire not started within this many seconds of its time is
    dropped (after downtime, counted in the MissSchedule Event); within it missedFirePolicy
    decides."""
    missed_fire_policy: MissedFirePolicy = "Coalesce"
    """After downtime: Coalesce (one run for the latest fire), Backfill, or Skip."""
    max_backfill: int | None = pydantic.Field(default=None, ge=1, le=1000)
    """Backfill only: the most missed fires replayed, oldest first."""
    spread_seconds: int = pydantic.Field(default=0, ge=0, le=3600)
    """Delay each fire by a deterministic per-job offset in [0, spreadSeconds); 0 fires on time."""
    suspend: bool = False
    """No new fires while true; active runs go on."""
    quarantine_after: int | None = pydantic.Field(default=None, ge=1, le=1000)
    """Suspend the job (condition Quarantined) after this many failed runs in a row."""
    successful_runs_history_limit: int = pydantic.Field(default=3, ge=0, le=100)
    """How many succeeded runs stay visible as JobRun objects (PostgreSQL keeps them all)."""
    failed_runs_history_limit: int = pydantic.Field(default=1, ge=0, le=100)
    """How many failed runs stay visible as JobRun objects (PostgreSQL keeps them all)."""
    slo: Slo | None = None
    """What the job promises (freshness, start lateness, duration): checked by the operator,
    shown as a condition and in ``status.brokenSlos``."""

    @pydantic.model_validator(mode="after")
    def _backfill_bound(self) -> ScheduledJobSpec:
        if self.max_backfill is not None and self.missed_fire_policy != "Backfill":
            raise ValueError(MAX_BACKFILL_ONLY_WITH_BACKFILL.message)
        return self


class ActiveRunRef(common.ApiModel):
    """A run of this job that is active now, and the JobRun object that mirrors it."""

    name: common.ObjectName
    namespace: common.DnsLabel
    uid: str | None = pydantic.Field(default=None, max_length=64)
    run_id: str | None = pydantic.Field(default=None, max_length=64)


class BrokenSlo(common.ApiModel):
    """One promise of ``spec.slo`` broken now."""

    slo: SloName
    reason: str = pydantic.Field(max_length=64)
    """The Degraded reason it sets: NoRecentSuccess, LateStart or RunTooLong."""
    message: str = pydantic.Field(max_length=1024)
    """Which run broke it and how, or since when nothing succeeded."""


class ScheduledJobStatus(common.ApiModel):
    """What the operator observed, written through the ``/status`` subresource only."""

    conditions: common.Conditions | None = None
    observed_generation: int | None = pydantic.Field(default=None, ge=0)
    last_schedule_time: common.Timestamp | None = None
    """The fire time of the latest run created."""
    next_schedule_time: common.Timestamp | None = None
    """When the next run fires (after spread); absent while suspended or stalled."""
    buffered_schedule_time: common.Timestamp | None = None
    """concurrencyPolicy BufferOne: the fire time of the fire waiting for the active run to end;
    it starts on the scheduler's first pass that finds no run active."""
    last_successful_time: common.Timestamp | None = None
    """When the latest successful run of this ScheduledJob's own finished: a scheduled fire or a
    ``sundial.dev/run-now`` one. A JobRun with ``jobRef`` naming it (``kubectl sundial run``, a
    backfill) does not count, as a Job made by ``kubectl create job --from=cronjob/NAME`` does
    not set its CronJob's ``lastSuccessfulTime``; nor does it count in ``active`` or
    ``consecutiveFailures``. Its own JobRun's status tells how it went."""
    active: list[ActiveRunRef] | None = pydantic.Field(
        default=None,
        max_length=100,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    """Active runs (at most 100 are listed; ``activeCount`` has the true number)."""
    active_count: int | None = pydantic.Field(default=None, ge=0)
    """How many runs are active, for the ACTIVE column."""
    consecutive_failures: int | None = pydantic.Field(default=None, ge=0)
    """Failed runs since the last success; compared with ``quarantineAfter``."""
    broken_slos: list[BrokenSlo] | None = pydantic.Field(
        default=None,
        max_length=len(SLO_NAMES),
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["slo"]},
    )
    """The promises of ``spec.slo`` broken now, each with why; absent while all are kept. The
    Degraded condition names the first (freshness before startLateness before maxDuration)."""


class ScheduledJob(common.ApiModel):
    """A job that Sundial fires on a cron schedule (``sundial.dev/v1alpha1``)."""

    model_config = pydantic.ConfigDict(json_schema_extra=common.cel_rules(NAME_LENGTH))

    api_version: Literal["sundial.dev/v1alpha1"] = common.API_VERSION
    kind: Literal["ScheduledJob"] = KIND
    metadata: common.ObjectMeta = pydantic.Field(default_factory=common.ObjectMeta)
    spec: ScheduledJobSpec
    status: ScheduledJobStatus | None = None

    @pydantic.model_validator(mode="after")
    def _name_length(self) -> ScheduledJob:
        if self.metadata.name is not None and len(self.metadata.name) > MAX_NAME_LENGTH:
            raise ValueError(NAME_LENGTH.message)
        return self


def parse(body: Mapping[str, Any]) -> tuple[ScheduledJobSpec | None, str | None]:
    """The spec of a ScheduledJob object, or the message that names what is wrong with it (or
    with the metadata the store keys the job by): what the operator reports as Stalled and
    ``kubectl sundial lint`` before it."""
    problem = common.metadata_problem(body)
    if problem is not None:
        return None, problem
    try:
        return ScheduledJobSpec.model_validate(body.get("spec") or {}), None
    except pydantic.ValidationError as error:
        return None, messages.describe(error)
