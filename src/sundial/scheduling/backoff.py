"""Retry delays: exponential backoff with full jitter.

Full jitter (a uniform draw between 0 and the exponential ceiling) spreads the retries of many
runs that failed together — a downstream outage — so the recovery is not a thundering herd
(see the AWS Architecture Blog, "Exponential Backoff And Jitter"). The random source is
injected so tests are deterministic and the function stays pure.
"""

from __future__ import annotations

import random
from typing import Protocol

__all__ = ["RandomSource", "ceiling", "delay_seconds"]


class RandomSource(Protocol):
    """Anything with ``random() -> float`` in [0, 1), e.g. ``random.Random(seed)``."""

    def random(self) -> float: ...


def ceiling(retry_number: int, *, base_seconds: float, cap_seconds: float) -> float:
    """The largest delay before retry ``retry_number`` (1 for the first retry)."""
    if retry_number < 1:
        raise ValueError(f"retry_number starts at 1, got {retry_number}")
    if base_seconds < 0 or cap_seconds < 0:
        raise ValueError("base_seconds and cap_seconds must not be negative")
    # Cap the exponent first: 2**10000 overflows a float long before any cap matters.
    exponent = min(retry_number - 1, 62)
    return float(min(cap_seconds, base_seconds * (2**exponent)))


def delay_seconds(
    retry_number: int,
    *,
    base_seconds: float,
    cap_seconds: float,
    rng: RandomSource | None = None,
) -> float:
    """A delay drawn uniformly from ``[0, ceiling(retry_number))`` ("full jitter")."""
    source: RandomSource = rng if rng is not None else random.SystemRandom()
    return source.random() * ceiling(
        retry_number, base_seconds=base_seconds, cap_seconds=cap_seconds
    )
