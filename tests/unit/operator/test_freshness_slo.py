"""``spec.slo.freshnessSeconds``: the operator marks a ScheduledJob Degraded (NoRecentSuccess)
once no run of it has completed for that long, counted from its creation until its first
success, and clears it when one completes; not while suspended, quarantined or unread. The
gauges an alert reads follow the condition."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest

from sundial.operator import cache, events, scheduled_job_metrics, status
from sundial.store import history

CREATED = datetime.datetime(2026, 12, 1, 8, 0, tzinfo=datetime.UTC)


def schedule(**overrides: object) -> history.ScheduleView:
    values: dict[str, object] = {
        "id": uuid.uuid4(),
        "generation": 1,
        "next_fire_time": CREATED + datetime.timedelta(days=1),
        "spread_offset_ms": 0,
        "suspended": False,
        "quarantined": False,
        "quarantine_message": None,
        "consecutive_failures": 0,
        "quarantine_after": None,
        "stalled_reason": None,
        "last_error": None,
        "active": True,
        "last_fire_time": None,
    }
    values.update(overrides)
    return history.ScheduleView(**values)  # type: ignore[arg-type]


def body(freshness: int | None = 3600, current: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedule": "*/10 * * * *", "handler": {"name": "reports.build"}}
    if freshness is not None:
        spec["slo"] = {"freshnessSeconds": freshness}
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {
            "name": "report",
            "namespace": "team-a",
            "uid": str(uuid.uuid4()),
            "generation": 1,
            "creationTimestamp": "2026-12-01T08:00:00Z",
        },
        "spec": spec,
        "status": current or {},
    }


def succeeded_at(minutes: int) -> history.Window:
    finished = CREATED + datetime.timedelta(minutes=minutes)
    done = history.RunView(1, "completed", 1, None, None, finished, finished, finished)
    return history.Window([], [done], [])


NO_RUNS = history.Window([], [], [])


def degraded(
    job: dict[str, Any],
    window: history.Window | None,
    after_minutes: float,
    **schedule_overrides: object,
) -> dict[str, Any]:
    result = status.scheduled_job_status(
        job,
        spec_error=None,
        schedule=schedule(**schedule_overrides),
        window=window,
        missed=None,
        now=CREATED + datetime.timedelta(minutes=after_minutes),
    )
    [condition] = [c for c in result["conditions"] if c["type"] == "Degraded"]
    return condition


def test_a_job_that_never_succeeded_is_judged_from_its_creation() -> None:
    assert degraded(body(), NO_RUNS, 59)["status"] == "False"
    condition = degraded(body(), NO_RUNS, 61)
    assert (condition["status"], condition["reason"]) == ("True", "NoRecentSuccess")
    assert "since the ScheduledJob was created at 2026-12-01T08:00:00Z" in condition["message"]
    assert "slo.freshnessSeconds=3600" in condition["message"]


def test_a_success_within_the_window_keeps_it_fresh_and_an_old_one_does_not() -> None:
    assert degraded(body(), succeeded_at(120), 170)["status"] == "False"
    condition = degraded(body(), succeeded_at(120), 181)
    assert (condition["status"], condition["reason"]) == ("True", "NoRecentSuccess")
    assert "since 2026-12-01T10:00:00Z" in condition["message"]


def test_a_new_success_clears_it() -> None:
    stale = status.scheduled_job_status(
        body(),
        spec_error=None,
        schedule=schedule(),
        window=succeeded_at(0),
        missed=None,
        now=CREATED + datetime.timedelta(minutes=90),
    )
    current = {key: value for key, value in stale.items() if value is not None}
    assert degraded(body(current=current), succeeded_at(89), 90)["status"] == "False"


@pytest.mark.parametrize(
    ("freshness", "window", "overrides"),
    [
        (None, NO_RUNS, {}),  # no SLO
        (3600, NO_RUNS, {"suspended": True}),
        (3600, NO_RUNS, {"quarantined": True, "quarantine_message": "5 failed runs in a row"}),
        (3600, None, {}),  # the store could not be read: no judgement
    ],
)
def test_it_is_not_judged_without_an_slo_suspended_quarantined_or_unread(
    freshness: int | None, window: history.Window | None, overrides: dict[str, object]
) -> None:
    assert degraded(body(freshness), window, 600, **overrides)["status"] == "False"


def test_the_gauges_follow_the_condition() -> None:
    stale = status.scheduled_job_status(
        body(),
        spec_error=None,
        schedule=schedule(),
        window=NO_RUNS,
        missed=None,
        now=CREATED + datetime.timedelta(hours=2),
    )
    objects = cache.ObjectCache()
    objects.observe("ADDED", body(current=stale))
    quiet = body(freshness=None)
    quiet["metadata"]["name"] = "no-slo"
    objects.observe("ADDED", quiet)
    collector = scheduled_job_metrics.ScheduledJobCollector()
    collector.objects = objects
    samples = {
        (metric.name, sample.labels["name"]): sample.value
        for metric in collector.collect()
        for sample in metric.samples
    }
    assert samples[("sundial_scheduledjob_stale", "report")] == 1.0
    assert samples[("sundial_scheduledjob_slo_freshness_seconds", "report")] == 3600.0
    assert ("sundial_scheduledjob_stale", "no-slo") not in samples


class Recorder:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str, str | None]] = []

    def record(
        self, involved: Any, event_type: str, reason: str, message: str, *, key: str | None = None
    ) -> None:
        self.recorded.append((event_type, reason, message, key))


def test_one_warning_when_it_turns_stale_and_none_while_it_stays() -> None:
    fresh = status.scheduled_job_status(
        body(), spec_error=None, schedule=schedule(), window=NO_RUNS, missed=None, now=CREATED
    )
    stale = status.scheduled_job_status(
        body(current=fresh),
        spec_error=None,
        schedule=schedule(),
        window=NO_RUNS,
        missed=None,
        now=CREATED + datetime.timedelta(hours=2),
    )
    recorder = Recorder()
    events.record_broken_slos(recorder, body(), stale, fresh)  # type: ignore[arg-type]
    events.record_broken_slos(recorder, body(), stale, stale)  # type: ignore[arg-type]
    events.record_broken_slos(recorder, body(), fresh, fresh)  # type: ignore[arg-type]
    [(kind, reason, message, key)] = recorder.recorded
    assert (kind, reason) == (events.WARNING, "NoRecentSuccess")
    assert message.startswith("no run has completed since the ScheduledJob was created")
    assert key is not None and key.startswith("freshness-")
