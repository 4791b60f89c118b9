"""Per-ScheduledJob gauges, in the manner of kube-state-metrics' CronJob metrics.

Read at scrape time from the ScheduledJobs the operator's watch keeps (``cache``): their
``status`` as the mirror last wrote it and their ``spec``. Nothing is set or kept here, so a
ScheduledJob's series leave the exposition with the object (its DELETED event removes it from
the cache), and only the leading operator, which owns the cache, exports any: a standby
exports none, so two replicas never show one ScheduledJob twice.

Each series is labelled ``namespace`` and ``name`` (the ScheduledJob's; scrape them with
``honorLabels: true``, as kube-state-metrics is scraped, so that the target's own namespace
does not overwrite it). Timestamps are Unix seconds:

- ``sundial_scheduledjob_last_schedule_timestamp_seconds``: the fire time of the latest run
  created (``status.lastScheduleTime``);
- ``sundial_scheduledjob_last_successful_timestamp_seconds``: when the latest successful run
  finished (``status.lastSuccessfulTime``);
- ``sundial_scheduledjob_next_schedule_timestamp_seconds``: when the next run fires
  (``status.nextScheduleTime``);
- ``sundial_scheduledjob_suspended``: 1 while no new runs fire (``spec.suspend``, or the
  ``Suspended`` condition, which a quarantine sets too), else 0;
- ``sundial_scheduledjob_active``: runs active now (``status.activeCount``);
- ``sundial_scheduledjob_slo_freshness_seconds``: its ``slo.freshnessSeconds``, and
  ``sundial_scheduledjob_stale``: 1 while it breaks it (Degraded, reason NoRecentSuccess), else
  0; both only for a ScheduledJob that sets the SLO.

A timestamp the status does not have yet (never fired, never succeeded, suspended) has no
series, as in kube-state-metrics; the two gauges always have one.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

from sundial.operator import cache

__all__ = ["PREFIX", "ScheduledJobCollector", "collector"]

PREFIX = "sundial_scheduledjob_"

_TIMESTAMPS = (
    (
        "last_schedule_timestamp_seconds",
        "lastScheduleTime",
        "The fire time of the ScheduledJob's latest run created, in Unix seconds.",
    ),
    (
        "last_successful_timestamp_seconds",
        "lastSuccessfulTime",
        "When the ScheduledJob's latest successful run finished, in Unix seconds.",
    ),
    (
        "next_schedule_timestamp_seconds",
        "nextScheduleTime",
        "When the ScheduledJob's next run fires, in Unix seconds.",
    ),
)
_LABELS = ("namespace", "name")


def _seconds(stamp: Any) -> float | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        moment = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None  # not ours to judge here; the status is written by the mirror
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _suspended(body: Mapping[str, Any]) -> bool:
    if (body.get("spec") or {}).get("suspend") is True:
        return True
    for condition in (body.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Suspended":
            return bool(condition.get("status") == "True")
    return False


def _active(status: Mapping[str, Any]) -> int:
    count = status.get("activeCount")
    if isinstance(count, int):
        return count
    return len(status.get("active") or ())


def _freshness(body: Mapping[str, Any]) -> int | None:
    slo = (body.get("spec") or {}).get("slo")
    seconds = slo.get("freshnessSeconds") if isinstance(slo, Mapping) else None
    if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0:
        return seconds
    return None


def _stale(status: Mapping[str, Any]) -> bool:
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Degraded":
            return bool(
                condition.get("status") == "True" and condition.get("reason") == "NoRecentSuccess"
            )
    return False


class ScheduledJobCollector:
    """The gauges of every ScheduledJob in ``objects``; none while it is ``None``."""

    def __init__(self) -> None:
        self.objects: cache.ObjectCache | None = None

    def collect(self) -> Iterator[Metric]:
        stamps = {
            key: GaugeMetricFamily(PREFIX + suffix, text, labels=_LABELS)
            for suffix, key, text in _TIMESTAMPS
        }
        suspended = GaugeMetricFamily(
            PREFIX + "suspended",
            "1 while the ScheduledJob fires no new runs (suspended or quarantined), else 0.",
            labels=_LABELS,
        )
        active = GaugeMetricFamily(
            PREFIX + "active", "Runs of the ScheduledJob active now.", labels=_LABELS
        )
        freshness = GaugeMetricFamily(
            PREFIX + "slo_freshness_seconds",
            "The ScheduledJob's slo.freshnessSeconds: a run completes at least this often.",
            labels=_LABELS,
        )
        stale = GaugeMetricFamily(
            PREFIX + "stale",
            "1 while no run of the ScheduledJob completed within slo.freshnessSeconds, else 0.",
            labels=_LABELS,
        )
        bodies = self.objects.bodies() if self.objects is not None else []
        for body in bodies:
            metadata = body.get("metadata") or {}
            labels = [str(metadata.get("namespace") or ""), str(metadata.get("name") or "")]
            status = body.get("status") or {}
            for key, family in stamps.items():
                value = _seconds(status.get(key))
                if value is not None:
                    family.add_metric(labels, value)
            suspended.add_metric(labels, 1.0 if _suspended(body) else 0.0)
            active.add_metric(labels, float(_active(status)))
            seconds = _freshness(body)
            if seconds is not None:
                freshness.add_metric(labels, float(seconds))
                stale.add_metric(labels, 1.0 if _stale(status) else 0.0)
        yield from stamps.values()
        yield suspended
        yield active
        yield freshness
        yield stale

    def describe(self) -> Iterator[Metric]:
        for suffix, _, text in _TIMESTAMPS:
            yield GaugeMetricFamily(PREFIX + suffix, text, labels=_LABELS)
        yield GaugeMetricFamily(PREFIX + "suspended", "", labels=_LABELS)
        yield GaugeMetricFamily(PREFIX + "active", "", labels=_LABELS)
        yield GaugeMetricFamily(PREFIX + "slo_freshness_seconds", "", labels=_LABELS)
        yield GaugeMetricFamily(PREFIX + "stale", "", labels=_LABELS)


def collector(registry: CollectorRegistry = REGISTRY) -> ScheduledJobCollector:
    """The process's collector, registered in ``registry`` once (the operator's ``/metrics``
    serves the default registry); the leader points it at its cache."""
    found = _registered.get(id(registry))
    if found is None:
        found = ScheduledJobCollector()
        registry.register(found)
        _registered[id(registry)] = found
    return found


_registered: dict[int, ScheduledJobCollector] = {}
