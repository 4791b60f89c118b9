"""Missed fires after downtime or a pause: Coalesce, Backfill, Skip and the starting deadline.

The downtime scenario: ``*/10 * * * *`` last fired at 10:00; the trigger was down until 12:05.
Due are the twelve fires 10:10 ... 12:00; the newest, 12:00, is five minutes late.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.scheduling import cron, errors, missed_fires
from sundial.scheduling.missed_fires import MissedFirePolicy, MissedFireRules

EVERY_TEN_MINUTES = cron.parse_schedule("*/10 * * * *")
NEXT_FIRE = datetime(2026, 6, 1, 10, 10, tzinfo=UTC)
BACK_AT = datetime(2026, 6, 1, 12, 5, tzinfo=UTC)


def at(hour: int, minute: int, second: int = 0) -> datetime:
    return datetime(2026, 6, 1, hour, minute, second, tzinfo=UTC)


def decide(
    rules: MissedFireRules, now: datetime = BACK_AT, next_fire: datetime = NEXT_FIRE
) -> missed_fires.FireDecision:
    return missed_fires.decide(EVERY_TEN_MINUTES, next_fire, now, rules)


def assert_outcomes_partition_the_due_fires(decision: missed_fires.FireDecision) -> None:
    total = decision.ran + decision.backfilled + decision.coalesced + decision.skipped
    assert total == decision.due
    assert decision.ran + decision.backfilled == len(decision.fire_times)


def test_coalesce_after_two_hours_of_downtime_creates_one_run_for_the_newest_fire() -> None:
    decision = decide(MissedFireRules())
    assert decision.fire_times == (at(12, 0),)
    assert (decision.due, decision.missed, decision.coalesced, decision.skipped) == (12, 12, 11, 0)
    assert decision.next_fire_time == at(12, 10)
    assert_outcomes_partition_the_due_fires(decision)


def test_backfill_five_creates_the_newest_five_fires_oldest_first() -> None:
    decision = decide(MissedFireRules(MissedFirePolicy.BACKFILL, max_backfill=5))
    assert decision.fire_times == (at(11, 20), at(11, 30), at(11, 40), at(11, 50), at(12, 0))
    assert (decision.ran, decision.backfilled, decision.skipped) == (1, 4, 7)
    assert decision.next_fire_time == at(12, 10)
    assert_outcomes_partition_the_due_fires(decision)


def test_backfill_creates_every_missed_fire_when_under_the_cap() -> None:
    decision = decide(MissedFireRules(MissedFirePolicy.BACKFILL, max_backfill=50))
    assert len(decision.fire_times) == 12
    assert decision.fire_times[0] == NEXT_FIRE
    assert decision.skipped == 0


def test_skip_after_downtime_creates_nothing() -> None:
    decision = decide(MissedFireRules(MissedFirePolicy.SKIP))
    assert decision.fire_times == ()
    assert (decision.skipped, decision.missed) == (12, 12)
    assert decision.next_fire_time == at(12, 10)


def test_skip_still_runs_a_fire_that_is_on_time() -> None:
    decision = decide(MissedFireRules(MissedFirePolicy.SKIP), now=at(12, 0, 30))
    assert decision.fire_times == (at(12, 0),)
    assert (decision.missed, decision.skipped, decision.ran) == (11, 11, 1)


def test_a_fire_due_now_is_on_time_not_missed() -> None:
    decision = decide(MissedFireRules(), now=at(10, 10), next_fire=NEXT_FIRE)
    assert decision.fire_times == (NEXT_FIRE,)
    assert (decision.due, decision.missed, decision.coalesced) == (1, 0, 0)


def test_a_fire_later_than_the_tolerance_counts_as_missed() -> None:
    decision = decide(MissedFireRules(), now=at(10, 11, 1))
    assert decision.fire_times == (NEXT_FIRE,)
    assert decision.missed == 1


def test_nothing_due_changes_nothing() -> None:
    decision = decide(MissedFireRules(), now=at(10, 9, 59))
    assert decision.fire_times == ()
    assert decision.next_fire_time == NEXT_FIRE
    assert decision.due == 0


def test_starting_deadline_drops_a_coalesced_fire_that_is_too_old() -> None:
    decision = decide(MissedFireRules(starting_deadline_seconds=200))
    assert decision.fire_times == ()
    assert (decision.skipped, decision.skipped_past_deadline, decision.coalesced) == (12, 12, 0)
    assert decision.next_fire_time == at(12, 10)


def test_starting_deadline_bounds_backfill() -> None:
    rules = MissedFireRules(
        MissedFirePolicy.BACKFILL, max_backfill=5, starting_deadline_seconds=1000
    )
    decision = decide(rules)  # fires before 11:48:20 are past the deadline
    assert decision.fire_times == (at(11, 50), at(12, 0))
    assert (decision.skipped, decision.skipped_past_deadline) == (10, 10)
    assert_outcomes_partition_the_due_fires(decision)


def test_starting_deadline_bounds_even_an_on_time_skip() -> None:
    rules = MissedFireRules(MissedFirePolicy.SKIP, starting_deadline_seconds=10)
    assert decide(rules, now=at(12, 0, 30)).fire_times == ()


def test_coalesce_within_the_deadline_counts_older_fires_as_coalesced_or_skipped() -> None:
    decision = decide(MissedFireRules(starting_deadline_seconds=1800))
    assert decision.fire_times == (at(12, 0),)
    # 11:40, 11:50 lie inside the deadline and fold into 12:00; 10:10 ... 11:30 are too old.
    assert (decision.coalesced, decision.skipped_past_deadline) == (2, 9)
    assert_outcomes_partition_the_due_fires(decision)


def test_a_stored_next_fire_time_off_the_schedule_is_read_as_nothing_owed_before_it() -> None:
    decision = decide(MissedFireRules(), now=at(10, 21), next_fire=at(10, 15))
    assert decision.fire_times == (at(10, 20),)
    assert decision.due == 1


class CountingSchedule:
    """A schedule that counts its evaluations: what ``decide`` costs, without a clock."""

    def __init__(self, schedule: cron.Schedule) -> None:
        self._schedule = schedule
        self.steps = 0

    def next_fire_after(self, after: datetime) -> datetime:
        self.steps += 1
        return self._schedule.next_fire_after(after)

    def previous_fire_at_or_before(self, at: datetime) -> datetime:
        self.steps += 1
        return self._schedule.previous_fire_at_or_before(at)


@pytest.mark.parametrize(
    "rules", [MissedFireRules(), MissedFireRules(MissedFirePolicy.BACKFILL, max_backfill=3)]
)
def test_a_year_of_minutely_fires_costs_a_bounded_number_of_steps_with_capped_counts(
    rules: MissedFireRules,
) -> None:
    """What keeps a minute schedule resumed after a year cheap: counting stops at
    ``MAX_COUNTED_FIRES``, so ``decide`` evaluates the schedule a bounded number of times, not
    once per due fire (525,600). Counted in steps, not seconds, so a loaded machine cannot fail
    it; the time it takes is in ``bench/scheduling_plan.py``."""
    every_minute = CountingSchedule(cron.parse_schedule("* * * * *"))
    a_year_earlier = at(0, 0) - timedelta(days=365)
    decision = missed_fires.decide(every_minute, a_year_earlier, at(12, 5), rules)
    # A forward pass and a recount, each stopping at the cap, and a few steps for the newest.
    assert every_minute.steps <= 2 * missed_fires.MAX_COUNTED_FIRES + rules.max_backfill + 4
    assert decision.fire_times == tuple(at(12, 5 - n) for n in reversed(range(rules.max_backfill)))
    assert decision.counts_capped
    assert decision.due == missed_fires.MAX_COUNTED_FIRES


@settings(max_examples=60, deadline=None)
@given(
    downtime_minutes=st.integers(min_value=0, max_value=300),
    extra_seconds=st.integers(min_value=0, max_value=599),
    max_backfill=st.integers(min_value=1, max_value=20),
    deadline=st.none() | st.integers(min_value=0, max_value=7200),
    policy=st.sampled_from(MissedFirePolicy),
)
def test_decisions_are_ordered_bounded_and_account_for_every_due_fire(
    downtime_minutes: int,
    extra_seconds: int,
    max_backfill: int,
    deadline: int | None,
    policy: MissedFirePolicy,
) -> None:
    now = NEXT_FIRE + timedelta(minutes=downtime_minutes, seconds=extra_seconds)
    rules = MissedFireRules(policy, max_backfill=max_backfill, starting_deadline_seconds=deadline)
    decision = decide(rules, now=now)
    fires = decision.fire_times
    assert list(fires) == sorted(set(fires))
    assert all(NEXT_FIRE <= fire <= now for fire in fires)
    if deadline is not None:
        assert all(fire >= now - timedelta(seconds=deadline) for fire in fires)
    assert len(fires) <= (max_backfill if policy is MissedFirePolicy.BACKFILL else 1)
    assert decision.next_fire_time > now
    assert decision.due == len(
        list(cron.fire_times(EVERY_TEN_MINUTES, NEXT_FIRE - timedelta(microseconds=1), now))
    )
    assert_outcomes_partition_the_due_fires(decision)


@settings(max_examples=40, deadline=None)
@given(
    downtime_minutes=st.integers(min_value=0, max_value=300),
    deadline=st.none() | st.integers(min_value=0, max_value=7200),
)
def test_backfill_of_one_is_coalesce(downtime_minutes: int, deadline: int | None) -> None:
    now = NEXT_FIRE + timedelta(minutes=downtime_minutes, seconds=17)
    coalesce = decide(MissedFireRules(starting_deadline_seconds=deadline), now=now)
    backfill_one = decide(
        MissedFireRules(MissedFirePolicy.BACKFILL, 1, starting_deadline_seconds=deadline), now=now
    )
    assert backfill_one.fire_times == coalesce.fire_times
    assert backfill_one.next_fire_time == coalesce.next_fire_time


def test_backfill_across_fall_back_creates_the_repeated_wall_time_once() -> None:
    hourly_new_york = cron.parse_schedule("30 * * * *", "America/New_York")
    decision = missed_fires.decide(
        hourly_new_york,
        datetime(2026, 11, 1, 4, 0, tzinfo=UTC),
        datetime(2026, 11, 1, 8, 0, tzinfo=UTC),
        MissedFireRules(MissedFirePolicy.BACKFILL, max_backfill=10),
    )
    # 00:30 EDT, 01:30 EDT, (01:30 EST does not fire again), 02:30 EST
    assert decision.fire_times == (
        datetime(2026, 11, 1, 4, 30, tzinfo=UTC),
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC),
        datetime(2026, 11, 1, 7, 30, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: MissedFireRules(MissedFirePolicy.BACKFILL, max_backfill=0),
            "maxBackfill: 0 must be an integer from 1 to 1000",
        ),
        (
            lambda: MissedFireRules(starting_deadline_seconds=-5),
            "startingDeadlineSeconds: -5 must be an integer of at least 0",
        ),
        (
            lambda: MissedFireRules.from_spec("Sometimes"),
            "missedFirePolicy: 'Sometimes' must be one of Coalesce, Backfill, Skip",
        ),
    ],
)
def test_bad_missed_fire_settings_name_the_field(make: object, message: str) -> None:
    with pytest.raises(errors.InvalidPolicyError) as caught:
        make()  # type: ignore[operator]
    assert str(caught.value) == message


def test_from_spec_defaults_to_coalesce() -> None:
    assert MissedFireRules.from_spec(None) == MissedFireRules()
    assert MissedFireRules.from_spec("Backfill", 5, 60) == MissedFireRules(
        MissedFirePolicy.BACKFILL, 5, 60
    )


def test_a_year_behind_with_a_deadline_backfills_only_inside_the_deadline() -> None:
    every_minute = cron.parse_schedule("* * * * *")
    rules = MissedFireRules(
        MissedFirePolicy.BACKFILL, max_backfill=10, starting_deadline_seconds=270
    )
    decision = missed_fires.decide(
        every_minute, at(0, 0) - timedelta(days=365), at(12, 5, 30), rules
    )
    assert decision.fire_times == tuple(at(12, minute) for minute in range(1, 6))
    assert decision.counts_capped
    assert decision.next_fire_time == at(12, 6)
    assert_outcomes_partition_the_due_fires(decision)
