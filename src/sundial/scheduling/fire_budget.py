"""A global fire-rate budget: a token bucket that smooths the fires spread could not.

Spread moves each job's ``run_at`` by a hash of its identity; with many jobs on one minute some
seconds still get more than their share. The trigger loop asks the budget before releasing
fires: ``acquire(n)`` grants up to ``n`` now and says when the next one may go; the loop leaves
the rest due (``next_fire_time`` unchanged) and comes back then. Nothing is dropped, only
delayed; the loop stays correct with any budget, including none.

The bucket holds at most ``burst`` tokens and refills at ``fires_per_second``; it starts full.
Time comes only from the injected clock. A clock stepped backwards refills nothing (and never
drains); the bucket resumes refilling from the new reading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sundial.scheduling import errors
from sundial.scheduling.clock import Clock


@dataclass(frozen=True)
class Grant:
    """What ``acquire`` allowed: ``granted`` fires now; ``next_release_at`` is when the next
    fire may be released (``None`` when everything requested was granted)."""

    requested: int
    granted: int
    next_release_at: datetime | None

    @property
    def withheld(self) -> int:
        """Fires the caller must keep due and release later."""
        return self.requested - self.granted


class FireBudget:
    """A token bucket of fires. Not thread-safe: one trigger loop owns one budget."""

    def __init__(self, fires_per_second: float, burst: int, clock: Clock) -> None:
        if not (isinstance(fires_per_second, int | float) and fires_per_second > 0):
            raise errors.InvalidPolicyError(
                "firesPerSecond", fires_per_second, "must be a number greater than 0"
            )
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise errors.InvalidPolicyError("fireBurst", burst, "must be an integer of at least 1")
        self._rate = float(fires_per_second)
        self._burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._refilled_at = clock.now()

    @property
    def fires_per_second(self) -> float:
        return self._rate

    @property
    def burst(self) -> int:
        return self._burst

    def available(self) -> int:
        """Whole fires that may be released right now."""
        self._refill()
        return _whole(self._tokens)

    def acquire(self, requested: int) -> Grant:
        """Take up to ``requested`` fires from the budget; never blocks."""
        if requested < 0:
            raise ValueError(f"requested must be >= 0, got {requested}")
        self._refill()
        granted = min(requested, _whole(self._tokens))
        self._tokens -= granted
        if granted == requested:
            return Grant(requested=requested, granted=granted, next_release_at=None)
        return Grant(requested=requested, granted=granted, next_release_at=self.next_release_at())

    def next_release_at(self) -> datetime:
        """When at least one fire may be released (now, if one may be released already)."""
        self._refill()
        missing = 1.0 - self._tokens
        if missing <= 0:
            return self._refilled_at
        # Round up to the microsecond so that asking again at that instant always succeeds.
        wait = math.ceil(missing / self._rate * 1_000_000)
        return self._refilled_at + timedelta(microseconds=wait)

    def _refill(self) -> None:
        now = self._clock.now()
        elapsed = (now - self._refilled_at).total_seconds()
        if elapsed > 0:
            self._tokens = min(float(self._burst), self._tokens + elapsed * self._rate)
        self._refilled_at = now


def _whole(tokens: float) -> int:
    # A refill computed from a rounded-up wait can land a hair under a whole token.
    return math.floor(tokens + 1e-9)
