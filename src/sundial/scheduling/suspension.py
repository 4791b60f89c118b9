"""Whether a schedule may fire at all: ``suspend`` and quarantine as one pure gate.

A paused schedule creates no runs and its ``next_fire_time`` stays where it was. On resume the
trigger loop finds it behind and calls ``missed_fires.decide``, so the fires that came due
during the pause go through the missed-fire policy (Coalesce: one run now; Skip: none, unless
one is on time; always bounded by ``startingDeadlineSeconds``), exactly as after downtime.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from sundial.scheduling import cron, missed_fires, quarantine
from sundial.scheduling.clock import require_aware


class PauseReason(enum.StrEnum):
    """Why a schedule is not firing; also the condition type set on the ScheduledJob."""

    SUSPENDED = "Suspended"
    QUARANTINED = "Quarantined"


def pause_reason(
    *, suspend: bool, quarantine_state: quarantine.QuarantineState
) -> PauseReason | None:
    """``None`` when the schedule may fire; otherwise why not (user suspend wins)."""
    if suspend:
        return PauseReason.SUSPENDED
    if quarantine_state.quarantined:
        return PauseReason.QUARANTINED
    return None


@dataclass(frozen=True)
class Gate:
    """The gated result: ``paused`` is set when nothing may fire; ``decision`` otherwise."""

    paused: PauseReason | None
    decision: missed_fires.FireDecision | None


def decide(
    schedule: cron.Schedule,
    next_fire_time: datetime,
    now: datetime,
    rules: missed_fires.MissedFireRules | None,
    *,
    suspend: bool,
    quarantine_state: quarantine.QuarantineState,
) -> Gate:
    """Nothing (``next_fire_time`` kept) while paused; else the missed-fire decision."""
    require_aware(next_fire_time, "next_fire_time")
    require_aware(now, "now")
    reason = pause_reason(suspend=suspend, quarantine_state=quarantine_state)
    if reason is not None:
        return Gate(paused=reason, decision=None)
    return Gate(paused=None, decision=missed_fires.decide(schedule, next_fire_time, now, rules))
