"""Per-ScheduledJob gauges come from the watched objects at scrape time and leave with them."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from sundial.operator import cache, scheduled_job_metrics

PREFIX = "sundial_scheduledjob_"


def _body(name: str, version: int, **fields: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "team-a",
            "name": name,
            "uid": name,
            "resourceVersion": str(version),
        },
        "spec": fields.pop("spec", {}),
        "status": fields.pop("status", {}),
    }


def _registry() -> tuple[CollectorRegistry, scheduled_job_metrics.ScheduledJobCollector]:
    registry = CollectorRegistry()
    return registry, scheduled_job_metrics.collector(registry)


def test_timestamps_suspended_and_active_per_scheduled_job() -> None:
    registry, gauges = _registry()
    objects = cache.ObjectCache()
    gauges.objects = objects
    objects.observe(
        None,
        _body(
            "nightly",
            1,
            status={
                "lastScheduleTime": "2026-12-01T00:00:00Z",
                "lastSuccessfulTime": "2026-12-01T00:00:07Z",
                "nextScheduleTime": "2026-12-02T00:00:00Z",
                "activeCount": 2,
            },
        ),
    )
    objects.observe(
        None,
        _body(
            "paused",
            2,
            spec={"suspend": False},
            status={"conditions": [{"type": "Suspended", "status": "True"}]},
        ),
    )
    nightly = {"namespace": "team-a", "name": "nightly"}
    paused = {"namespace": "team-a", "name": "paused"}
    value = registry.get_sample_value
    assert value(PREFIX + "last_schedule_timestamp_seconds", nightly) == 1796083200.0
    assert value(PREFIX + "last_successful_timestamp_seconds", nightly) == 1796083207.0
    assert value(PREFIX + "next_schedule_timestamp_seconds", nightly) == 1796169600.0
    assert value(PREFIX + "active", nightly) == 2
    assert value(PREFIX + "suspended", nightly) == 0
    # A quarantine suspends through the condition; a status without times has no series.
    assert value(PREFIX + "suspended", paused) == 1
    assert value(PREFIX + "active", paused) == 0
    assert value(PREFIX + "next_schedule_timestamp_seconds", paused) is None

    objects.observe("DELETED", _body("nightly", 3))
    assert value(PREFIX + "active", nightly) is None
    assert value(PREFIX + "last_schedule_timestamp_seconds", nightly) is None
    assert value(PREFIX + "active", paused) == 0


def test_a_standby_exports_no_scheduled_job_and_the_collector_is_registered_once() -> None:
    registry, gauges = _registry()
    assert scheduled_job_metrics.collector(registry) is gauges
    text = "\n".join(
        f"{sample.name} {sample.labels}"
        for family in registry.collect()
        for sample in family.samples
    )
    assert text == ""  # no cache: the families exist, no series
    families = {family.name for family in registry.collect()}
    assert PREFIX + "next_schedule_timestamp_seconds" in families
