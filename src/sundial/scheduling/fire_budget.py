"""The fire budget: how many runs each second of ``run_at`` may hold, in all and per namespace.

Spread moves each job's ``run_at`` by a hash of its identity; with many jobs on one minute some
seconds still get more than their share, and one namespace with thousands of schedules on the
same minute can fill every second around it. The trigger loop places each run it creates on a
calendar of ``run_at`` seconds (``FireCalendar.place``): a run keeps its ``run_at`` when its
second has room, globally and in its namespace, and otherwise moves to the start of the first
later second that has room in both. Nothing is dropped, only delayed; runs never move earlier.

The calendar is a calendar, not a token bucket read in order, so the result does not depend on
the order in which runs are placed: a namespace that fires 10,000 runs on the hour fills its own
seconds up to its limit and leaves the rest of each second to the others, even to runs placed
after all of its own (docs/adr/0052-fire-calendar.md).

A second's capacity is ``floor(rate * (s + 1)) - floor(rate * s)`` for the epoch second ``s``:
``rate`` runs every second when ``rate`` is whole, and exactly ``rate`` per second on average
when it is not (0.5 gives one run every other second). A ``run_at`` already past counts as
due now: it is placed from the clock's current second, so a backfill of old fires is paced like
any other. Seconds before the clock's current second are forgotten. Time comes only from the
injected clock. A new leader starts with an empty calendar: for the seconds its predecessor
had already filled, at most twice the budget.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from sundial.scheduling import errors
from sundial.scheduling.clock import Clock

__all__ = ["FireCalendar"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _Seconds:
    """Runs placed per epoch second against a rate, with pointers that skip full seconds."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.placed: dict[int, int] = {}
        #: For a full second, a later second to look at next (never a later full one skipped).
        self._skip: dict[int, int] = {}

    def capacity(self, second: int) -> int:
        return math.floor(self.rate * (second + 1)) - math.floor(self.rate * second)

    def is_full(self, second: int) -> bool:
        return self.placed.get(second, 0) >= self.capacity(second)

    def first_open(self, second: int) -> int:
        """The first second at or after ``second`` that has room (full seconds stay full)."""
        passed = []
        while self.is_full(second):
            passed.append(second)
            second = self._skip.get(second, second + 1)
        for full in passed:
            self._skip[full] = second
        return second

    def take(self, second: int) -> None:
        self.placed[second] = self.placed.get(second, 0) + 1

    def forget_before(self, second: int) -> None:
        self.placed = {s: n for s, n in self.placed.items() if s >= second}
        self._skip = {s: to for s, to in self._skip.items() if s >= second}


class FireCalendar:
    """Places runs on ``run_at`` seconds under a global and a per-namespace rate.

    Not thread-safe: one trigger loop owns one calendar. ``namespace_fires_per_second=None``
    leaves namespaces to the global rate alone."""

    def __init__(
        self,
        fires_per_second: float,
        clock: Clock,
        *,
        namespace_fires_per_second: float | None = None,
    ) -> None:
        _require_rate("firesPerSecond", fires_per_second)
        if namespace_fires_per_second is not None:
            _require_rate("namespaceFiresPerSecond", namespace_fires_per_second)
        self._clock = clock
        self._all = _Seconds(float(fires_per_second))
        self._namespace_rate = (
            None if namespace_fires_per_second is None else float(namespace_fires_per_second)
        )
        self._namespaces: dict[str, _Seconds] = {}
        self._forgotten_before: int | None = None

    @property
    def fires_per_second(self) -> float:
        return self._all.rate

    @property
    def namespace_fires_per_second(self) -> float | None:
        return self._namespace_rate

    def place(self, run_at: datetime, namespace: str) -> datetime:
        """The ``run_at`` to store for a run of ``namespace`` due at ``run_at``: the same
        instant when its second has room, else the start of the first later second that has."""
        now = _second(self._clock.now())
        self._forget_before(now)
        start = max(_second(run_at), now)
        second = self._first_open_in_both(start, namespace)
        self._all.take(second)
        if self._namespace_rate is not None:
            self._namespace(namespace).take(second)
        return run_at if second == start else _EPOCH + timedelta(seconds=second)

    def placed(self, second_at: datetime, namespace: str | None = None) -> int:
        """Runs placed in the second holding ``second_at`` (in ``namespace`` when given and
        namespaces have their own rate)."""
        second = _second(second_at)
        if namespace is None:
            return self._all.placed.get(second, 0)
        seconds = self._namespaces.get(namespace)
        return 0 if seconds is None else seconds.placed.get(second, 0)

    def _first_open_in_both(self, second: int, namespace: str) -> int:
        if self._namespace_rate is None:
            return self._all.first_open(second)
        own = self._namespace(namespace)
        while True:  # each pass moves forward over full seconds only, so it ends
            second = self._all.first_open(second)
            in_namespace = own.first_open(second)
            if in_namespace == second:
                return second
            second = in_namespace

    def _namespace(self, namespace: str) -> _Seconds:
        seconds = self._namespaces.get(namespace)
        if seconds is None:
            assert self._namespace_rate is not None
            seconds = self._namespaces[namespace] = _Seconds(self._namespace_rate)
        return seconds

    def _forget_before(self, second: int) -> None:
        if self._forgotten_before is not None and second <= self._forgotten_before:
            return
        self._forgotten_before = second
        self._all.forget_before(second)
        for name in list(self._namespaces):
            seconds = self._namespaces[name]
            seconds.forget_before(second)
            if not seconds.placed:
                del self._namespaces[name]


def _second(at: datetime) -> int:
    """The epoch second holding ``at`` (exact: whole days and seconds, no float)."""
    since = at - _EPOCH
    return since.days * 86_400 + since.seconds


def _require_rate(field: str, rate: object) -> None:
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not rate > 0:
        raise errors.InvalidPolicyError(field, rate, "must be a number greater than 0")
    if not math.isfinite(rate):
        raise errors.InvalidPolicyError(field, rate, "must be a finite number")
