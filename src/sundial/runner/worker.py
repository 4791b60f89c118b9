"""The claim loop of ``sundial runner``: claim due runs, execute them, write what happened.

One asyncio loop per process does everything: claims, heartbeats (``heartbeats``), batched
fenced finishes (``finisher``), LISTEN/NOTIFY (``wakeup``), maintenance, the health server,
and async handlers; thread, process and subprocess handlers run in their executors.

Guarantees:

* **Claims fit free slots.** Each claim asks for at most ``size - busy`` runs of one execution
  model, and never takes the runs claimed and not yet committed past ``max_unfinished``
  (``in_flight.unfinished_bound``), only for the queues served and the handlers registered
  (and not quarantined) here; a run for a handler this runner lacks is never claimed by it.
* **No result without a lease.** An attempt's outcome is written with ``(id, attempt)`` as the
  fence; a result the store rejects, or one whose lease a heartbeat found lost, is discarded
  and logged as ``lease lost`` — never counted as success.
* **Not the job's fault, not the job's retry.** An open circuit breaker (``breaker``) and a
  process pool restarted under a run release it (``releases.release``) instead of failing it:
  the attempt number grows, ``retries_used`` does not.
* **Crash quarantine, per runner.** After ``quarantine_after_crashes`` attempts of one handler
  killed their worker process in this runner, the runner stops claiming that handler until it
  restarts (``crash_quarantine``); the crashed attempts are finished as crashes, so the runs
  themselves are never lost and another runner may take them.
* **Nothing lost on a database outage.** Every loop catches connection errors, marks the runner
  not ready (``/readyz`` 503) and retries with backoff; leases are time-based.

How each outcome becomes a finish or a release (failure class, detail, retry and its budget)
is ``settlement``'s; the per-dependency retry budgets are ``retry_budgets``'.

Maintenance is opt-in: with ``maintenance_seconds > 0`` (``sundial runner --maintenance``) the
runner also reaps expired leases and promotes due runs every ``maintenance_seconds`` (both SKIP
LOCKED, safe from any number of runners), for installations with neither ``sundial scheduler``
nor the operator, whose maintainer does this under the leader lease and also archives
(docs/adr/0019-the-maintainer.md). Off by default, so N runners do not run N reapers.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import datetime
import functools
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from sundial.attempt import heartbeats
from sundial.observability import metrics
from sundial.runner import (
    breaker,
    circuits,
    claim_gathering,
    collector,
    crash_quarantine,
    finisher,
    health,
    hot_queue,
    in_flight,
    invocation,
    loop_lag,
    outcomes,
    registry,
    retry_budgets,
    settlement,
    shutdown,
    wakeup,
)
from sundial.runner.executors import (
    async_executor,
    base,
    process_executor,
    router,
    subprocess_executor,
    thread_executor,
)
from sundial.scheduling import waiting
from sundial.store import (
    claims,
    dispatch,
    errors,
    reaper,
    reconnect,
    releases,
    runners,
    schema_version,
    server,
)
from sundial.store import pool as store_pool

log = logging.getLogger("sundial.runner")

#: How often a runner on the hot queue looks for runs when nothing woke it: the runs a NOTIFY
#: announces reach Redis a moment later, by a relay (``runner.hot_queue``).
HOT_QUEUE_POLL_SECONDS = 0.1

Model = registry.ExecutionModel

DEFAULT_CONCURRENCY: Mapping[Model, int] = {
    Model.ASYNC: 500,
    Model.THREAD: 16,
    Model.PROCESS: max(os.cpu_count() or 1, 1),
    Model.SUBPROCESS: 8,
}

#: Where a runner serves /metrics, /healthz and /readyz unless told otherwise: not the
#: operator's 8080, so a runner beside it on one host (or one network namespace) starts.
DEFAULT_METRICS_PORT = 8081


@dataclasses.dataclass(frozen=True)
class Settings:
    dsn: str
    worker_id: str
    handler_modules: tuple[str, ...] = ()
    queues: tuple[str, ...] = ("default",)
    #: The namespaces whose runs it claims; None: every namespace.
    namespaces: tuple[str, ...] | None = None
    #: A namespace's share of the slots against the others' (not named: 1; ADR 0049).
    namespace_weights: Mapping[str, float] = dataclasses.field(default_factory=dict)
    concurrency: Mapping[Model, int] = dataclasses.field(
        default_factory=lambda: dict(DEFAULT_CONCURRENCY)
    )
    lease_seconds: float = claims.DEFAULT_LEASE_SECONDS
    poll_seconds: float = 1.0
    grace_seconds: float = 30.0
    quarantine_after_crashes: int = 3
    # Quick retries per dependency per window; more are deferred (retry_budgets.RetryBudget).
    retry_budget: int = 100
    retry_budget_window_seconds: float = 60.0
    #: 0: no runner-side maintenance (the maintainer's job); > 0: reap and promote this often.
    maintenance_seconds: float = 0.0
    max_claim_batch: int = 500
    #: Slots per execution model kept for namespaces behind the one this runner runs most of,
    #: where it serves more than one (``_reserved_slots``; ADR 0049).
    reserved_slots: int = 1
    finish_linger_seconds: float = 0.002
    finish_max_batch: int = 1000
    #: Claimed runs whose finish is not committed, at most (``in_flight.unfinished_bound``;
    #: None: twice the slots).
    max_unfinished: int | None = None
    metrics_host: str = "0.0.0.0"
    #: None: serve no /metrics, /healthz or /readyz.
    metrics_port: int | None = DEFAULT_METRICS_PORT
    #: When ``metrics_port`` is taken, serve on any free port instead of stopping (the CLI sets
    #: it for its default port only: a second runner on a host then still starts).
    metrics_port_fallback: bool = False
    pool_size: int = 6
    #: The hot queue's Redis (``redis://...``): claims, heartbeats and give-backs go there
    #: (``runner.hot_queue``). None: PostgreSQL alone. Must agree with the database's mode.
    hot_queue_url: str | None = None


class Worker:
    def __init__(self, settings: Settings, handlers: registry.Registry) -> None:
        self.settings = settings
        self.handlers = handlers
        self.metrics = metrics.RunnerMetrics()
        self.models = sorted({h.execution_model for h in handlers}, key=lambda m: m.value)
        self.executors = {model: self._make_executor(model) for model in self.models}
        self.router = router.ExecutorRouter(handlers, self.executors)
        self.router.track(self.metrics)
        # Each breaker transition goes to /metrics and PostgreSQL (runner.circuits).
        self.circuits = circuits.Publisher(settings.worker_id, self.metrics)
        self.breakers = breaker.Breakers(on_transition=self.circuits.transition)
        process_pool = self.executors.get(Model.PROCESS)
        self.quarantine = crash_quarantine.CrashQuarantine(
            process_pool if isinstance(process_pool, process_executor.ProcessExecutor) else None,
            after_crashes=settings.quarantine_after_crashes,
            worker_id=settings.worker_id,
            registry=self.metrics.registry,
        )
        self.settlement = settlement.Settlement(
            # Handler name -> its registered dependency (a run's spec.dependency comes first).
            dependencies={h.name: h.dependency for h in handlers},
            budgets=retry_budgets.RetryBudgets(
                settings.retry_budget, settings.retry_budget_window_seconds, self.metrics
            ),
            quarantine=self.quarantine,
            runner_metrics=self.metrics,
        )
        self.attempts = in_flight.Held()
        self._lease = datetime.timedelta(seconds=settings.lease_seconds)
        self.port: int | None = None
        self._busy: collections.Counter[Model] = collections.Counter()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pool: store_pool.Pool | None = None
        self.dispatch: dispatch.Dispatch = dispatch.PostgresDispatch(self.pool)
        self._redis: Any | None = None
        self._relaying: hot_queue.Relaying | None = None
        self._db_error: str | None = "PostgreSQL unreachable: not connected yet"
        self._draining = False
        # Stopped by the drain before it withdraws the announcement (see _drain).
        self._announcer: asyncio.Task[None] | None = None
        #: The name of the part whose error stopped the runner (exit code 1), if one did.
        self._failed_part: str | None = None
        self._slot_limited = False
        self.max_unfinished = in_flight.unfinished_bound(
            sum(executor.size for executor in self.executors.values()),
            settings.max_unfinished,
        )

    # -- wiring ---------------------------------------------------------------------------

    def _make_executor(self, model: Model) -> base.Executor:
        size = self.settings.concurrency.get(model, DEFAULT_CONCURRENCY[model])
        if model is Model.ASYNC:
            return async_executor.AsyncExecutor(self.handlers, max_concurrency=size)
        if model is Model.THREAD:
            return thread_executor.ThreadExecutor(self.handlers, max_workers=size)
        if model is Model.PROCESS:
            return process_executor.ProcessExecutor(self.handlers, max_workers=size)
        return subprocess_executor.SubprocessExecutor(
            self.handlers,
            max_concurrency=size,
            handler_modules=self.settings.handler_modules or None,
            grace_seconds=min(10.0, self.settings.grace_seconds),
        )

    def pool(self) -> store_pool.Pool:
        if self._pool is None:
            raise RuntimeError("the runner is not connected")
        return self._pool

    def connection(self, error: BaseException | None) -> None:
        """Every loop reports here whether its last database call worked."""
        if error is None:
            if self._db_error is not None:
                log.info("connected to PostgreSQL", extra={"worker": self.settings.worker_id})
            self._db_error = None
        else:
            # /readyz names the store that failed: PostgreSQL, or the hot queue's Redis.
            redis = isinstance(error, (errors.HotQueueUnavailableError, *hot_queue.REDIS_ERRORS))
            self._db_error = (
                f"{'Redis' if redis else 'PostgreSQL'} unreachable: {reconnect.describe(error)}"
            )

    def ready(self) -> tuple[bool, str]:
        if self._draining:
            return False, "draining"
        if self._db_error is not None:
            return False, self._db_error
        return True, "ok"

    # -- main ---------------------------------------------------------------------------

    async def run(self) -> int:
        """Serve until SIGTERM/SIGINT, drain, and return the exit code (0)."""
        server: health.HealthServer | None = None
        if self.settings.metrics_port is not None:
            # First, before anything needs undoing: a taken port ends the runner right here
            # with health.PortUnavailableError, which the CLI turns into exit code 2.
            server = health.HealthServer(
                self.metrics,
                host=self.settings.metrics_host,
                port=self.settings.metrics_port,
                ready=self.ready,
            )
            try:
                self.port = await server.start()
            except health.PortUnavailableError as error:
                if not self.settings.metrics_port_fallback:
                    await self.router.close()
                    raise
                log.warning(
                    "metrics port taken; serving on any free port",
                    extra={"port": self.settings.metrics_port, "reason": error.strerror},
                )
                server.port = 0
                self.port = await server.start()
        stop = shutdown.Shutdown()
        stop.install()
        self._wake = asyncio.Event()
        #: Set when runs may have become pending in PostgreSQL: the hot queue's relay looks.
        self._relay_woken = asyncio.Event()
        #: Where each model's next claim starts in each namespace, while claims fill up.
        self._floors = {model: claims.ClaimFloors() for model in self.models}
        self._gathering = {
            model: claim_gathering.ClaimGathering(self.executors[model].size)
            for model in self.models
        }
        self._loop = asyncio.get_running_loop()
        lag = loop_lag.LoopLagMonitor(observe=self.metrics.loop_lag.observe)
        lag.start()
        log.info(
            "runner starting",
            extra={
                "worker": self.settings.worker_id,
                "queues": list(self.settings.queues),
                "namespaces": "all"
                if self.settings.namespaces is None
                else list(self.settings.namespaces),
                "namespace_weights": dict(self.settings.namespace_weights),
                "reserved_slots": self.settings.reserved_slots,
                "handlers": sorted(h.name for h in self.handlers),
                "metrics_port": self.port,
                "max_unfinished": self.max_unfinished,
                "pid": os.getpid(),
            },
        )
        background: list[asyncio.Task[None]] = []
        try:
            if await self._connect(stop):
                self.finisher = finisher.Finisher(
                    self.dispatch,
                    self.settings.worker_id,
                    self.metrics,
                    settled=self._settled,
                    on_connection=self.connection,
                    linger_seconds=self.settings.finish_linger_seconds,
                    max_batch=self.settings.finish_max_batch,
                )
                beats = heartbeats.Heartbeats(
                    self.pool,
                    self.settings.worker_id,
                    self.attempts,
                    lease_seconds=self.settings.lease_seconds,
                    beats=_still_held,
                    extend=self.dispatch.heartbeat,
                )
                listener = wakeup.Listener(
                    self.settings.dsn,
                    self.settings.queues,
                    self._wake,
                    announced=self._relay_woken,
                )
                background = [
                    asyncio.create_task(self.finisher.run(), name="finisher"),
                    asyncio.create_task(
                        beats.run(on_beat=self._beaten, on_connection=self.connection),
                        name="heartbeats",
                    ),
                    asyncio.create_task(listener.run(), name="listener"),
                ]
                await self._announce_once()
                self._announcer = asyncio.create_task(self._announce(), name="announce")
                background.append(self._announcer)
                background.append(
                    asyncio.create_task(
                        self.circuits.run(self.pool, self.breakers, self.connection),
                        name="circuits",
                    )
                )
                if self.settings.maintenance_seconds > 0:
                    background.append(asyncio.create_task(self._maintain(), name="maintenance"))
                background.append(
                    asyncio.create_task(self._watch_mode(stop), name="hot-queue-mode")
                )
                if self._redis is not None:
                    self._relaying = hot_queue.Relaying(
                        self.pool,
                        self._redis,
                        delivered=self._wake.set,
                        on_connection=self.connection,
                        woken=self._relay_woken,
                    )
                    background.append(
                        asyncio.create_task(self._relaying.relay(), name="hot-queue-relay")
                    )
                for task in background:
                    task.add_done_callback(functools.partial(self._part_ended, stop))
                # Start-up is over: what it built is frozen, out of the collector's walks.
                with collector.tuned():
                    await self._claim_loop(stop)
                    await self._drain(stop)
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await self.router.close()
            if self._redis is not None:
                await self._redis.aclose()
            if self._pool is not None:
                await self._pool.close()
            lag.stop()
            if server is not None:
                await server.stop()
            stop.uninstall()
        log.info("runner stopped", extra={"worker": self.settings.worker_id})
        return 1 if self._failed_part else 0

    def _part_ended(self, stop: shutdown.Shutdown, task: asyncio.Task[None]) -> None:
        """A part of the runner (finisher, heartbeats, announcer …) ends only when cancelled.
        One that raised an error its retries do not cover (a refused statement: a missing
        grant, a schema older than this runner) would leave the runner claiming nothing or
        never writing a result, silently: it is logged and the runner stops, exiting 1, so
        that its supervisor restarts it and the error is seen."""
        if task.cancelled() or task.exception() is None:
            return
        self._failed_part = task.get_name()
        log.error(
            "a part of the runner failed; stopping",
            extra={"part": task.get_name(), "worker": self.settings.worker_id},
            exc_info=task.exception(),
        )
        stop.request(f"{task.get_name()} failed")
        stop.request(f"{task.get_name()} failed")  # a second request: do not wait the grace

    async def _connect(self, stop: shutdown.Shutdown) -> bool:
        retry = reconnect.Backoff("cannot connect to PostgreSQL; retrying", logger=log)
        while not stop.requested.is_set():
            try:
                opened = await schema_version.open_compatible_pool(
                    self.settings.dsn, "runner", min_size=2, max_size=self.settings.pool_size
                )
                try:
                    await runners.require_login_serves(opened, self.settings.namespaces)
                except errors.LoginNamespacesError:
                    await opened.close()
                    raise
                self._pool = opened
                try:
                    self.dispatch, self._redis = await hot_queue.dispatch_for(
                        self.pool, self.settings.hot_queue_url
                    )
                except errors.HotQueueModeError:
                    self._pool = None
                    await opened.close()
                    raise
                self.connection(None)
                if self.settings.maintenance_seconds > 0:
                    await self._check_server()
                return True
            except reconnect.ERRORS as error:
                self.connection(error)
                await _wait(stop.requested, retry.failed(error))
        return False

    async def _check_server(self) -> None:
        """A runner that maintains the store (``--maintenance``) says, as the maintainer does,
        when PostgreSQL's settings keep the hot table from being vacuumed often enough: the
        cost per job then grows with the backlog (docs/operations.md, PostgreSQL settings)."""
        for problem in await server.problems(self.pool()):
            log.warning("PostgreSQL settings need a change", extra={"problem": problem})

    # -- claiming -------------------------------------------------------------------------

    def _free_slots(self, model: Model) -> int:
        executor = self.executors[model]
        free = executor.size - max(self._busy[model], executor.busy)
        # A finished handler frees its slot, not its place: that waits for the commit.
        return min(free, self.max_unfinished - len(self.attempts))

    def _claimable_handlers(self, model: Model) -> list[str]:
        return sorted(
            h.name
            for h in self.handlers
            if h.execution_model is model and h.name not in self.quarantine
        )

    def _held_by_namespace(self) -> collections.Counter[str] | None:
        """The runs held per namespace, for a claim's fair share (``claims.claim``'s ``held``);
        None where the runner serves one namespace, which has no one to share with."""
        served = self.settings.namespaces
        if served is not None and len(served) < 2:
            return None
        return self.attempts.by_namespace

    def _reserved_slots(self, model: Model) -> int:
        """The slots of ``model`` that only a namespace behind the one this runner runs most of
        may take (``claims.claim``'s ``reserved``): a quiet namespace's run starts at once
        beside another's flood, instead of waiting for a slot to free. An executor of fewer
        than ``claims.RESERVE_FROM_SLOTS`` slots keeps none: one slot would be too large a
        part of it."""
        if self.executors[model].size < claims.RESERVE_FROM_SLOTS:
            return 0
        return self.settings.reserved_slots

    def _forget(self, attempt: in_flight.Attempt) -> None:
        self.attempts.drop(attempt)

    async def _claim_loop(self, stop: shutdown.Shutdown) -> None:
        retry = reconnect.Backoff("claim failed; retrying", logger=log)
        while not stop.requested.is_set():
            self._wake.clear()
            full = False
            timeout = self.settings.poll_seconds
            self._slot_limited = False
            try:
                for model in self.models:
                    names = self._claimable_handlers(model)
                    free = self._free_slots(model)
                    if free <= 0:
                        self._slot_limited = True
                    if free <= 0 or not names:
                        continue
                    gather = self._gathering[model].wait_seconds(free, time.monotonic())
                    if gather > 0.0:
                        self._slot_limited = True  # a freed slot wakes the loop
                        timeout = min(timeout, gather)
                        continue
                    limit = min(free, self.settings.max_claim_batch)
                    held = self._held_by_namespace()
                    kept = self._reserved_slots(model) if held is not None else 0
                    # Slots free beyond this claim's limit are kept already.
                    reserved = max(0, min(limit, kept - (free - limit)))
                    floors = self._floors[model].for_claim() if self.dispatch.uses_floors else None
                    sent = time.monotonic()  # no later than the database's now() of the lease
                    started = time.perf_counter()
                    runs = await self.dispatch.claim(
                        self.settings.worker_id,
                        queues=self.settings.queues,
                        handlers=names,
                        execution_models=[model.value],
                        # `names` are registered with `model`: runs that name no model of
                        # their own take the registration's (sundial.api.execution_model).
                        registered_model=True,
                        limit=limit,
                        lease_seconds=self.settings.lease_seconds,
                        namespaces=self.settings.namespaces,
                        floors=floors,
                        weights=self.settings.namespace_weights,
                        held=held,
                        reserved=reserved,
                    )
                    self.metrics.claim_latency.observe(time.perf_counter() - started)
                    # Filled: every slot but the reserved ones (which only a namespace behind
                    # the one this runner runs most of may take) went.
                    filled = limit - reserved
                    self._floors[model].claimed(runs, filled, floored=floors is not None)
                    self._gathering[model].claimed(len(runs), filled)
                    for run in runs:
                        self._start(run, model, sent)
                    if len(runs) >= filled:
                        self._slot_limited = True
                        # Claim again at once, as after any full claim, but not for the
                        # reserved slots alone: they wait for a quiet namespace's run.
                        if len(runs) == limit or free - len(runs) > kept:
                            full = True
                retry.succeeded()
                self.connection(None)
            except reconnect.ERRORS as error:
                self.connection(error)
                await _wait(stop.requested, retry.failed(error))
                continue
            if full:
                await asyncio.sleep(0)  # let the runs just started take their first step
                continue
            if self._redis is not None:  # runs reach Redis by the relay, after any NOTIFY
                timeout = min(timeout, HOT_QUEUE_POLL_SECONDS)
            await _wait_any((self._wake, stop.requested), timeout)

    def _start(self, run: claims.ClaimedRun, model: Model, claimed_at: float) -> None:
        # Called once per claimed run: keep it lean (ADR 0012). Positional arguments, no
        # datetime arithmetic beyond one subtraction, no look-ups that a dict could answer.
        args = run.args
        # The claim set started_at = now() and lease_until = now() + lease, in one statement.
        started_at = run.lease_until - self._lease
        job = invocation.Invocation(
            run.handler,
            str(run.id),
            run.attempt,
            run.idempotency_key,
            args if isinstance(args, dict) else {},
            run.fire_time,
            # None: the handler's registration decides, else the default (base.prepare).
            run.timeout_seconds,
            None,
            run.namespace,
            run.run_at,
            started_at,
            run.fencing_token,
        )
        if run.cancel_requested:
            job.cancel.set()
        attempt = in_flight.Attempt(run, job, model, claimed_at)
        self.attempts.add(attempt)
        self._busy[model] += 1
        lag = (started_at - run.run_at).total_seconds()
        self.metrics.schedule_lag.observe(lag if lag > 0.0 else 0.0, run.queue)
        self._execute(attempt)

    # -- executing ------------------------------------------------------------------------

    def _execute(self, attempt: in_flight.Attempt) -> None:
        """Start the attempt in its executor: one task per attempt, which also settles it."""
        run = attempt.run
        if not isinstance(run.args, dict):
            failed = outcomes.Failed(
                f"the args of run {run.id} are not a JSON object", outcomes.FailureDetail.BAD_ARGS
            )
            self._free_slot(attempt)
            self._settle(attempt, failed)
            return
        dependency: breaker.CircuitBreaker | None = None
        name = self.settlement.dependency_of(run)
        if name is not None:
            dependency = self.breakers[name]
            admission = dependency.admit()
            if not admission.allowed:
                self._free_slot(attempt)
                self._release(
                    attempt,
                    admission.retry_after_seconds,
                    waiting.circuit_open_note(name),
                    "circuit_open",
                )
                return
        task = self._loop.create_task(self._attempt(attempt, dependency))
        # Set before the task's first step (create_task only schedules it).
        attempt.task = task
        self._tasks.add(task)

    async def _attempt(
        self, attempt: in_flight.Attempt, dependency: breaker.CircuitBreaker | None
    ) -> None:
        """The task of one attempt: run it, then settle it in the same step.

        Settling here rather than in a done-callback saves a loop callback per job (ADR 0012).
        Straight to the executor: the claim only returned handlers registered with this
        model, so the router's look-up would be repeated work per job.
        """
        outcome: outcomes.Outcome
        try:
            outcome = await self.executors[attempt.model].run(attempt.invocation)
        except asyncio.CancelledError:
            self._ran(attempt, dependency, outcomes.Cancelled("the runner stopped the attempt"))
            raise
        except Exception as error:
            # Executors return outcomes for whatever a handler does; this is our own bug.
            log.error("executor failed", extra=attempt.log_fields(), exc_info=error)
            outcome = outcomes.Failed(base.format_exception(error))
        self._ran(attempt, dependency, outcome)

    def _ran(
        self,
        attempt: in_flight.Attempt,
        dependency: breaker.CircuitBreaker | None,
        outcome: outcomes.Outcome,
    ) -> None:
        self._tasks.discard(attempt.task)
        self._free_slot(attempt)
        if dependency is not None:
            dependency.record(outcome)
        self._settle(attempt, outcome)

    def _free_slot(self, attempt: in_flight.Attempt) -> None:
        self._busy[attempt.model] -= 1
        if self._slot_limited:
            self._wake.set()

    def _settle(self, attempt: in_flight.Attempt, outcome: outcomes.Outcome) -> None:
        if attempt.lost or attempt.released:
            self._forget(attempt)
            return
        result = self.settlement.finish_for(attempt, outcome)
        if result is None:
            # None only for a crash the handler did not cause (a restarted process pool).
            assert isinstance(outcome, outcomes.Crashed), outcome
            self._release(attempt, 0.0, outcome.error, "released")
            return
        self.finisher.submit(attempt, result, outcome.status.value)

    def _release(self, attempt: in_flight.Attempt, delay: float, reason: str, label: str) -> None:
        run = attempt.run
        log.info(
            "releasing run without spending a retry",
            extra={**attempt.log_fields(), "reason": reason, "delay_seconds": delay},
        )
        self.finisher.submit(attempt, releases.Release(run.id, run.attempt, delay, reason), label)

    def _settled(self, attempt: in_flight.Attempt) -> None:
        self._forget(attempt)
        if self._slot_limited:
            self._wake.set()

    def _beaten(self, beat: heartbeats.Beat[in_flight.Attempt]) -> None:
        """Act on a heartbeat's findings. An attempt whose result is already queued for
        writing is still extended but never declared lost here: the run leaving ``running``
        is then the finish itself."""
        self.metrics.lease_extensions.inc(beat.extended)
        for attempt in beat.lost:
            if not attempt.finishing and not attempt.released:
                self._lost(attempt)
        for attempt in beat.cancel_requested:
            if not attempt.invocation.cancel.is_set():
                log.info("cancellation requested", extra=attempt.log_fields())
                attempt.invocation.cancel.set()

    def _lost(self, attempt: in_flight.Attempt) -> None:
        attempt.lost = True
        attempt.invocation.cancel.set()
        self._forget(attempt)
        self.metrics.record_outcome(attempt.run.handler, "lease_lost")
        log.warning(
            "lease lost",
            extra={
                **attempt.log_fields(),
                "reason": "a heartbeat found another attempt owns the run; "
                "the local attempt is cancelled and its result discarded",
            },
        )

    # -- maintenance ----------------------------------------------------------------------

    async def _maintain(self) -> None:
        while True:
            try:
                # Both announce what they made claimable on the wakeup channel themselves.
                if self._relaying is not None:
                    expired, again = await self._relaying.maintain_once()
                    if expired or again:
                        log.info(
                            "hot queue: leases taken back and runs delivered again",
                            extra={"expired": expired, "delivered_again": again},
                        )
                reaped = await reaper.reap(self.pool())
                await reaper.promote_due(self.pool())
                if reaped.lease_expiries:
                    log.info(
                        "reaped expired leases",
                        extra={
                            "requeued": sorted(reaped.requeued),
                            "ended": reaped.ended,
                            "worker": self.settings.worker_id,
                        },
                    )
            except (*reconnect.ERRORS, *hot_queue.REDIS_ERRORS) as error:
                self.connection(error)
            await asyncio.sleep(self.settings.maintenance_seconds)

    async def _watch_mode(self, stop: shutdown.Shutdown) -> None:
        """Stop claiming once the database's hot queue is switched away from this runner's
        mode: a runner claiming from PostgreSQL beside runners claiming from Redis could start
        a run twice. What it holds is finished as on any shutdown (grace included); it exits 1
        with what to change, and its replacement starts in the new mode or does not start."""
        while True:
            await asyncio.sleep(hot_queue.MODE_CHECK_SECONDS)
            try:
                problem = await hot_queue.mode_problem(self.pool(), hot=self._redis is not None)
            except reconnect.ERRORS:
                continue  # the other loops report outages
            if problem is not None:
                self._failed_part = "hot-queue-mode"
                log.error(
                    "the database's hot queue was switched; stopping",
                    extra={"problem": problem, "worker": self.settings.worker_id},
                )
                stop.request("the database's hot queue was switched")
                return

    async def _announce(self) -> None:
        """Say what this runner serves (``runners.announce``) every few seconds; with
        maintenance on, also say why pending runs that no live runner serves are waiting
        (``runners.mark_unclaimable``): a wrong executionModel or a handler nobody registers
        shows in ``sundial runs`` and the JobRun instead of waiting silently."""
        while True:
            await asyncio.sleep(self._announce_interval())
            await self._announce_once()

    def _announce_interval(self) -> float:
        return min(5.0, max(self.settings.lease_seconds / 3, 0.5))

    async def _announce_once(self) -> None:
        """One announcement (and, with maintenance, one look at unclaimable runs). The first is
        made before the first claim, so no run of this runner is ever running while the runner
        is unknown to the others (who would report the runs it serves as unclaimable)."""
        interval = self._announce_interval()
        served = {h.name: h.execution_model.value for h in self.handlers}
        try:
            await runners.announce(
                self.pool(),
                self.settings.worker_id,
                queues=self.settings.queues,
                handlers=served,
                ttl_seconds=3 * interval,
                namespaces=self.settings.namespaces,
            )
            if self.settings.maintenance_seconds > 0:
                for run in await runners.mark_unclaimable(self.pool()):
                    _log_unclaimable(run, self.settings.worker_id)
        except reconnect.ERRORS as error:
            self.connection(error)
        except Exception as error:  # never let a bad announcement stop the runner
            log.error("announcing this runner failed", exc_info=error)

    # -- draining -------------------------------------------------------------------------

    async def _drain(self, stop: shutdown.Shutdown) -> None:
        self._draining = True
        deadline = time.monotonic() + self.settings.grace_seconds
        while self._running() and time.monotonic() < deadline and not stop.hurry.is_set():
            await _wait(stop.hurry, 0.05)
        remaining = self._running()
        for attempt in remaining:
            attempt.released = True  # from here on its own outcome is discarded
            self._release(
                attempt,
                0.0,
                f"released by runner {self.settings.worker_id} shutting down "
                f"(grace period of {self.settings.grace_seconds:g}s over)",
                "released",
            )
        try:
            await asyncio.wait_for(
                self.finisher.flush(), timeout=max(self.settings.lease_seconds, 5)
            )
        except TimeoutError:
            log.error(
                "could not write every result before exiting; their leases will expire",
                extra={"in_flight": len(self.attempts)},
            )
        for attempt in remaining:
            attempt.invocation.cancel.set()
        # The announcer first: left running it would put the row back while the jobs below
        # stop, and other processes would take this runner for a live one until it expired.
        if self._announcer is not None:
            self._announcer.cancel()
            await asyncio.gather(self._announcer, return_exceptions=True)
        with contextlib.suppress(*reconnect.ERRORS):
            await runners.withdraw(self.pool(), self.settings.worker_id)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        log.info(
            "drained",
            extra={
                "released": [a.run.id for a in remaining],
                "worker": self.settings.worker_id,
            },
        )

    def _running(self) -> list[in_flight.Attempt]:
        return [a for a in self.attempts.values() if not a.finishing and not a.lost]

    @property
    def leaked_threads(self) -> int:
        executor = self.executors.get(Model.THREAD)
        if isinstance(executor, thread_executor.ThreadExecutor):
            return executor.leaked
        return 0


def _still_held(attempt: in_flight.Attempt) -> bool:
    """Whether a heartbeat still extends ``attempt``: not once it was lost or given back."""
    return not attempt.lost and not attempt.released


def _log_unclaimable(run: runners.Unclaimable, worker: str) -> None:
    fields = {"run_id": run.run_id, "handler": run.handler, "worker": worker}
    if run.reason is None:
        log.info("run claimable again", extra=fields)
    else:
        log.warning("run unclaimable", extra={**fields, "reason": run.reason})


async def _wait(event: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):  # not wait_for: see runner.circuits
            await event.wait()


async def _wait_any(events: tuple[asyncio.Event, ...], seconds: float) -> None:
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
