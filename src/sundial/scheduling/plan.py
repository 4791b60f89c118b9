"""One call per due schedule for the trigger loop: every scheduling rule, in order.

``plan_fires`` applies suspend/quarantine, the missed-fire policy (bounded by
``startingDeadlineSeconds``), the concurrency policy and the spread, and returns what to write
in the schedule's transaction: the runs to insert (``fire_time`` logical, ``run_at`` spread),
whether to cancel the active runs first (Replace), the new ``next_fire_time``, the counts for
metrics and the event reasons. It does no I/O and reads no clock.

The global fire-rate budget stays with the loop: ask ``budget.acquire(len(plan.runs))`` and,
if fewer are granted, leave the schedule due and come back at ``next_release_at``.

Every due fire has exactly one outcome: ``ran + backfilled + coalesced + skipped + buffered ==
due`` (``skipped`` includes fires dropped by the concurrency policy; ``buffered`` counts a fire
that BufferOne keeps waiting behind the active run). A waiting fire that starts later is
``released``, counted then and not again as due.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from sundial.scheduling import concurrency, cron, missed_fires, quarantine, spread, suspension
from sundial.scheduling.clock import require_aware

# Event reasons (docs/design.md), besides concurrency.JOB_ALREADY_ACTIVE and friends.
MISS_SCHEDULE = "MissSchedule"
TOO_MANY_MISSED_TIMES = "TooManyMissedTimes"
COALESCED = "Coalesced"
BACKFILLED = "Backfilled"


@dataclass(frozen=True)
class ScheduleRules:
    """The validated policy fields of one ScheduledJob."""

    missed_fire_rules: missed_fires.MissedFireRules = field(
        default_factory=missed_fires.MissedFireRules
    )
    concurrency_policy: concurrency.ConcurrencyPolicy = concurrency.ConcurrencyPolicy.FORBID
    spread_seconds: int = 0

    def __post_init__(self) -> None:
        spread.validate_spread_seconds(self.spread_seconds)


@dataclass(frozen=True)
class PlannedRun:
    """A run to insert: ``fire_time`` is the logical time (the unique key with the schedule),
    ``run_at`` when it becomes due for the runners."""

    fire_time: datetime
    run_at: datetime


@dataclass(frozen=True)
class FirePlan:
    """What the trigger loop writes for one schedule. ``paused`` set means: write nothing, keep
    ``next_fire_time`` (it equals the stored one)."""

    paused: suspension.PauseReason | None
    runs: tuple[PlannedRun, ...]
    cancel_active: bool
    next_fire_time: datetime
    due: int
    missed: int
    ran: int
    backfilled: int
    coalesced: int
    skipped: int
    skipped_past_deadline: int
    skipped_by_concurrency: int
    counts_capped: bool
    events: tuple[str, ...]
    #: What the ``MissSchedule`` Event says: how many fires were due, and what became of the
    #: missed ones (dropped past ``startingDeadlineSeconds``, coalesced, skipped, backfilled).
    missed_message: str | None = None
    #: BufferOne: the fire that waits for the active run to end after this plan (None: none).
    buffered_fire_time: datetime | None = None
    #: Due fires of this plan that went to wait (0 or 1).
    buffered: int = 0
    #: 1 when the fire that was waiting starts in this plan (it is one of ``runs``).
    released: int = 0


def plan_fires(
    *,
    job_identity: str | uuid.UUID,
    schedule: cron.Schedule,
    rules: ScheduleRules,
    next_fire_time: datetime,
    now: datetime,
    active_runs: int,
    suspend: bool = False,
    quarantine_state: quarantine.QuarantineState | None = None,
    buffered_fire_time: datetime | None = None,
) -> FirePlan:
    """Decide everything the trigger loop does for one schedule at ``now``;
    ``buffered_fire_time`` is the fire BufferOne keeps waiting, if one does."""
    require_aware(next_fire_time, "next_fire_time")
    gate = suspension.decide(
        schedule,
        next_fire_time,
        require_aware(now, "now"),
        rules.missed_fire_rules,
        suspend=suspend,
        quarantine_state=quarantine_state or quarantine.QuarantineState(),
    )
    if rules.concurrency_policy is not concurrency.ConcurrencyPolicy.BUFFER_ONE:
        buffered_fire_time = None  # the policy changed while a fire waited: it is dropped
    if gate.decision is None:
        return FirePlan(
            gate.paused, (), False, next_fire_time, 0, 0, 0, 0, 0, 0, 0, 0, False, (),
            buffered_fire_time=buffered_fire_time,
        )  # fmt: skip
    decision = gate.decision
    allowed = concurrency.decide(
        rules.concurrency_policy, decision.fire_times, active_runs, buffered_fire_time
    )
    # A waiting fire that starts is due from now: dated from its fire time, it would age past
    # runs that waited less and jump the queue.
    runs = tuple(
        PlannedRun(
            fire,
            max(now, spread.run_at(fire, job_identity, rules.spread_seconds))
            if fire == buffered_fire_time
            else spread.run_at(fire, job_identity, rules.spread_seconds),
        )
        for fire in allowed.start
    )
    released = 1 if buffered_fire_time is not None and buffered_fire_time in allowed.start else 0
    buffered = 1 if allowed.buffered not in (None, buffered_fire_time) else 0
    newest_started = bool(decision.fire_times) and decision.fire_times[-1] in allowed.start
    ran = 1 if newest_started else 0
    backfilled = len(runs) - ran - released
    events: list[str] = []
    if decision.missed:
        events.append(MISS_SCHEDULE)
    if decision.counts_capped:
        events.append(TOO_MANY_MISSED_TIMES)
    if decision.coalesced:
        events.append(COALESCED)
    if backfilled:
        events.append(BACKFILLED)
    if buffered and allowed.reason != concurrency.FIRE_BUFFERED:
        events.append(concurrency.FIRE_BUFFERED)
    if allowed.reason is not None:
        events.append(allowed.reason)
    missed_message = None
    if decision.missed:
        missed_message = _missed_message(decision, rules.missed_fire_rules, backfilled=backfilled)
    return FirePlan(
        paused=None,
        runs=runs,
        cancel_active=allowed.cancel_active,
        next_fire_time=decision.next_fire_time,
        due=decision.due,
        missed=decision.missed,
        ran=ran,
        backfilled=backfilled,
        coalesced=decision.coalesced,
        skipped=decision.skipped + len(allowed.skipped),
        skipped_past_deadline=decision.skipped_past_deadline,
        skipped_by_concurrency=len(allowed.skipped),
        counts_capped=decision.counts_capped,
        events=tuple(events),
        missed_message=missed_message,
        buffered_fire_time=allowed.buffered,
        buffered=buffered,
        released=released,
    )


def _missed_message(
    decision: missed_fires.FireDecision, rules: missed_fires.MissedFireRules, *, backfilled: int
) -> str:
    """``12 fires were due, 11 missed: 9 older than startingDeadlineSeconds
    (300 s) dropped, 2 coalesced into the run for 10:59:00Z``: the catch-up after downtime,
    counted."""
    at_least = "at least " if decision.counts_capped else ""
    parts = []
    if decision.skipped_past_deadline:
        parts.append(
            f"{at_least}{decision.skipped_past_deadline} older than startingDeadlineSeconds "
            f"({rules.starting_deadline_seconds} s) dropped"
        )
    if decision.coalesced:
        newest = decision.fire_times[-1] if decision.fire_times else None
        into = f" into the run for {newest:%Y-%m-%dT%H:%M:%SZ}" if newest else ""
        parts.append(f"{decision.coalesced} coalesced{into}")
    if backfilled:
        parts.append(f"{backfilled} backfilled")
    skipped = decision.skipped - decision.skipped_past_deadline
    if skipped > 0 and rules.policy is missed_fires.MissedFirePolicy.BACKFILL:
        parts.append(f"{skipped} beyond maxBackfill ({rules.max_backfill}) skipped")
    elif skipped > 0:
        parts.append(f"{skipped} skipped (missedFirePolicy {rules.policy.value})")
    started = "; the newest started" if decision.ran and not decision.coalesced else ""
    due = f"{at_least}{decision.due} fire{'' if decision.due == 1 else 's'}"
    verb = "was" if decision.due == 1 and not at_least else "were"
    return (
        f"{due} {verb} due, {at_least}{decision.missed} missed: "
        + (", ".join(parts) or "started late")
        + started
    )


def rules_from_policy(
    spread_seconds: int,
    concurrency_policy: str,
    missed_fire_policy: str,
    max_backfill: int,
    starting_deadline_seconds: int | None,
) -> ScheduleRules:
    """The rules from a ScheduledJob's policy fields, as stored or as written in a spec;
    raises ``SchedulingError`` naming the field when one is invalid."""
    return ScheduleRules(
        missed_fire_rules=missed_fires.MissedFireRules.from_spec(
            missed_fire_policy,
            # maxBackfill means something only with Backfill; the column defaults to 10.
            max_backfill if missed_fire_policy == "Backfill" else 1,
            starting_deadline_seconds,
        ),
        concurrency_policy=concurrency.ConcurrencyPolicy.from_spec(concurrency_policy),
        spread_seconds=spread_seconds,
    )
