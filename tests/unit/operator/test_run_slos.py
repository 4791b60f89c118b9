"""``spec.slo.startLatenessSeconds`` and ``spec.slo.maxDurationSeconds``: judged by the operator
from the ScheduledJob's window with the mirror's clock, so a run that never starts or never
ends breaks them while it waits or runs, and the latest run that broke one keeps the job
Degraded until a run keeps the promise again. Each breach is listed in ``status.brokenSlos``,
warned of once, and moves the labelled gauge an alert reads."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest

from sundial.api import scheduled_job
from sundial.operator import cache, events, scheduled_job_metrics, slos, status
from sundial.store import history

FIRE = datetime.datetime(2026, 12, 1, 8, 0, tzinfo=datetime.UTC)


def at(seconds: float) -> datetime.datetime:
    return FIRE + datetime.timedelta(seconds=seconds)


def run(
    run_id: int,
    state: str,
    *,
    fired: float = 0,
    started: float | None = None,
    finished: float | None = None,
    attempt: int = 1,
) -> history.RunView:
    return history.RunView(
        run_id,
        state,
        attempt if started is not None else 0,
        None,
        None,
        at(fired),
        None if started is None else at(started),
        None if finished is None else at(finished),
        run_at=at(fired),
    )


def job(**slo: int) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {
            "name": "report",
            "namespace": "team-a",
            "uid": str(uuid.uuid4()),
            "generation": 1,
            "creationTimestamp": "2026-12-01T07:00:00Z",
        },
        "spec": {"schedule": "*/10 * * * *", "handler": {"name": "reports.build"}, "slo": slo},
    }


def window(
    active: list[history.RunView] | None = None,
    successful: list[history.RunView] | None = None,
    failed: list[history.RunView] | None = None,
) -> history.Window:
    return history.Window(active or [], successful or [], failed or [])


def broken(body: dict[str, Any], found: history.Window, now: float) -> dict[str, str]:
    return {breach.slo: breach.message for breach in slos.breaches(body, found, None, at(now))}


# -- start lateness -------------------------------------------------------------------------


def test_a_run_that_waits_past_its_lateness_breaks_it_while_it_waits() -> None:
    body = job(startLatenessSeconds=60)
    waiting = window(active=[run(7, "pending")])
    assert broken(body, waiting, 60) == {}
    message = broken(body, waiting, 61)["startLateness"]
    assert "run 7, fired at 2026-12-01T08:00:00Z, has not started within" in message
    assert "slo.startLatenessSeconds=60 (it is pending)" in message
    # The message does not move while the same run waits: one status write, one Event.
    assert broken(body, waiting, 3600)["startLateness"] == message


def test_a_run_that_started_late_keeps_it_broken_until_one_starts_in_time() -> None:
    body = job(startLatenessSeconds=60)
    late = run(7, "completed", started=300, finished=310)
    message = broken(body, window(successful=[late]), 400)["startLateness"]
    assert "run 7, fired at 2026-12-01T08:00:00Z, started 300 s later" in message
    # The next fire starts in time: kept again, whatever came before it.
    on_time = run(8, "running", fired=600, started=605)
    assert broken(body, window(active=[on_time], successful=[late]), 700) == {}
    # A run still waiting within its lateness does not clear an earlier late start.
    assert (
        "run 7"
        in broken(body, window(active=[run(8, "pending", fired=600)], successful=[late]), 630)[
            "startLateness"
        ]
    )


def test_a_retry_that_starts_after_its_backoff_is_not_late() -> None:
    """Only a first attempt's start is judged: a retry waits for its backoff by design."""
    body = job(startLatenessSeconds=60)
    retried = run(7, "completed", started=900, finished=910, attempt=2)
    assert broken(body, window(successful=[retried]), 1000) == {}


# -- duration ------------------------------------------------------------------------------


def test_a_run_that_runs_past_its_duration_breaks_it_while_it_runs() -> None:
    body = job(maxDurationSeconds=120)
    running = window(active=[run(7, "running", started=5)])
    assert broken(body, running, 125) == {}
    message = broken(body, running, 126)["maxDuration"]
    assert message == (
        "run 7 started at 2026-12-01T08:00:05Z and is still running past slo.maxDurationSeconds=120"
    )
    assert broken(body, running, 7200)["maxDuration"] == message


def test_the_latest_run_to_end_decides_once_none_runs_too_long() -> None:
    body = job(maxDurationSeconds=120)
    slow = run(7, "failed", started=0, finished=500)
    message = broken(body, window(failed=[slow]), 600)["maxDuration"]
    assert "run 7 ran 500 s (from 2026-12-01T08:00:00Z), longer than" in message
    quick = run(8, "completed", fired=600, started=600, finished=630)
    assert broken(body, window(successful=[quick], failed=[slow]), 700) == {}


def test_a_run_still_pending_is_not_judged_for_duration() -> None:
    body = job(maxDurationSeconds=120)
    assert broken(body, window(active=[run(7, "pending")]), 7200) == {}


# -- together ------------------------------------------------------------------------------


def status_of(
    body: dict[str, Any], found: history.Window, now: float, **schedule: Any
) -> dict[str, Any]:
    view = history.ScheduleView(
        id=uuid.uuid4(),
        generation=1,
        next_fire_time=at(600),
        spread_offset_ms=0,
        suspended=schedule.get("suspended", False),
        quarantined=False,
        quarantine_message=None,
        consecutive_failures=0,
        quarantine_after=None,
        stalled_reason=None,
        last_error=None,
        active=True,
        last_fire_time=at(0),
    )
    return status.scheduled_job_status(
        body, spec_error=None, schedule=view, window=found, missed=None, now=at(now)
    )


def degraded(result: dict[str, Any]) -> tuple[str, str]:
    [condition] = [c for c in result["conditions"] if c["type"] == "Degraded"]
    return condition["status"], condition["reason"]


def test_every_broken_promise_is_listed_and_degraded_names_the_first() -> None:
    body = job(startLatenessSeconds=60, maxDurationSeconds=120)
    found = window(active=[run(7, "running", started=300)])
    result = status_of(body, found, 500)
    assert [entry["slo"] for entry in result["brokenSlos"]] == ["startLateness", "maxDuration"]
    assert degraded(result) == ("True", "LateStart")
    scheduled_job.ScheduledJobStatus.model_validate(result)  # the CRD's schema holds it


def test_nothing_is_judged_while_suspended() -> None:
    body = job(maxDurationSeconds=120)
    result = status_of(body, window(active=[run(7, "running", started=0)]), 500, suspended=True)
    assert result["brokenSlos"] is None
    assert degraded(result) == ("False", "AsExpected")


class Recorder:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str | None]] = []

    def record(
        self, involved: Any, event_type: str, reason: str, message: str, *, key: str | None = None
    ) -> None:
        self.recorded.append((reason, message, key))


def test_a_warning_for_each_new_breach_and_none_while_it_stays() -> None:
    body = job(startLatenessSeconds=60, maxDurationSeconds=120)
    kept = status_of(body, window(active=[run(7, "pending")]), 30)
    late = status_of(body, window(active=[run(7, "pending")]), 90)
    started = status_of(body, window(active=[run(7, "running", started=100)]), 150)
    both = status_of(body, window(active=[run(7, "running", started=100)]), 300)
    recorder = Recorder()
    for before, after in [
        (kept, late),
        (late, late),
        (late, started),
        (started, both),
        (both, both),
    ]:
        events.record_broken_slos(recorder, body, after, before)  # type: ignore[arg-type]
    reasons = [reason for reason, _, _ in recorder.recorded]
    assert reasons == ["LateStart", "LateStart", "RunTooLong"]
    assert "has not started" in recorder.recorded[0][1]
    assert "started 100 s later" in recorder.recorded[1][1]
    keys = [key for _, _, key in recorder.recorded]
    assert len(set(keys)) == 3


@pytest.mark.parametrize("slo", [{}, {"freshnessSeconds": None}])
def test_an_slo_that_promises_nothing_is_refused_with_what_to_set(slo: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="slo promises nothing: set freshnessSeconds"):
        scheduled_job.Slo.model_validate(slo)


def test_the_labelled_gauges_follow_the_status() -> None:
    body = job(startLatenessSeconds=60, maxDurationSeconds=120)
    body["status"] = status_of(body, window(active=[run(7, "pending")]), 90)
    objects = cache.ObjectCache()
    objects.observe("ADDED", body)
    collector = scheduled_job_metrics.ScheduledJobCollector()
    collector.objects = objects
    samples = {
        (metric.name, sample.labels.get("slo")): sample.value
        for metric in collector.collect()
        for sample in metric.samples
        if "slo" in sample.labels
    }
    assert samples == {
        ("sundial_scheduledjob_slo_seconds", "startLateness"): 60.0,
        ("sundial_scheduledjob_slo_seconds", "maxDuration"): 120.0,
        ("sundial_scheduledjob_slo_broken", "startLateness"): 1.0,
        ("sundial_scheduledjob_slo_broken", "maxDuration"): 0.0,
    }
