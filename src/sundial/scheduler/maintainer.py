"""The maintainer: the run store's housekeeping, once per installation, under the leader lease.

As River runs its queue maintainer on its elected leader, Sundial runs one ``Maintainer`` in
``sundial scheduler`` and in the operator, beside the trigger loop, and it acts only while its
process holds the trigger's lease (``trigger.LEASE_NAME``). It never takes or renews that lease
itself: the trigger loop does, and the maintainer asks the database, without renewing, who holds
it now (``store.leases.holder``). So at most one process maintains at a time, by the database
clock, and a standby takes over within one poll of the trigger taking the lease.

Its tasks, each with its own interval (``MaintainerSettings``):

* ``reap``: expired leases back to ``pending``, or ended when retries are spent
  (``store.reaper.reap``);
* ``promote``: ``scheduled`` and ``retry_wait`` runs whose ``run_at`` has come move to
  ``pending``, into the dispatch index (``store.reaper.promote_due``). This is a state change,
  not a comparison: the claim reads only the ``pending`` partial index (ADR 0001). Every
  200 ms: a spread fire or a delayed run waits up to one interval past its ``run_at`` for it,
  which at 1 s put scheduled runs' start lag p99 over a second at 6,000 runs/s
  (``bench/seed_peak.py``); a pass with nothing due is one probe of an index;
* ``archive``: finished runs older than the hot window move to the month partitions
  (``store.maintenance.archive_finished``);
* ``retention``: the partitions of this month and the next ones exist ahead of time, and month
  partitions whose whole month is older than the archive retention are dropped
  (``store.maintenance.ensure_partitions`` / ``drop_partitions_before``);
* ``keys``: idempotency keys and schedule fire keys older than the key retention whose run has
  left the hot table are deleted (``store.maintenance.expire_keys``; ADR 0034);
* ``monitor``: the monitoring table as gauges (``store.monitoring``): the backlog (less the
  runs the hot queue's Redis holds, pending in the record while they run), and
  over the sliding ``monitor_window`` the runs that ended by job and state, failed attempts by
  reason, attempts per completed run and lease expiries. From the leader alone, so two
  schedulers never double a database-wide figure (``observability.maintainer_metrics``);
* ``unclaimable``: why pending runs that no live runner serves are waiting
  (``store.runners.mark_unclaimable``); here too, not only in runners, because with no runner
  alive nobody else would say so;
* ``runners``: the announcements of runners that died without withdrawing, expired longer than
  ``dead_runner_after`` ago, are deleted with their circuit states
  (``store.runners.purge_expired``), so neither table grows with every runner ever killed;
* ``quotas``: the active runs of each namespace with a quota counted again, so runs that
  ended free their room (``store.quotas.count_active``; inserts count themselves up, nothing
  counts down: ADR 0063); a pass with no quota configured is one statement on an empty table;
* ``settings``: a warning in the log while the server's autovacuum settings would let the hot
  table's dead rows pile up (``store.server``; docs/adr/0042);
* ``hot_queue_mode`` (first in every pass): whether the database's hot queue (``sundial
  migrate --hot-queue``) is still what this process was started for (given a Redis or not).
  It is checked at start (the process does not start otherwise) and again every
  ``hot_queue_mode_interval``, because a chart upgrade switches the database while the old
  processes still serve. While they disagree the pass fails with what to change (counted and
  alerted on as any failing pass), and the hot queue's tasks below are skipped while the
  database's hot queue is off;
* ``hot_queue_leases`` and ``hot_queue_reconcile``, given the hot queue's Redis: the leases of
  claimers that went silent are taken back, and runs Redis lost are delivered again
  (``store.hot_queue.reconciler.Keeper``).

Guarantees:

* **Bounded work.** Every transaction handles at most one batch (``*_batch``); a pass of a task
  runs at most ``max_batches_per_pass`` batches and, if it stopped there with work left, the
  task is due again at once, after the other due tasks had their turn. A backlog of millions
  of finished runs is worked off in short transactions, never one long one.
* **Correct with two.** Every task is safe from two processes at once (``SKIP LOCKED``,
  idempotent DDL), so a leader that lost its lease mid-pass does no harm; the lease only
  saves the work.
* **Time is injected.** Intervals and the retention cutoff come from a
  ``scheduling.clock.Clock``; the hot window is measured by the database clock, which wrote
  ``finished_at`` (docs/adr/0019-the-maintainer.md says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sundial.observability import maintainer_metrics as metrics
from sundial.scheduler import trigger
from sundial.scheduling import clock as clocks
from sundial.store import (
    errors,
    leases,
    maintenance,
    monitoring,
    quotas,
    reaper,
    runners,
    server,
)
from sundial.store.hot_queue import outbox, reconciler
from sundial.store.pool import Pool

__all__ = ["Maintainer", "MaintainerSettings", "PassReport"]

log = logging.getLogger("sundial.scheduler.maintainer")

#: Run ids named in one "reaped expired leases" line; the count is always exact.
_LOGGED_IDS = 50


@dataclass(frozen=True)
class MaintainerSettings:
    #: Finished runs stay in ``job_runs`` this long, then move to the month partitions.
    hot_window: timedelta = timedelta(hours=1)
    #: A month partition is dropped once its whole month ended this long ago; ``None`` keeps
    #: every partition (history is then removed by hand, or never).
    archive_retention: timedelta | None = timedelta(days=30)
    #: Idempotency keys and fire keys are deleted this long after they were written (and never
    #: while their run is in ``job_runs``); ``None`` keeps them. A submission repeated with a
    #: deleted key makes a second run, so this must exceed the longest a submission is retried:
    #: a client's retry loop, and a JobRun whose submit committed but whose ``status.runId``
    #: write did not, submitted again when the operator is back (as long as any operator outage
    #: you ride out). A fire key guards against two trigger loops firing one time within a
    #: lease TTL, and against the operator's clock running behind the database's: seconds.
    #: A week covers both with room; docs/adr/0034-key-retention.md says why not forever.
    key_retention: timedelta | None = timedelta(days=7)
    #: Partitions are created this many months ahead, so no insert ever waits on DDL.
    months_ahead: int = 2
    reap_interval: timedelta = timedelta(seconds=1)
    promote_interval: timedelta = timedelta(milliseconds=200)
    archive_interval: timedelta = timedelta(seconds=10)
    retention_interval: timedelta = timedelta(hours=1)
    key_interval: timedelta = timedelta(minutes=1)
    monitor_interval: timedelta = timedelta(seconds=15)
    #: The sliding window of the monitoring gauges (``sundial_window_*``).
    monitor_window: timedelta = timedelta(hours=1)
    unclaimable_interval: timedelta = timedelta(seconds=5)
    runners_interval: timedelta = timedelta(minutes=1)
    settings_interval: timedelta = timedelta(hours=1)
    #: How often the database's hot-queue mode is compared with this process's.
    hot_queue_mode_interval: timedelta = timedelta(seconds=5)
    #: How long a run that ended holds its room under its namespace's active-run quota.
    quota_interval: timedelta = timedelta(seconds=5)
    #: A runner whose announcement expired this long ago is taken for dead and its rows
    #: (``runners``, ``circuits``) are deleted. Long, so a runner that was only paused or cut
    #: off for a while keeps its circuit states; one that comes back announces itself again.
    dead_runner_after: timedelta = timedelta(hours=1)
    reap_batch: int = 1000
    promote_batch: int = 5000
    archive_batch: int = 5000
    key_batch: int = 5000
    runners_batch: int = 1000
    #: Batches one pass of a task may run; a pass that used them all is due again at once.
    max_batches_per_pass: int = 10
    #: The longest sleep between two steps; also how often a standby asks who leads.
    poll_interval: timedelta = timedelta(seconds=1)
    #: The lease whose holder maintains: the trigger loop's, so both run in one process.
    lease_name: str = trigger.LEASE_NAME

    def __post_init__(self) -> None:
        if self.hot_window < timedelta(0):
            raise ValueError(f"hot_window must not be negative, got {self.hot_window}")
        if self.archive_retention is not None and self.archive_retention <= self.hot_window:
            raise ValueError(
                f"archive_retention ({self.archive_retention}) must be longer than hot_window"
                f" ({self.hot_window}): runs would be archived into partitions already dropped"
            )
        if self.dead_runner_after < timedelta(0):
            raise ValueError(
                f"dead_runner_after must not be negative, got {self.dead_runner_after}"
            )
        if self.monitor_window <= timedelta(0):
            raise ValueError(f"monitor_window must be positive, got {self.monitor_window}")
        if self.key_retention is not None and self.key_retention <= timedelta(0):
            raise ValueError(f"key_retention must be positive or None, got {self.key_retention}")
        for name in _INTERVALS:  # 0 would run the task on every step, without a pause
            if getattr(self, name) <= timedelta(0):
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        batches = ("reap_batch", "promote_batch", "archive_batch", "key_batch", "runners_batch")
        for name in (*batches, "max_batches_per_pass"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


_INTERVALS = (
    "reap_interval",
    "promote_interval",
    "archive_interval",
    "retention_interval",
    "key_interval",
    "monitor_interval",
    "unclaimable_interval",
    "runners_interval",
    "settings_interval",
    "hot_queue_mode_interval",
    "quota_interval",
    "poll_interval",
)


@dataclass
class PassReport:
    """What one ``step`` did (all zero when it does not lead)."""

    leading: bool = False
    reaped: int = 0
    requeued: int = 0
    promoted: int = 0
    archived: int = 0
    #: Rows of dead runners deleted (``runners`` task).
    runners_purged: int = 0
    #: Namespace quotas whose active runs were counted (``quotas`` task).
    quotas_counted: int = 0
    partitions_dropped: tuple[str, ...] = ()
    partitions_busy: tuple[str, ...] = ()
    idempotency_keys_expired: int = 0
    fire_keys_expired: int = 0
    #: The tasks that ran, in order; a task whose pass failed is listed in ``failed`` too.
    ran: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


class Maintainer:
    """See the module docstring. ``step`` is public so tests and benchmarks can drive it."""

    def __init__(
        self,
        pool: Pool,
        *,
        holder: str,
        clock: clocks.Clock | None = None,
        settings: MaintainerSettings | None = None,
        hot_queue: Any | None = None,
        component: str = "scheduler",
    ) -> None:
        """``hot_queue``: the hot queue's Redis (a ``redis.asyncio.Redis``), when the
        database's is on: the leader then also takes back the leases of silent claimers and
        reconciles (``store.hot_queue.reconciler.Keeper``). ``component`` names the process
        in what to change when the database's mode is not its own ("scheduler",
        "operator")."""
        self.pool = pool
        self.holder = holder
        self.clock = clock or clocks.SystemClock()
        self.settings = settings or MaintainerSettings()
        self.leading = False
        self._leader_seen: str | None = None
        s = self.settings
        self._tasks: dict[str, tuple[timedelta, Callable[[PassReport], Awaitable[bool]]]] = {
            # First: the monitor and the hot queue's tasks follow the mode it reads.
            "hot_queue_mode": (s.hot_queue_mode_interval, self._hot_queue_mode),
            "reap": (s.reap_interval, self._reap),
            "promote": (s.promote_interval, self._promote),
            "archive": (s.archive_interval, self._archive),
            "retention": (s.retention_interval, self._retention),
            "keys": (s.key_interval, self._keys),
            "monitor": (s.monitor_interval, self._monitor),
            "unclaimable": (s.unclaimable_interval, self._unclaimable),
            "runners": (s.runners_interval, self._purge_runners),
            "quotas": (s.quota_interval, self._count_quotas),
            "settings": (s.settings_interval, self._check_settings),
        }
        self._component = component
        #: The database's hot-queue mode as last read (None: not read yet).
        self._hot_on: bool | None = None
        self._keeper: reconciler.Keeper | None = None
        self._hot_queue = hot_queue
        if hot_queue is not None:
            self._keeper = reconciler.Keeper(pool, hot_queue)
            self._tasks["hot_queue_leases"] = (s.reap_interval, self._hot_queue_leases)
            # As often as asked: the keeper spaces its passes itself.
            self._tasks["hot_queue_reconcile"] = (s.reap_interval, self._hot_queue_reconcile)
        # Every label set of sundial_pending_runs this maintainer has set.
        self._pending_labels: set[tuple[str, str, str]] = set()
        # Task -> when it is due next; unset: due now (every task runs on taking the lead).
        self._due: dict[str, datetime] = {}

    async def step(self) -> PassReport:
        """Ask who leads; as leader, run every task that is due now. Never raises for a failed
        task (it is logged, counted and due again after its interval)."""
        report = PassReport()
        current = await leases.holder(self.pool, self.settings.lease_name)
        self._follow(current)
        if not self.leading:
            return report
        report.leading = True
        now = self.clock.now()
        ran: list[str] = []
        failed: list[str] = []
        for name, (interval, task) in self._tasks.items():
            due = self._due.get(name)
            if due is not None and due > now:
                continue
            ran.append(name)
            started = time.perf_counter()
            try:
                more = await task(report)
            except errors.HotQueueModeError as error:  # a setting to change, not a fault
                metrics.ERRORS.labels(name).inc()
                log.error(
                    "maintenance task failed; retried after its interval",
                    extra={"task": name, "error": str(error)},
                )
                failed.append(name)
                more = False
            except errors.StoreUnavailableError as error:  # an outage: expected, not a bug
                metrics.ERRORS.labels(name).inc()
                log.warning(
                    "maintenance task failed; retried after its interval",
                    extra={"task": name, "error": str(error)},
                )
                failed.append(name)
                more = False
            except Exception:
                metrics.ERRORS.labels(name).inc()
                log.exception(
                    "maintenance task failed; retried after its interval", extra={"task": name}
                )
                failed.append(name)
                more = False
            metrics.PASS_SECONDS.labels(name).observe(time.perf_counter() - started)
            self._due[name] = now if more else now + interval
        report.ran, report.failed = tuple(ran), tuple(failed)
        self._log(report)
        return report

    def next_due(self) -> datetime:
        """When the next task is due (now if any has not run yet)."""
        now = self.clock.now()
        if not self.leading or len(self._due) < len(self._tasks):
            return now + self.settings.poll_interval
        return min(min(self._due.values()), now + self.settings.poll_interval)

    async def run(self, stop: asyncio.Event) -> None:
        """Step until ``stop``; a failed step (database away) is retried with backoff."""
        failures = 0
        try:
            while not stop.is_set():
                try:
                    await self.step()
                    failures = 0
                    delay = (self.next_due() - self.clock.now()).total_seconds()
                    delay = min(delay, self.settings.poll_interval.total_seconds())
                except Exception:
                    failures += 1
                    delay = min(30.0, 0.5 * 2 ** min(failures, 6))
                    log.exception("maintainer step failed; retrying", extra={"delay": delay})
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.01, delay)):  # wait_for can lose a cancel
                        await stop.wait()
        finally:
            metrics.LEADING.set(0)
            self._clear_database_gauges()

    # -- leadership -----------------------------------------------------------------------

    def _follow(self, current: leases.LeaderLease | None) -> None:
        leader = None if current is None else current.holder
        leads = leader == self.holder
        if leads and not self.leading:
            assert current is not None
            log.info(
                "maintainer leading",
                extra={"holder": self.holder, "lease": current.name, "epoch": current.epoch},
            )
            self._due.clear()  # a new leader runs every task at once
        elif self.leading and not leads:
            log.warning(
                "maintainer standing by: the lease moved",
                extra={"holder": self.holder, "leader": leader},
            )
            self._clear_database_gauges()  # the new leader speaks for the database now
        elif not leads and leader is not None and leader != self._leader_seen:
            log.info("maintainer standing by", extra={"holder": self.holder, "leader": leader})
        self._leader_seen = leader
        self.leading = leads
        metrics.LEADING.set(1 if leads else 0)

    # -- tasks: each returns True when it stopped with work left --------------------------

    async def _check_settings(self, report: PassReport) -> bool:
        for problem in await server.problems(self.pool):
            log.warning("PostgreSQL settings need a change", extra={"problem": problem})
        return False

    async def _hot_queue_mode(self, report: PassReport) -> bool:
        self._hot_on = await outbox.is_on(self.pool)
        problem = outbox.disagreement(
            self._hot_on, self._keeper is not None, component=self._component
        )
        if problem is not None:
            raise errors.HotQueueModeError(f"the database's mode changed under it: {problem}")
        return False

    async def _hot_queue_leases(self, report: PassReport) -> bool:
        assert self._keeper is not None
        if not self._hot_on:  # switched off since this process started
            return False
        expired = await self._keeper.expire(limit=self.settings.reap_batch)
        if expired:
            log.info(
                "hot queue: leases of silent claimers taken back",
                extra={"count": expired, "holder": self.holder},
            )
        return False

    async def _hot_queue_reconcile(self, report: PassReport) -> bool:
        assert self._keeper is not None
        if not self._hot_on:
            return False
        again = await self._keeper.reconcile()
        if again:
            log.warning(
                "hot queue: runs Redis held nowhere delivered again",
                extra={"count": again, "holder": self.holder},
            )
        return False

    async def _reap(self, report: PassReport) -> bool:
        s = self.settings
        for _ in range(s.max_batches_per_pass):
            result = await reaper.reap(self.pool, limit=s.reap_batch)
            report.reaped += result.lease_expiries
            report.requeued += len(result.requeued)
            metrics.REAPED.labels("requeued").inc(len(result.requeued))
            for state in result.ended.values():
                metrics.REAPED.labels(state).inc()
            if result.lease_expiries:
                log.info(
                    "reaped expired leases",
                    extra={
                        "requeued": sorted(result.requeued)[:_LOGGED_IDS],
                        "ended": dict(sorted(result.ended.items())[:_LOGGED_IDS]),
                        "count": result.lease_expiries,
                        "holder": self.holder,
                    },
                )
            if result.lease_expiries < s.reap_batch:
                return False
        return True

    async def _promote(self, report: PassReport) -> bool:
        s = self.settings
        for _ in range(s.max_batches_per_pass):
            promoted = await reaper.promote_due(self.pool, limit=s.promote_batch)
            report.promoted += promoted
            metrics.PROMOTED.inc(promoted)
            if promoted < s.promote_batch:
                return False
        return True

    async def _archive(self, report: PassReport) -> bool:
        s = self.settings
        window = s.hot_window.total_seconds()
        for _ in range(s.max_batches_per_pass):
            moved = await maintenance.archive_finished(
                self.pool, older_than_seconds=window, batch_size=s.archive_batch
            )
            report.archived += moved
            metrics.ARCHIVED.inc(moved)
            if moved < s.archive_batch:
                return False
        return True

    async def _retention(self, report: PassReport) -> bool:
        s = self.settings
        now = self.clock.now()
        await maintenance.ensure_partitions(self.pool, months_ahead=s.months_ahead, now=now)
        if s.archive_retention is None:
            return False
        dropped = await maintenance.drop_partitions_before(
            self.pool, now - s.archive_retention, limit=s.max_batches_per_pass
        )
        report.partitions_dropped += dropped.dropped
        report.partitions_busy += dropped.busy
        metrics.PARTITIONS_DROPPED.inc(len(dropped.dropped))
        metrics.PARTITIONS_BUSY.inc(len(dropped.busy))
        if dropped.busy:
            log.warning(
                "history partitions not dropped yet: their table was busy",
                extra={"partitions": list(dropped.busy)},
            )
        # A full batch may have left more; a busy table is tried again after the interval.
        return not dropped.busy and len(dropped.dropped) >= s.max_batches_per_pass

    async def _keys(self, report: PassReport) -> bool:
        s = self.settings
        if s.key_retention is None:
            return False
        for _ in range(s.max_batches_per_pass):
            expired = await maintenance.expire_keys(
                self.pool,
                older_than_seconds=s.key_retention.total_seconds(),
                batch_size=s.key_batch,
            )
            report.idempotency_keys_expired += expired.idempotency_keys
            report.fire_keys_expired += expired.schedule_fires
            metrics.KEYS_EXPIRED.labels("idempotency_key").inc(expired.idempotency_keys)
            metrics.KEYS_EXPIRED.labels("schedule_fire").inc(expired.schedule_fires)
            if max(expired.idempotency_keys, expired.schedule_fires) < s.key_batch:
                return False
        return True

    async def _monitor(self, report: PassReport) -> bool:
        hot = self._hot_queue if self._hot_on else None  # held runs are not waiting
        depth = await monitoring.pending_depth(self.pool, hot=hot)
        seen = set()
        for row in depth:
            labels = (row.queue, str(row.priority), str(row.state))
            metrics.PENDING_RUNS.labels(*labels).set(row.runs)
            seen.add(labels)
        # A backlog that emptied reads 0 (never a gap a scrape could see); queues, priorities
        # and states are bounded sets, so the series are too.
        for labels in self._pending_labels - seen:
            metrics.PENDING_RUNS.labels(*labels).set(0)
        self._pending_labels |= seen
        window = self.settings.monitor_window.total_seconds()
        finished = await monitoring.finished_runs_by_job_name(self.pool, window_seconds=window)
        reasons = await monitoring.failed_attempts_by_reason(self.pool, window_seconds=window)
        attempts = await monitoring.attempts_per_completed_run(self.pool, window_seconds=window)
        expiries = await monitoring.lease_expiries(self.pool, window_seconds=window)
        metrics.WINDOW.set(window)
        metrics.FINISHED_RUNS.set(
            metrics.capped(finished, key=1, limit=metrics.MAX_JOB_SERIES, other=("", metrics.OTHER))
        )
        metrics.FAILED_ATTEMPTS.set(
            metrics.capped(
                {(reason,): count for reason, count in reasons.items()},
                key=0,
                limit=metrics.MAX_REASON_SERIES,
                other=(metrics.OTHER,),
            )
        )
        by_attempts: dict[tuple[str, ...], float] = {}
        for attempt, count in attempts.items():
            label = (str(attempt) if attempt < 10 else "10+",)
            by_attempts[label] = by_attempts.get(label, 0) + count
        metrics.RUNS_BY_ATTEMPTS.set(by_attempts)
        metrics.LEASE_EXPIRIES.set({(): expiries})
        return False

    def _clear_database_gauges(self) -> None:
        """Drop the database-wide series: a process that no longer leads must not go on
        exporting its last figures beside the new leader's (a sum would double them)."""
        for labels in self._pending_labels:
            with contextlib.suppress(KeyError):
                metrics.PENDING_RUNS.remove(*labels)
        self._pending_labels.clear()
        for gauge in (
            metrics.FINISHED_RUNS,
            metrics.FAILED_ATTEMPTS,
            metrics.RUNS_BY_ATTEMPTS,
            metrics.LEASE_EXPIRIES,
        ):
            gauge.clear()

    async def _unclaimable(self, report: PassReport) -> bool:
        for run in await runners.mark_unclaimable(self.pool):
            if run.reason is not None:
                log.warning(
                    "run unclaimable",
                    extra={"run_id": run.run_id, "handler": run.handler, "reason": run.reason},
                )
        return False

    async def _count_quotas(self, report: PassReport) -> bool:
        report.quotas_counted = await quotas.count_active(self.pool)
        return False

    async def _purge_runners(self, report: PassReport) -> bool:
        s = self.settings
        older_than = s.dead_runner_after.total_seconds()
        purged = 0
        more = True
        for _ in range(s.max_batches_per_pass):
            deleted = await runners.purge_expired(
                self.pool, older_than_seconds=older_than, limit=s.runners_batch
            )
            purged += deleted
            if deleted < s.runners_batch:
                more = False
                break
        report.runners_purged += purged
        if purged:
            log.info(
                "purged dead runners",
                extra={"count": purged, "expired_over_seconds": older_than, "holder": self.holder},
            )
        return more

    def _log(self, report: PassReport) -> None:
        expired = report.idempotency_keys_expired + report.fire_keys_expired
        if report.archived or report.partitions_dropped or expired:
            log.info(
                "maintainer pass",
                extra={
                    "archived": report.archived,
                    "partitions_dropped": list(report.partitions_dropped),
                    "idempotency_keys_expired": report.idempotency_keys_expired,
                    "fire_keys_expired": report.fire_keys_expired,
                    "reaped": report.reaped,
                    "promoted": report.promoted,
                    "tasks": list(report.ran),
                },
            )
