"""Prometheus metrics of the operator's status mirror.

- ``sundial_mirror_scheduled_jobs_total{result}``: ScheduledJobs a sweep of the mirror went
  through, ``synced`` (their window mirrored and their status computed) or ``settled`` (their
  inputs the same as at their last sync, so skipped). At rest nearly every one is settled: the
  mirror's cost follows what changed, not how many ScheduledJobs there are.
- ``sundial_mirror_passes_total{kind}``: mirror passes, ``sweep`` (every ScheduledJob's
  digest read), ``quiet`` (nothing a sync reads changed since the last sweep, so only the
  ScheduledJobs synced on every pass were) or ``backlog`` (only the ScheduledJobs not stored
  yet). At rest nearly every pass is quiet.
"""

from __future__ import annotations

from prometheus_client import Counter

__all__ = ["PASSES", "SCHEDULED_JOBS"]

SCHEDULED_JOBS = Counter(
    "sundial_mirror_scheduled_jobs",
    "ScheduledJobs a mirror sweep synced or skipped as settled.",
    ["result"],
)

PASSES = Counter(
    "sundial_mirror_passes",
    "Mirror passes: a sweep of every ScheduledJob, a quiet one, or one over a backlog.",
    ["kind"],
)
