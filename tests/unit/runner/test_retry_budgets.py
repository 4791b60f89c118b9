"""The retry budget: quick retries per dependency per sliding window (retry_budgets)."""

from __future__ import annotations

from sundial.runner import retry_budgets


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_retry_budget_caps_retries_per_window() -> None:
    clock = FakeClock()
    budget = retry_budgets.RetryBudget(max_retries=2, window_seconds=10, clock=clock)
    assert budget.try_spend() and budget.try_spend()
    assert not budget.try_spend()
    assert budget.remaining() == 0
    clock.advance(10)
    assert budget.remaining() == 2 and budget.try_spend()


def test_a_spent_budget_says_when_the_next_retry_fits() -> None:
    clock = FakeClock()
    budget = retry_budgets.RetryBudget(max_retries=2, window_seconds=10, clock=clock)
    assert budget.retry_after_seconds() == 0
    budget.try_spend()
    clock.advance(3)
    budget.try_spend()
    # Full: the first spend (at 0) leaves the window at 10, seven seconds from now.
    assert budget.retry_after_seconds() == 7
    clock.advance(7)
    assert budget.retry_after_seconds() == 0 and budget.try_spend()


def test_a_zero_budget_defers_every_retry_by_a_window() -> None:
    budget = retry_budgets.RetryBudget(max_retries=0, window_seconds=10, clock=FakeClock())
    assert not budget.try_spend()
    assert budget.retry_after_seconds() == 10
