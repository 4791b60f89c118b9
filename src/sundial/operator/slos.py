"""A ScheduledJob's promises (``spec.slo``) judged against its window of runs.

The status mirror reads each ScheduledJob's window (its active runs and newest successful and
failed ones) every pass; the promises are judged from it, so a promise is checked even when
nothing runs: a run that never starts breaks ``startLatenessSeconds`` while it waits, and a
job that never succeeds breaks ``freshnessSeconds``. Each breach carries a message that stays
the same while the same run (or the same last success) breaks it, so the status is written,
and the Warning Event posted, once per episode and not on every pass.

- **freshness**: no run completed for ``freshnessSeconds`` (counted from the ScheduledJob's
  creation until its first success);
- **startLateness**: a run waits, unstarted, more than ``startLatenessSeconds`` past its fire
  time; or the latest run that started, on its first attempt, started later than that. A retry
  starts after a backoff by design, so only first attempts are judged;
- **maxDuration**: an attempt runs longer than ``maxDurationSeconds``; or the latest run that
  ended took longer in its last attempt.

The raw spec is read (the schema bounds each value), so a ScheduledJob stalled by another
field's edit is still judged.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from sundial.api import conditions, scheduled_job
from sundial.api.common import rfc3339
from sundial.store import history

__all__ = ["Breach", "breaches", "promises"]


class Breach(NamedTuple):
    """One promise broken now: an entry of ``status.brokenSlos``."""

    slo: scheduled_job.SloName
    reason: str
    message: str

    def as_status(self) -> dict[str, str]:
        return {"slo": self.slo, "reason": str(self.reason), "message": self.message}


def promises(body: Mapping[str, Any]) -> dict[str, int]:
    """The ScheduledJob's promises, by SLO name (``freshness``: seconds ...); those not set are
    left out."""
    slo = (body.get("spec") or {}).get("slo")
    if not isinstance(slo, Mapping):
        return {}
    found = {}
    for name in scheduled_job.SLO_NAMES:
        seconds = slo.get(f"{name}Seconds")
        if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0:
            found[name] = seconds
    return found


def breaches(
    body: Mapping[str, Any],
    window: history.Window,
    last_successful: datetime.datetime | None,
    now: datetime.datetime,
) -> list[Breach]:
    """The promises the ScheduledJob breaks at ``now``, in the order Degraded picks from."""
    promised = promises(body)
    found = []
    if "freshness" in promised:
        stale = _staleness(body, promised["freshness"], last_successful, now)
        if stale is not None:
            found.append(Breach("freshness", conditions.ConditionReason.NO_RECENT_SUCCESS, stale))
    if "startLateness" in promised:
        late = _late_start(promised["startLateness"], window, now)
        if late is not None:
            found.append(Breach("startLateness", conditions.ConditionReason.LATE_START, late))
    if "maxDuration" in promised:
        long = _too_long(promised["maxDuration"], window, now)
        if long is not None:
            found.append(Breach("maxDuration", conditions.ConditionReason.RUN_TOO_LONG, long))
    return found


def _staleness(
    body: Mapping[str, Any],
    seconds: int,
    last_successful: datetime.datetime | None,
    now: datetime.datetime,
) -> str | None:
    since = last_successful
    if since is None:
        since = _timestamp((body.get("metadata") or {}).get("creationTimestamp"))
        if since is None:
            return None
    if (now - since).total_seconds() <= seconds:
        return None
    if last_successful is None:
        what = f"since the ScheduledJob was created at {rfc3339(since)}"
    else:
        what = f"since {rfc3339(since)}"
    return (
        f"no run has completed {what}, longer than slo.freshnessSeconds={seconds}; the last"
        " runs' states and errors are on its JobRuns (kubectl sundial history)"
    )


def _due(run: history.RunView) -> datetime.datetime | None:
    return run.fire_time or run.run_at


def _late_start(seconds: int, window: history.Window, now: datetime.datetime) -> str | None:
    limit = datetime.timedelta(seconds=seconds)
    for run in sorted(window.active, key=lambda r: r.id):
        due = _due(run)
        if run.started_at is None and due is not None and now - due > limit:
            return (
                f"run {run.id}, fired at {rfc3339(due)}, has not started within"
                f" slo.startLatenessSeconds={seconds} (it is {run.state})"
            )
    started = [
        run
        for run in _runs(window)
        if run.attempt == 1 and run.started_at is not None and _due(run) is not None
    ]
    if not started:
        return None
    latest = max(started, key=lambda r: (_due(r), r.id))
    due, start = _due(latest), latest.started_at
    assert due is not None and start is not None
    if start - due <= limit:
        return None
    return (
        f"run {latest.id}, fired at {rfc3339(due)}, started"
        f" {(start - due).total_seconds():.0f} s later, past"
        f" slo.startLatenessSeconds={seconds}; a run that starts in time clears it"
    )


def _too_long(seconds: int, window: history.Window, now: datetime.datetime) -> str | None:
    limit = datetime.timedelta(seconds=seconds)
    for run in sorted(window.active, key=lambda r: r.id):
        start = run.started_at
        if run.state == "running" and start is not None and now - start > limit:
            return (
                f"run {run.id} started at {rfc3339(start)} and is still running past"
                f" slo.maxDurationSeconds={seconds}"
            )
    ended = [
        run
        for run in (*window.successful, *window.failed)
        if run.started_at is not None and run.finished_at is not None
    ]
    if not ended:
        return None
    latest = max(ended, key=lambda r: (r.finished_at, r.id))
    start, end = latest.started_at, latest.finished_at
    assert start is not None and end is not None
    if end - start <= limit:
        return None
    return (
        f"run {latest.id} ran {(end - start).total_seconds():.0f} s (from {rfc3339(start)}),"
        f" longer than slo.maxDurationSeconds={seconds}; a run that ends in time clears it"
    )


def _runs(window: history.Window) -> Iterable[history.RunView]:
    yield from window.active
    yield from window.successful
    yield from window.failed


def _timestamp(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)
