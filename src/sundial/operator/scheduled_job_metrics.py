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
- ``sundial_scheduledjob_slo_seconds{slo}``: each promise of its ``spec.slo`` (``slo`` is
  ``freshness``, ``startLateness`` or ``maxDuration``), and
  ``sundial_scheduledjob_slo_broken{slo}``: 1 while it breaks that promise
  (``status.brokenSlos``), else 0; only for the promises it sets;
- ``sundial_scheduledjob_slo_freshness_seconds`` and ``sundial_scheduledjob_stale``: the same
  two for freshness alone, unlabelled, as the first alerts read them.

A timestamp the status does not have yet (never fired, never succeeded, suspended) has no
series, as in kube-state-metrics; the two gauges always have one.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

from sundial.operator import cache, slos

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
_SLO_LABELS = (*_LABELS, "slo")


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


def _broken(status: Mapping[str, Any]) -> set[str]:
    """The SLOs the status lists as broken; a status written before ``brokenSlos`` existed
    says only freshness, in its Degraded condition."""
    broken = {
        str(entry.get("slo"))
        for entry in status.get("brokenSlos") or ()
        if isinstance(entry, Mapping)
    }
    for condition in status.get("conditions") or ():
        if (
            condition.get("type") == "Degraded"
            and condition.get("status") == "True"
            and condition.get("reason") == "NoRecentSuccess"
        ):
            broken.add("freshness")
    return broken


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
        promised = GaugeMetricFamily(
            PREFIX + "slo_seconds",
            "What each promise of the ScheduledJob's spec.slo holds to, in seconds.",
            labels=_SLO_LABELS,
        )
        broken = GaugeMetricFamily(
            PREFIX + "slo_broken",
            "1 while the ScheduledJob breaks this promise of its spec.slo, else 0.",
            labels=_SLO_LABELS,
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
            promises = slos.promises(body)
            broken_now = _broken(status) if promises else set()
            for slo, seconds in promises.items():
                promised.add_metric([*labels, slo], float(seconds))
                broken.add_metric([*labels, slo], 1.0 if slo in broken_now else 0.0)
            if "freshness" in promises:
                freshness.add_metric(labels, float(promises["freshness"]))
                stale.add_metric(labels, 1.0 if "freshness" in broken_now else 0.0)
        yield from stamps.values()
        yield suspended
        yield active
        yield freshness
        yield stale
        yield promised
        yield broken

    def describe(self) -> Iterator[Metric]:
        for suffix, _, text in _TIMESTAMPS:
            yield GaugeMetricFamily(PREFIX + suffix, text, labels=_LABELS)
        yield GaugeMetricFamily(PREFIX + "suspended", "", labels=_LABELS)
        yield GaugeMetricFamily(PREFIX + "active", "", labels=_LABELS)
        yield GaugeMetricFamily(PREFIX + "slo_freshness_seconds", "", labels=_LABELS)
        yield GaugeMetricFamily(PREFIX + "stale", "", labels=_LABELS)
        yield GaugeMetricFamily(PREFIX + "slo_seconds", "", labels=_SLO_LABELS)
        yield GaugeMetricFamily(PREFIX + "slo_broken", "", labels=_SLO_LABELS)


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
