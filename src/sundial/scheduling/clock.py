"""Where the scheduling layer gets the time from.

Nothing in ``sundial.scheduling`` calls ``datetime.now()``: functions take the time as an
argument, and the few stateful helpers (the fire-rate budget) take a ``Clock``. Production code
passes ``SystemClock()``; tests pass a ``ManualClock`` and move it by hand, so no test sleeps.
Every clock returns timezone-aware UTC datetimes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of the current instant."""

    def now(self) -> datetime:
        """The current instant, timezone-aware, in UTC."""
        ...


class SystemClock:
    """The machine's wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to; for tests and simulations."""

    def __init__(self, start: datetime) -> None:
        self._now = require_aware(start, "start").astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, by: timedelta) -> datetime:
        """Move forward by ``by`` (never backwards) and return the new now."""
        if by < timedelta(0):
            raise ValueError(f"a ManualClock only moves forward; got advance({by!r})")
        self._now += by
        return self._now

    def set(self, to: datetime) -> None:
        """Jump to ``to``; jumping backwards is allowed, as a real wall clock can be stepped."""
        self._now = require_aware(to, "to").astimezone(UTC)


def require_aware(moment: datetime, name: str) -> datetime:
    """Return ``moment`` unchanged, or raise if it has no time zone.

    A naive datetime here is always a bug in the caller: its meaning depends on the machine.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware (UTC), got naive {moment.isoformat()}")
    return moment
