"""Prometheus metrics of the operator's status mirror.

- ``sundial_mirror_scheduled_jobs_total{result}``: ScheduledJobs a sweep of the mirror went
  through, ``synced`` (their window mirrored and their status computed) or ``settled`` (their
  inputs the same as at their last sync, so skipped). At rest nearly every one is settled: the
  mirror's cost follows what changed, not how many ScheduledJobs there are.
"""

from __future__ import annotations

from prometheus_client import Counter

__all__ = ["SCHEDULED_JOBS"]

SCHEDULED_JOBS = Counter(
    "sundial_mirror_scheduled_jobs",
    "ScheduledJobs a mirror sweep synced or skipped as settled.",
    ["result"],
)
