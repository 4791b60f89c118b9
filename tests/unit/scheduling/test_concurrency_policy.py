"""concurrencyPolicy against a long-running run of the same job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sundial.scheduling import concurrency, errors
from sundial.scheduling.concurrency import ConcurrencyPolicy

FIRE = datetime(2026, 6, 1, 12, tzinfo=UTC)
BACKFILL = (FIRE - timedelta(minutes=20), FIRE - timedelta(minutes=10), FIRE)


def test_forbid_skips_a_fire_while_a_run_is_active_and_says_why() -> None:
    decision = concurrency.decide(ConcurrencyPolicy.FORBID, [FIRE], active_runs=1)
    assert decision.start == ()
    assert decision.skipped == (FIRE,)
    assert not decision.cancel_active
    assert decision.reason == concurrency.JOB_ALREADY_ACTIVE


def test_forbid_starts_the_fire_when_nothing_is_active() -> None:
    decision = concurrency.decide(ConcurrencyPolicy.FORBID, [FIRE], active_runs=0)
    assert (decision.start, decision.skipped, decision.reason) == ((FIRE,), (), None)


def test_allow_starts_every_fire_beside_an_active_run() -> None:
    decision = concurrency.decide(ConcurrencyPolicy.ALLOW, list(reversed(BACKFILL)), active_runs=3)
    assert decision.start == BACKFILL  # oldest first, whatever order they came in
    assert not decision.cancel_active


def test_replace_cancels_the_active_run_then_starts_the_new_one() -> None:
    decision = concurrency.decide(ConcurrencyPolicy.REPLACE, [FIRE], active_runs=1)
    assert decision.start == (FIRE,)
    assert decision.cancel_active
    assert decision.reason == concurrency.REPLACED_ACTIVE_RUN


def test_replace_with_nothing_active_cancels_nothing() -> None:
    decision = concurrency.decide(ConcurrencyPolicy.REPLACE, [FIRE], active_runs=0)
    assert not decision.cancel_active
    assert decision.reason is None


@pytest.mark.parametrize("policy", [ConcurrencyPolicy.FORBID, ConcurrencyPolicy.REPLACE])
def test_one_at_a_time_policies_start_only_the_newest_of_a_backfill(
    policy: ConcurrencyPolicy,
) -> None:
    decision = concurrency.decide(policy, BACKFILL, active_runs=0)
    assert decision.start == (FIRE,)
    assert decision.skipped == BACKFILL[:2]
    assert decision.reason == concurrency.CONCURRENCY_LIMITS_BACKFILL


def test_no_fires_no_action() -> None:
    for policy in ConcurrencyPolicy:
        decision = concurrency.decide(policy, [], active_runs=2)
        assert (decision.start, decision.skipped, decision.cancel_active) == ((), (), False)


def test_policy_from_spec_defaults_to_forbid_and_rejects_unknown_values() -> None:
    assert ConcurrencyPolicy.from_spec(None) is ConcurrencyPolicy.FORBID
    assert ConcurrencyPolicy.from_spec("Replace") is ConcurrencyPolicy.REPLACE
    with pytest.raises(errors.InvalidPolicyError) as caught:
        ConcurrencyPolicy.from_spec("Sometimes")
    assert str(caught.value) == (
        "concurrencyPolicy: 'Sometimes' must be one of Forbid, Allow, Replace, BufferOne"
    )


def test_negative_active_runs_is_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="active_runs must be >= 0"):
        concurrency.decide(ConcurrencyPolicy.ALLOW, [FIRE], active_runs=-1)


def test_buffer_one_keeps_the_first_fire_behind_an_active_run_waiting() -> None:
    decision = concurrency.decide(ConcurrencyPolicy.BUFFER_ONE, [FIRE], active_runs=1)
    assert (decision.start, decision.skipped, decision.buffered) == ((), (), FIRE)
    assert decision.reason == concurrency.FIRE_BUFFERED
    assert not decision.cancel_active


def test_buffer_one_skips_a_fire_while_one_waits_and_keeps_the_waiting_one() -> None:
    waiting = FIRE - timedelta(minutes=10)
    decision = concurrency.decide(
        ConcurrencyPolicy.BUFFER_ONE, [FIRE], active_runs=1, buffered=waiting
    )
    assert (decision.start, decision.skipped, decision.buffered) == ((), (FIRE,), waiting)
    assert decision.reason == concurrency.BUFFER_FULL


def test_buffer_one_starts_the_waiting_fire_once_nothing_is_active() -> None:
    waiting = FIRE - timedelta(minutes=10)
    decision = concurrency.decide(ConcurrencyPolicy.BUFFER_ONE, [], active_runs=0, buffered=waiting)
    assert (decision.start, decision.skipped, decision.buffered) == ((waiting,), (), None)
    assert decision.reason is None


def test_buffer_one_starts_the_waiting_fire_and_a_new_fire_takes_its_place() -> None:
    waiting = FIRE - timedelta(minutes=10)
    decision = concurrency.decide(
        ConcurrencyPolicy.BUFFER_ONE, [FIRE], active_runs=0, buffered=waiting
    )
    assert (decision.start, decision.skipped, decision.buffered) == ((waiting,), (), FIRE)
    assert decision.reason == concurrency.FIRE_BUFFERED


def test_buffer_one_takes_a_backfill_in_time_order_one_running_one_waiting() -> None:
    decision = concurrency.decide(ConcurrencyPolicy.BUFFER_ONE, BACKFILL, active_runs=0)
    assert decision.start == BACKFILL[:1]
    assert decision.buffered == BACKFILL[1]
    assert decision.skipped == BACKFILL[2:]
    assert decision.reason == concurrency.BUFFER_FULL


def test_buffer_one_with_nothing_active_and_nothing_waiting_starts_the_fire() -> None:
    decision = concurrency.decide(ConcurrencyPolicy.BUFFER_ONE, [FIRE], active_runs=0)
    assert (decision.start, decision.skipped, decision.buffered, decision.reason) == (
        (FIRE,),
        (),
        None,
        None,
    )
