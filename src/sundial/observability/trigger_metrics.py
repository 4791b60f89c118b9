"""Prometheus metrics of the trigger loop (docs/design.md).

Kept apart from ``observability.metrics`` (the runner's) so each component owns its module.
Names have the ``sundial_`` prefix and base units; labels are bounded (``outcome`` has five
values, ``reason`` the scheduling errors' few reasons).

- ``sundial_fires_total{outcome}``: every due fire once: ran, backfilled, coalesced, skipped,
  or buffered (concurrencyPolicy BufferOne kept it waiting behind an active run; its run is
  created when that run ends, and not counted again).
- ``sundial_fire_creation_lag_seconds``: how long after its fire time a fire's run was
  created (the trigger's share of schedule lag; the runner measures ``started_at - run_at``).
- ``sundial_trigger_tick_seconds``: the duration of one pass over the due schedules.
- ``sundial_schedules_stalled_total{reason}`` and ``sundial_schedules_quarantined_total``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from prometheus_client import Counter, Histogram

__all__ = [
    "FIRES",
    "FIRE_CREATION_LAG",
    "OUTCOMES",
    "QUARANTINED",
    "STALLED",
    "TICK_SECONDS",
    "record_fires",
]

OUTCOMES = ("ran", "backfilled", "coalesced", "skipped", "buffered")

FIRES = Counter("sundial_fires", "Schedule fires by outcome.", ["outcome"])
for _outcome in OUTCOMES:
    FIRES.labels(_outcome)

FIRE_CREATION_LAG = Histogram(
    "sundial_fire_creation_lag_seconds",
    "Time from a fire's logical fire time to the commit that created its run.",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600),
)
TICK_SECONDS = Histogram(
    "sundial_trigger_tick_seconds",
    "Duration of one trigger pass over the due schedules.",
    buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
)
STALLED = Counter(
    "sundial_schedules_stalled", "Schedules the trigger could not compute.", ["reason"]
)
QUARANTINED = Counter(
    "sundial_schedules_quarantined", "Schedules that suspended themselves after failures."
)


def record_fires(
    *,
    ran: int,
    backfilled: int,
    coalesced: int,
    skipped: int,
    buffered: int = 0,
    fire_times: Iterable[datetime],
    created_at: datetime,
) -> None:
    """Count one trigger transaction's fires and the creation lag of its runs."""
    for outcome, count in zip(
        OUTCOMES, (ran, backfilled, coalesced, skipped, buffered), strict=True
    ):
        if count:
            FIRES.labels(outcome).inc(count)
    for fire_time in fire_times:
        FIRE_CREATION_LAG.observe(max(0.0, (created_at - fire_time).total_seconds()))
