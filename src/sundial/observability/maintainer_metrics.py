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
- ``sundial_pending_runs{queue,priority,state}``: the backlog of the seed's monitoring table
  (``store.monitoring.pending_depth``), read by the leader only, so it is counted once.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "ARCHIVED",
    "ERRORS",
    "KEYS_EXPIRED",
    "KEY_KINDS",
    "LEADING",
    "PARTITIONS_BUSY",
    "PARTITIONS_DROPPED",
    "PASS_SECONDS",
    "PENDING_RUNS",
    "PROMOTED",
    "REAPED",
    "REAP_OUTCOMES",
    "TASKS",
]

TASKS = ("reap", "promote", "archive", "retention", "keys", "monitor", "unclaimable")
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
