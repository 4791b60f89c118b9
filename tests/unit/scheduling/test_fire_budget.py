"""The global fire-rate budget, driven by a manual clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sundial.scheduling import errors
from sundial.scheduling.clock import ManualClock
from sundial.scheduling.fire_budget import FireBudget

START = datetime(2026, 6, 1, 10, tzinfo=UTC)


def make_budget(rate: float = 10, burst: int = 5) -> tuple[FireBudget, ManualClock]:
    clock = ManualClock(START)
    return FireBudget(fires_per_second=rate, burst=burst, clock=clock), clock


def test_a_fresh_budget_allows_a_full_burst_and_withholds_the_rest() -> None:
    budget, _ = make_budget()
    grant = budget.acquire(8)
    assert (grant.granted, grant.withheld) == (5, 3)
    assert grant.next_release_at == START + timedelta(milliseconds=100)


def test_everything_granted_has_no_next_release_time() -> None:
    budget, _ = make_budget()
    grant = budget.acquire(3)
    assert (grant.granted, grant.next_release_at) == (3, None)
    assert budget.available() == 2


def test_tokens_refill_at_the_rate_and_never_beyond_the_burst() -> None:
    budget, clock = make_budget()
    budget.acquire(5)
    assert budget.available() == 0
    clock.advance(timedelta(milliseconds=250))
    assert budget.available() == 2
    clock.advance(timedelta(hours=1))
    assert budget.available() == 5


def test_asking_again_at_next_release_at_succeeds() -> None:
    budget, clock = make_budget(rate=3, burst=1)
    budget.acquire(1)
    for _ in range(20):
        release_at = budget.acquire(1).next_release_at
        assert release_at is not None
        clock.set(release_at)
        assert budget.acquire(1).granted == 1


def test_a_sustained_demand_is_released_at_the_rate() -> None:
    budget, clock = make_budget(rate=10, burst=5)
    released = 0
    for _ in range(100):  # ten seconds in 100 ms steps, always asking for more than allowed
        released += budget.acquire(1000).granted
        clock.advance(timedelta(milliseconds=100))
    assert released == 5 + 99  # the burst, then one per 100 ms


def test_a_clock_stepped_backwards_neither_refills_nor_drains() -> None:
    budget, clock = make_budget()
    budget.acquire(3)
    clock.set(START - timedelta(minutes=5))
    assert budget.available() == 2
    clock.set(START - timedelta(minutes=5) + timedelta(milliseconds=100))
    assert budget.available() == 3


def test_next_release_is_now_when_a_token_is_available() -> None:
    budget, _ = make_budget()
    assert budget.next_release_at() == START


def test_negative_requests_are_refused() -> None:
    budget, _ = make_budget()
    with pytest.raises(ValueError, match="requested must be >= 0"):
        budget.acquire(-1)


@pytest.mark.parametrize(
    ("rate", "burst", "message"),
    [
        (0, 5, "firesPerSecond: 0 must be a number greater than 0"),
        (10, 0, "fireBurst: 0 must be an integer of at least 1"),
    ],
)
def test_bad_budget_settings_name_the_field(rate: float, burst: int, message: str) -> None:
    with pytest.raises(errors.InvalidPolicyError) as caught:
        make_budget(rate, burst)
    assert str(caught.value) == message
