"""Exponential backoff with full jitter: bounds, growth, cap, and the injected random source."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sundial.scheduling import backoff


class Fixed:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def test_ceiling_doubles_until_the_cap() -> None:
    ceilings = [backoff.ceiling(n, base_seconds=1.0, cap_seconds=10.0) for n in range(1, 7)]
    assert ceilings == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_delay_is_the_random_fraction_of_the_ceiling() -> None:
    assert backoff.delay_seconds(3, base_seconds=2.0, cap_seconds=100.0, rng=Fixed(0.5)) == 4.0
    assert backoff.delay_seconds(3, base_seconds=2.0, cap_seconds=100.0, rng=Fixed(0.0)) == 0.0


def test_huge_retry_numbers_do_not_overflow() -> None:
    assert backoff.ceiling(100_000, base_seconds=1.0, cap_seconds=300.0) == 300.0


def test_retry_numbers_start_at_one() -> None:
    with pytest.raises(ValueError, match="starts at 1"):
        backoff.ceiling(0, base_seconds=1.0, cap_seconds=1.0)


@given(
    retry=st.integers(min_value=1, max_value=200),
    base=st.floats(min_value=0, max_value=1000),
    cap=st.floats(min_value=0, max_value=10_000),
    seed=st.integers(),
)
def test_delay_stays_within_zero_and_the_cap(
    retry: int, base: float, cap: float, seed: int
) -> None:
    delay = backoff.delay_seconds(
        retry, base_seconds=base, cap_seconds=cap, rng=random.Random(seed)
    )
    assert 0.0 <= delay <= cap
    assert delay <= base * 2 ** min(retry - 1, 62)
