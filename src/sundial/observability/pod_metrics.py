"""Prometheus metrics of the pod launcher (in the operator, or ``sundial pod-launcher``).

- ``sundial_schedule_lag_seconds{queue}``: how late a pod-mode run started (started_at -
  run_at), the same histogram the runners observe for the runs they start. Each run is
  started by exactly one runner or launcher, so summing the metric over every process gives
  the installation's lag with no run counted twice. Observed once per claimed run, never for
  a run adopted from a previous process (that one observed it).
"""

from __future__ import annotations

from prometheus_client import Histogram

from sundial.observability import metrics

__all__ = ["SCHEDULE_LAG"]

SCHEDULE_LAG = Histogram(
    metrics.SCHEDULE_LAG_NAME,
    metrics.SCHEDULE_LAG_HELP,
    ["queue"],
    buckets=metrics.LATENCY_BUCKETS,
)
