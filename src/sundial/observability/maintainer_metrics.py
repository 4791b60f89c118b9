"""Prometheus metrics of the maintainer: what it did, and whether it leads (docs/design.md).

Kept apart from the runner's and the trigger's metrics so each component owns its module.
Names have the ``sundial_`` prefix and base units; labels come from fixed sets (``task`` is one
of ``TASKS``; ``outcome`` of a reaped lease is ``requeued``, ``dead_lettered`` or
``cancelled``).

- ``sundial_maintainer_runs_archived_total``: finished runs moved to the month partitions.
- ``sundial_maintainer_leases_reaped_total{outcome}``: expired leases handled.
- ``sundial_maintainer_runs_promoted_total``: scheduled / retry_wait runs made pending.
- ``sundial_maintainer_partitions_dropped_total`` and ``..._partitions_busy_total``: retention
  drops, and drops put off because the history table's lock was not granted in time.
- ``sundial_maintainer_keys_expired_total{kind}``: idempotency keys (``idempotency_key``) and
  schedule fire keys (``schedule_fire``) deleted after the key retention.
- ``sundial_maintainer_pass_seconds{task}`` and ``sundial_maintainer_errors_total{task}``.
- ``sundial_maintainer_leading``: 1 while this process's maintainer acts, else 0.
- ``sundial_pending_runs{queue,priority,state}``: the backlog of the monitoring table
  (``store.monitoring.pending_depth``), read by the leader only, so it is counted once. On the
  hot queue the runs a claimer holds in Redis (pending in the record while they run) are left
  out, so an autoscaler reading it sees what waits, not what runs.

The rest of that table, read by the leader's ``monitor`` pass over a sliding window of the
database (``MaintainerSettings.monitor_window``, exported as ``sundial_window_seconds``), so
they are counted once for the whole installation whichever process leads, and a new leader
shows the same figures at once (no counter state to hand over):

- ``sundial_window_finished_runs{namespace,name,state}``: runs that ended in the window, by
  their job and the state they ended in (error rate, dead letters per job).
- ``sundial_window_failed_attempts{reason}``: attempts that failed in the window, by reason.
- ``sundial_window_completed_runs_by_attempts{attempts}``: completed runs by the attempt that
  completed them (``1`` .. ``9``, then ``10+``): how flaky dependencies are.
- ``sundial_window_lease_expiries``: attempts whose lease ran out in the window (crashed or
  paused workers). The reaper's requeues are ``sundial_maintainer_leases_reaped_total``.

Their label sets are bounded: each pass keeps at most ``MAX_JOB_SERIES`` jobs (the ones with
the most runs; the rest are summed under ``namespace="", name="(other)"``) and at most
``MAX_REASON_SERIES`` reasons, and a series whose job or reason left the window is dropped
(``WindowGauge`` exports the last pass's snapshot, never an old series at 0).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

__all__ = [
    "ARCHIVED",
    "ERRORS",
    "FAILED_ATTEMPTS",
    "FINISHED_RUNS",
    "KEYS_EXPIRED",
    "KEY_KINDS",
    "LEADING",
    "LEASE_EXPIRIES",
    "MAX_JOB_SERIES",
    "MAX_REASON_SERIES",
    "OTHER",
    "PARTITIONS_BUSY",
    "PARTITIONS_DROPPED",
    "PASS_SECONDS",
    "PENDING_RUNS",
    "PROMOTED",
    "REAPED",
    "REAP_OUTCOMES",
    "RUNS_BY_ATTEMPTS",
    "TASKS",
    "WINDOW",
    "WindowGauge",
    "capped",
]

#: Jobs with a series of their own in ``sundial_window_finished_runs``; states are 5 at most,
#: so the metric has at most 5 * (MAX_JOB_SERIES + 1) series.
MAX_JOB_SERIES = 200
MAX_REASON_SERIES = 20
#: The label value the rest is summed under.
OTHER = "(other)"

_Labels = TypeVar("_Labels", bound=tuple[str, ...])

TASKS = (
    "reap",
    "promote",
    "archive",
    "retention",
    "keys",
    "runners",
    "monitor",
    "unclaimable",
    "hot_queue_mode",
)
KEY_KINDS = ("idempotency_key", "schedule_fire")
REAP_OUTCOMES = ("requeued", "dead_lettered", "cancelled")

ARCHIVED = Counter(
    "sundial_maintainer_runs_archived", "Finished runs moved from job_runs to finished_runs."
)
REAPED = Counter(
    "sundial_maintainer_leases_reaped", "Expired leases the maintainer handled.", ["outcome"]
)
for _outcome in REAP_OUTCOMES:
    REAPED.labels(_outcome)
PROMOTED = Counter(
    "sundial_maintainer_runs_promoted", "Scheduled and retry_wait runs made pending once due."
)
PARTITIONS_DROPPED = Counter(
    "sundial_maintainer_partitions_dropped", "History month partitions dropped by retention."
)
PARTITIONS_BUSY = Counter(
    "sundial_maintainer_partitions_busy",
    "Retention drops put off to a later pass because the table lock was not granted in time.",
)
KEYS_EXPIRED = Counter(
    "sundial_maintainer_keys_expired",
    "Idempotency keys and schedule fire keys deleted after the key retention.",
    ["kind"],
)
for _kind in KEY_KINDS:
    KEYS_EXPIRED.labels(_kind)
PASS_SECONDS = Histogram(
    "sundial_maintainer_pass_seconds",
    "Duration of one maintainer pass of a task (all of its batches).",
    ["task"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
)
ERRORS = Counter("sundial_maintainer_errors", "Maintainer passes that failed.", ["task"])
for _task in TASKS:
    ERRORS.labels(_task)
LEADING = Gauge("sundial_maintainer_leading", "1 while this process's maintainer acts, else 0.")
PENDING_RUNS = Gauge(
    "sundial_pending_runs",
    "Runs waiting to start, by queue, priority and state (pending, scheduled, retry_wait, "
    "blocked), as of the maintainer's last monitoring pass.",
    ["queue", "priority", "state"],
)


class WindowGauge:
    """A gauge family whose series are exactly the last snapshot ``set`` gave it.

    ``prometheus_client.Gauge`` keeps every label set it was ever given; a windowed figure
    whose job left the window must leave the exposition instead (a removed job would
    otherwise be exported at 0 for the life of the process: unbounded series)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        *,
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self.name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._values: dict[tuple[str, ...], float] = {}
        if registry is not None:
            registry.register(self)

    def set(self, values: Mapping[tuple[str, ...], float]) -> None:
        """Replace every series (one per label tuple, in the order of ``labelnames``)."""
        for labels in values:
            if len(labels) != len(self._labelnames):
                raise ValueError(f"{self.name} takes labels {self._labelnames}, got {labels}")
        self._values = dict(values)

    def clear(self) -> None:
        """No series: a process that stopped leading no longer speaks for the database."""
        self._values = {}

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(self.name, self._documentation, labels=self._labelnames)
        for labels, value in sorted(self._values.items()):
            family.add_metric(list(labels), value)
        yield family

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(self.name, self._documentation, labels=self._labelnames)


def capped(
    counts: Mapping[_Labels, int], *, key: int, limit: int, other: tuple[str, ...]
) -> dict[tuple[str, ...], float]:
    """``counts`` with at most ``limit`` distinct values of label ``key`` (those with the most
    in total, ties by name); every other label tuple is summed under ``other`` in place of its
    ``key`` part and the labels before it (``other`` has one value per label up to ``key``)."""
    totals: dict[tuple[str, ...], int] = {}
    for labels, count in counts.items():
        group = labels[: key + 1]
        totals[group] = totals.get(group, 0) + count
    kept = {
        group for group, _ in sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:limit]
    }
    result: dict[tuple[str, ...], float] = {}
    for labels, count in counts.items():
        named: tuple[str, ...] = labels
        if named[: key + 1] not in kept:
            named = other + named[key + 1 :]
        result[named] = result.get(named, 0) + count
    return result


WINDOW = Gauge(
    "sundial_window_seconds",
    "The sliding window of the sundial_window_* gauges, as set on the leading maintainer.",
)
FINISHED_RUNS = WindowGauge(
    "sundial_window_finished_runs",
    "Runs that ended within the window (sundial_window_seconds), by job and final state.",
    ["namespace", "name", "state"],
)
FAILED_ATTEMPTS = WindowGauge(
    "sundial_window_failed_attempts",
    "Attempts that failed within the window, by failure reason.",
    ["reason"],
)
RUNS_BY_ATTEMPTS = WindowGauge(
    "sundial_window_completed_runs_by_attempts",
    "Runs that completed within the window, by the attempt that completed them (10+ above 9).",
    ["attempts"],
)
LEASE_EXPIRIES = WindowGauge(
    "sundial_window_lease_expiries",
    "Attempts whose lease ran out within the window: crashed or paused workers.",
    [],
)
