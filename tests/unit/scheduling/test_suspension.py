"""Suspend and quarantine pause a schedule; on resume the missed-fire policy applies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sundial.scheduling import cron, quarantine, suspension
from sundial.scheduling.missed_fires import MissedFirePolicy, MissedFireRules
from sundial.scheduling.suspension import PauseReason

HOURLY = cron.parse_schedule("0 * * * *")
NEXT_FIRE = datetime(2026, 6, 1, 10, tzinfo=UTC)
HEALTHY = quarantine.QuarantineState()
QUARANTINED = quarantine.record_failure(HEALTHY, 1)


def test_a_suspended_schedule_creates_nothing_and_keeps_its_next_fire_time() -> None:
    gate = suspension.decide(
        HOURLY,
        NEXT_FIRE,
        NEXT_FIRE + timedelta(hours=5),
        None,
        suspend=True,
        quarantine_state=HEALTHY,
    )
    assert gate.paused is PauseReason.SUSPENDED
    assert gate.decision is None


def test_a_quarantined_schedule_is_paused_with_its_own_reason() -> None:
    gate = suspension.decide(
        HOURLY, NEXT_FIRE, NEXT_FIRE, None, suspend=False, quarantine_state=QUARANTINED
    )
    assert gate.paused is PauseReason.QUARANTINED


def test_user_suspend_is_reported_over_quarantine() -> None:
    assert (
        suspension.pause_reason(suspend=True, quarantine_state=QUARANTINED) is PauseReason.SUSPENDED
    )


def test_on_resume_coalesce_creates_one_run_for_the_pause() -> None:
    resumed_at = NEXT_FIRE + timedelta(hours=5, minutes=20)
    gate = suspension.decide(
        HOURLY, NEXT_FIRE, resumed_at, MissedFireRules(), suspend=False, quarantine_state=HEALTHY
    )
    assert gate.paused is None and gate.decision is not None
    assert gate.decision.fire_times == (NEXT_FIRE + timedelta(hours=5),)
    assert gate.decision.coalesced == 5
    assert gate.decision.next_fire_time == NEXT_FIRE + timedelta(hours=6)


def test_on_resume_skip_waits_for_the_next_fire() -> None:
    resumed_at = NEXT_FIRE + timedelta(hours=5, minutes=20)
    gate = suspension.decide(
        HOURLY,
        NEXT_FIRE,
        resumed_at,
        MissedFireRules(MissedFirePolicy.SKIP),
        suspend=False,
        quarantine_state=HEALTHY,
    )
    assert gate.decision is not None
    assert gate.decision.fire_times == ()
    assert gate.decision.skipped == 6


def test_clearing_a_quarantine_resumes_through_the_missed_fire_policy() -> None:
    cleared = quarantine.clear(QUARANTINED)
    gate = suspension.decide(
        HOURLY,
        NEXT_FIRE,
        NEXT_FIRE + timedelta(hours=2, minutes=30),
        MissedFireRules(MissedFirePolicy.BACKFILL, max_backfill=2),
        suspend=False,
        quarantine_state=cleared,
    )
    assert gate.decision is not None
    assert gate.decision.fire_times == (
        NEXT_FIRE + timedelta(hours=1),
        NEXT_FIRE + timedelta(hours=2),
    )
