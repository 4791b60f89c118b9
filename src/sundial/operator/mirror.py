"""The status mirror (docs/design.md): PostgreSQL holds every run, etcd a bounded window.

Level-triggered: every pass (each ``mirror_interval``, or sooner when a handler sets
``Context.wake``) recomputes, for every ScheduledJob, the desired set of JobRun objects from
PostgreSQL - its unfinished runs, its last ``successfulRunsHistoryLimit`` succeeded runs and its
last ``failedRunsHistoryLimit`` failed ones - and creates, patches or deletes JobRuns (owned by
the ScheduledJob, labelled ``sundial.dev/mirror=true``) to match, then the ScheduledJob's own
status. What a pass remembers is only an optimisation, so a restarted operator, a missed watch
event or an object deleted by hand all heal on the next pass.

At rest the cost follows what changed, not how many ScheduledJobs there are (ADR 0066): a
ScheduledJob whose inputs hash as at its last sync that raised nothing (its resourceVersion,
its schedule and window rows, its mirrored JobRuns' resourceVersions, its missed fires, its
circuit) is skipped, its spec not even parsed. One with an SLO (the clock alone can break
it) or a run-now annotation is synced on every pass, and every one at least every
``_RESYNC_SECONDS`` (5 minutes) whatever its inputs say. A pass that finds nothing changed at
all (no object in either cache, no row behind the windows by PostgreSQL's row counters, no
missed fire, unstorable name or circuit) does not even ask for the digests: it syncs only the
ScheduledJobs synced on every pass and the JobRuns with a time to live, and a full sweep
comes at least every ``_QUIET_SECONDS``.

A pass submits the user JobRuns that have no run yet beside its work on the ScheduledJobs, not
after it (``job_runs.reconcile``; kopf's handlers submit them too, and ``Context.submitting``
makes it once between them): a pass over 1,000 ScheduledJobs takes seconds, and after a
restart its first one stores every ScheduledJob again, which a JobRun waiting for its run
must not wait for, nor the ScheduledJobs for a burst of JobRuns (ADR 0040).

The write bound: a pass writes only what differs from what the apiserver already has, and per
ScheduledJob at most its window (active + history limits). A job whose runs finish faster than
the pass interval has intermediate runs that are never mirrored at all (they are in
PostgreSQL, ``sundial runs`` shows them), so the API write rate grows with the number of jobs
and their windows, never with the run rate. User-created JobRuns are followed here too
(``job_runs.reconcile``), until they are deleted or their ``ttlSecondsAfterFinished`` passes.

A pass reads three things in bulk - the ScheduledJobs and JobRuns from the caches kopf's
watch events keep (``cache``; LISTed only on the first pass and every resync), the window rows
(one SQL statement per slice of 256 schedules, the pass worked through a slice at a time) -
and writes with bounded concurrency (a ScheduledJob's JobRuns: ``mirrored_job_runs``), so the
API requests of a pass grow with what changed, not with how many objects there are. At most
every ``pod_gc_interval`` a pass also lists this installation's ended Pods and deletes those
whose run left its window, or was never in it (``pod_sweep``), so a job's Pods stay bounded by
its window like its JobRuns.

The mirror does not archive: moving finished runs out of the hot table is the maintainer's
(``scheduler.maintainer``), and the window reads the hot table and the month partitions alike,
so a run archived mid-window stays in its window.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from sundial.api import common, conditions, job_run, scheduled_job
from sundial.observability import mirror_metrics
from sundial.operator import (
    cache,
    context,
    events,
    heap,
    job_runs,
    kube,
    mirrored_job_runs,
    pod_sweep,
    replays,
    scheduled_jobs,
    status,
)
from sundial.pods import pod_gc
from sundial.store import circuits, history, schedules
from sundial.store import errors as store_errors

__all__ = ["Mirror"]

log = logging.getLogger("sundial.operator.mirror")

#: ScheduledJobs synced at once in a pass (their writes are bounded by write_concurrency).
_SLICE = 256

#: A pass that finds nothing changed since the last sweep skips the sweep, but one comes at
#: least this often (so each ScheduledJob is still synced within ``_RESYNC_SECONDS``).
_QUIET_SECONDS = 30.0

#: While generations wait to be stored, a sweep of every ScheduledJob starts at most every
#: mirror interval or this many times its own duration after the last one, whichever is longer.
_SWEEP_SPACING = 4

#: A ScheduledJob whose inputs did not change since its last sync is skipped by a sweep, but
#: synced again at least this often, whatever its inputs say (a safety net, not a schedule).
_RESYNC_SECONDS = 300.0


class Mirror:
    def __init__(self, ctx: context.Context) -> None:
        self.ctx = ctx
        self._writes = _WriteBound(ctx, ctx.settings.write_concurrency)
        self._pods = pod_sweep.PodSweep(ctx, self._writes)
        self.passes = 0
        #: When the last sweep of every ScheduledJob started (monotonic) and how long it took.
        self._last_sweep: float | None = None
        self._sweep_seconds = 0.0
        #: Objects stored, written and listed by the last pass (what the heap trimmer counts).
        self.work = 0
        self._listed = 0
        self.heap = heap.HeapTrimmer()
        self._forgeries = mirrored_job_runs.Forgeries(ctx)
        #: By ScheduledJob UID: the fingerprint of the inputs of its last sync that raised
        #: nothing, and when (monotonic). A sweep skips a ScheduledJob whose inputs are the
        #: same: its status and its JobRuns are what that sync made them.
        self._settled: dict[str, tuple[int, float]] = {}
        #: What the last sweep saw of everything a sync reads (``_inputs_now``), and when it
        #: started: a pass that sees the same skips the sweep.
        self._swept_inputs: tuple[Any, ...] | None = None
        self._swept_at: float | None = None
        #: What the last pass derived from the cached ScheduledJobs, with the cache's change
        #: count then: at rest the same, and not derived again from 10,000 bodies each pass.
        self._view: _ScheduledView | None = None
        #: The caches' and the stored generations' change counts when a pass last found every
        #: live ScheduledJob's generation stored.
        self._all_stored_at: tuple[int, int] | None = None

    def _scheduled_view(self, scheduled: list[Mapping[str, Any]]) -> _ScheduledView:
        changes = self.ctx.scheduled_job_cache.changes
        if self._view is not None and self._view.changes == changes:
            return self._view
        live = [body for body in scheduled if not body["metadata"].get("deletionTimestamp")]
        self._view = _ScheduledView(
            changes=changes,
            live=live,
            by_schedule={status.schedule_id(body): body for body in live},
            namespace_of={status.schedule_id(b): b["metadata"]["namespace"] for b in scheduled},
            every_pass=[body for body in live if _synced_every_pass(body)],
        )
        return self._view

    async def run(self, stop: asyncio.Event) -> None:
        """Pass until ``stop``; a failed pass is logged and the next one starts over."""
        interval = self.ctx.settings.mirror_interval.total_seconds()
        while not stop.is_set():
            self.ctx.wake.clear()
            try:
                await self.sync()
            except Exception:
                log.exception("mirror pass failed; the next pass starts over")
            else:
                # What the pass freed stays resident unless handed back (ADR 0038, amended).
                self.heap.after_pass(self.work)
            waiter = asyncio.ensure_future(self.ctx.wake.wait())
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait(
                {waiter, stopper}, timeout=interval, return_when=asyncio.FIRST_COMPLETED
            )
            waiter.cancel()
            stopper.cancel()
            # Coalesce a burst of wake-ups (a thousand objects applied at once) into one pass.
            await asyncio.sleep(0.2)

    async def sync(self) -> None:
        """One pass over every ScheduledJob and JobRun in the watched namespaces."""
        started = time.perf_counter()
        requests_before = self.ctx.api.requests
        self._listed = 0
        listing = self.ctx.scheduled_job_cache.needs_list()
        listed_at = await schedules.database_now(self.ctx.pool) if listing else None
        scheduled = await self._objects(self.ctx.scheduled_job_cache, kube.SCHEDULED_JOBS)
        if listed_at is not None:
            await self._deactivate_orphans(scheduled, listed_at)
        registered_before = set(self.ctx.job_runs)
        runs_listed = await self._objects(self.ctx.job_run_cache, kube.JOB_RUNS)
        view = self._scheduled_view(scheduled)
        live, namespace_of = view.live, view.namespace_of
        self.ctx.scheduled_jobs = view.by_schedule
        mirrored: dict[uuid.UUID, dict[str, Mapping[str, Any]]] = {}
        users: list[Mapping[str, Any]] = []
        for body in runs_listed:
            labels = body["metadata"].get("labels") or {}
            if labels.get(context.LABEL_MIRROR) == "true":
                owner = mirrored_job_runs.owner_uid(body)
                if owner is None or owner not in namespace_of:
                    continue  # its ScheduledJob is gone: the garbage collector takes it
                if namespace_of[owner] != body["metadata"]["namespace"]:
                    self._forgeries.report(body, namespace_of[owner])
                    continue
                mirrored.setdefault(owner, {})[body["metadata"]["name"]] = body
            elif not body["metadata"].get("deletionTimestamp"):
                users.append(body)
        self._index_user_runs(users, registered_before)
        # The user JobRuns waiting for their run, beside the ScheduledJobs' part of the pass,
        # not after it: that part goes through every ScheduledJob, and a restart's first pass
        # stores each of them again (ADR 0040).
        waiting = [body for body in users if (body.get("status") or {}).get("runId") is None]
        beside = asyncio.ensure_future(self._sync_user_runs(waiting))
        try:
            done = await self._sync_scheduled_jobs(live, mirrored)
        finally:
            await beside
        with_run = [body for body in users if (body.get("status") or {}).get("runId") is not None]
        if done.sweep:
            await self._sync_user_runs(with_run)
            assert self._last_sweep is not None
            self._sweep_seconds = time.monotonic() - self._last_sweep
        else:
            # The clock alone ends a JobRun's time to live: those are followed every pass.
            await self._sync_user_runs(
                [
                    b
                    for b in with_run
                    if (b.get("spec") or {}).get("ttlSecondsAfterFinished") is not None
                ]
            )
        if done.ended_pods is not None:
            await self._pods.collect(done.ended_pods, done.kept, users)
        self.passes += 1
        sent = self.ctx.api.requests - requests_before
        self.work = done.stored + sent + self._listed
        log.debug(
            "mirror pass",
            extra={
                "scheduled_jobs": len(live),
                "synced": done.synced,
                "job_runs": len(runs_listed),
                "api_requests": sent,
                "seconds": round(time.perf_counter() - started, 3),
            },
        )

    async def _deactivate_orphans(
        self, scheduled: Sequence[Mapping[str, Any]], listed_at: datetime.datetime
    ) -> None:
        """After a LIST: the schedules of ScheduledJobs it did not return were deleted while
        no operator watched, and no event will ever say so; stop them firing and free their
        names (``store.schedules.deactivate_orphans``)."""
        orphans = await schedules.deactivate_orphans(
            self.ctx.pool,
            kept=[status.schedule_id(body) for body in scheduled],
            listed_at=listed_at,
            namespaces=self.ctx.settings.namespaces,
        )
        for schedule_id, namespace, name in orphans:
            log.warning(
                "ScheduledJob gone while no operator watched; schedule deactivated",
                extra={"object": f"{namespace}/{name}", "schedule_id": str(schedule_id)},
            )

    async def _sync_scheduled_jobs(
        self,
        live: list[Mapping[str, Any]],
        mirrored: dict[uuid.UUID, dict[str, Mapping[str, Any]]],
    ) -> _ScheduledJobsDone:
        """Store every ScheduledJob not stored yet; then mirror and write the status of every
        ScheduledJob if this pass sweeps, else of the ones just stored."""
        # Every generation not stored yet (new, edited, or its store failed) is stored here.
        stored = self.ctx.reconciled
        # At rest neither the cached objects nor the stored generations move: the last look
        # found every generation stored, and a look at 10,000 costs ~10 ms a pass.
        looked = (self.ctx.scheduled_job_cache.changes, stored.changes)
        unstored = (
            []
            if looked == self._all_stored_at
            else [
                body
                for body in live
                if stored.get(body["metadata"]["uid"]) != body["metadata"].get("generation")
            ]
        )
        self._all_stored_at = None if unstored else looked
        for first in range(0, len(unstored), _SLICE):  # in slices, as below (ADR 0027)
            await self.ctx.submissions_quiet()
            await asyncio.gather(*(self._store(body) for body in unstored[first : first + _SLICE]))
        # A backlog (thousands applied at once) is worked off by passes over the new ones
        # only: a sweep re-reads every window and recomputes every status, and back to back
        # at 10,000 the sweeps were most of the pass (ADR 0038, amended).
        try:
            # One statement, a handful of rows: the dependencies open on some live runner.
            open_circuits = await circuits.open_for(self.ctx.pool)
            # Read before any window, as the row counters are: a claim after it moves it.
            hot = await self._hot_changes()
            inputs_now = await self._inputs_now(open_circuits, hot) if not unstored else None
        except store_errors.StoreUnavailableError as error:
            await self._store_unavailable(live, error)
            raise
        sweep = self._sweep_due(backlog=bool(unstored))
        synced = unstored
        if sweep and self._quiet(inputs_now, hot):
            # Nothing a sync reads changed since the last sweep: only what the clock moves.
            sweep = False
            assert self._view is not None  # made by this pass
            synced = self._view.every_pass
            mirror_metrics.SCHEDULED_JOBS.labels("settled").inc(len(live) - len(synced))
            mirror_metrics.PASSES.labels("quiet").inc()
        elif sweep:
            self._last_sweep = time.monotonic()
            self._swept_inputs, self._swept_at = inputs_now, self._last_sweep
            synced = live
            mirror_metrics.PASSES.labels("sweep").inc()
        else:
            mirror_metrics.PASSES.labels("backlog").inc()

        # Listed before any window is read (pod_gc: a run that finishes in between is then
        # in the window compared, never taken for one that left it).
        ended_pods = await self._pods.ended_pods() if sweep and self._pods.due() else None
        owners = {pod.owner for pod in ended_pods or () if pod.owner is not None}
        kept: dict[uuid.UUID, set[int]] = {}
        # Slice by slice from the reads to the writes: what a ScheduledJob costs during a pass
        # (its parsed spec, its window and schedule rows, its desired status) is alive for
        # one slice at a time. The whole pass at once held that for every ScheduledJob, on
        # every pass, idle or not (ADR 0038).
        settled_jobs = synced_jobs = 0
        for first in range(0, len(synced), _SLICE):
            await self.ctx.submissions_quiet()
            bodies = {status.schedule_id(body): body for body in synced[first : first + _SLICE]}
            # Limits come from the raw spec (the schema bounds them), so a ScheduledJob
            # stalled by an invalid edit keeps its window visible and up to date.
            requests = [
                history.WindowRequest(schedule_id, max(1, successful), max(1, failed))
                for schedule_id, (successful, failed) in (
                    (schedule_id, _limits(body)) for schedule_id, body in bodies.items()
                )
            ]
            try:
                # At rest most ScheduledJobs are settled: a number per schedule says so, and
                # only the others' rows are read (ADR 0066, amended).
                digests = await history.digests(self.ctx.pool, requests)
            except store_errors.StoreUnavailableError as error:
                await self._store_unavailable(live, error)
                raise
            now = time.monotonic()
            due: list[tuple[uuid.UUID, Mapping[str, Any], int | None]] = []
            for schedule_id, body in bodies.items():
                circuit = _open_circuit(body, open_circuits)
                existing = mirrored.get(schedule_id, {})
                uid = body["metadata"]["uid"]
                inputs = self._fingerprint(
                    schedule_id, body, digests.get(schedule_id), existing, circuit, hot
                )
                settled = self._settled.get(uid)
                if (
                    inputs is not None
                    and settled is not None
                    and settled[0] == inputs
                    and now - settled[1] < _RESYNC_SECONDS
                ):
                    settled_jobs += 1
                    continue
                self._settled.pop(uid, None)
                due.append((schedule_id, body, inputs))
            # A Pod sweep needs the windows of the ScheduledJobs that own an ended Pod: the
            # runs each one keeps. Most own none, and at rest no Pod has ended at all.
            wanted = {item[0] for item in due} | (owners & bodies.keys())
            try:
                windows = await history.window(
                    self.ctx.pool,
                    [r for r in requests if r.schedule_id in wanted],
                    hot=self.ctx.hot_queue,
                )
                views = await history.schedules(self.ctx.pool, wanted)
            except store_errors.StoreUnavailableError as error:
                await self._store_unavailable(live, error)
                raise
            syncs = []
            for schedule_id, body, inputs in due:
                synced_jobs += 1
                # Parsed only when synced: a settled ScheduledJob's spec is not needed.
                spec, problem = scheduled_job.parse(body)
                syncs.append(
                    self._sync_settling(
                        body["metadata"]["uid"],
                        inputs,
                        now,
                        body,
                        spec,
                        problem,
                        views.get(schedule_id),
                        windows.get(schedule_id),
                        mirrored.get(schedule_id, {}),
                        _open_circuit(body, open_circuits),
                    )
                )
            await asyncio.gather(*syncs)
            if ended_pods is not None:
                kept.update(
                    (schedule_id, {run.id for run in _window_runs(body, windows[schedule_id])})
                    for schedule_id, body in bodies.items()
                    if schedule_id in windows and schedule_id in owners
                )
        mirror_metrics.SCHEDULED_JOBS.labels("settled").inc(settled_jobs)
        mirror_metrics.SCHEDULED_JOBS.labels("synced").inc(synced_jobs)
        if sweep:  # forget the ScheduledJobs that are gone
            uids = {body["metadata"]["uid"] for body in live}
            for gone in set(self._settled) - uids:
                del self._settled[gone]
        return _ScheduledJobsDone(ended_pods, kept, len(unstored), len(synced), sweep)

    def _fingerprint(
        self,
        schedule_id: uuid.UUID,
        body: Mapping[str, Any],
        digest: history.Digest | None,
        existing: Mapping[str, Mapping[str, Any]],
        circuit: circuits.OpenCircuit | None,
        hot: tuple[object, ...] | None,
    ) -> int | None:
        """A hash of everything a ScheduledJob's sync reads, or None when its sync must run
        whatever they are: a run-now asked for, or an SLO, which the clock alone can break.
        The object's resourceVersion covers its spec, annotations and status (a status this
        operator writes changes it too, so a sync that wrote is followed by one that checks);
        its mirrored JobRuns' resourceVersions cover a cancel or a replay asked there; the
        store's digest covers its schedule row and its window of runs (a window that lists
        as many active runs as it may is always synced: its exact count is not in it). On the
        hot queue, a ScheduledJob with unfinished runs also depends on ``hot`` (a claim there
        changes no digest), and is synced every pass while Redis does not answer."""
        metadata = body["metadata"]
        if _synced_every_pass(body):
            return None
        watches_redis = self.ctx.hot_queue is not None and _has_active(body)
        if watches_redis and hot is None:
            return None
        version = metadata.get("resourceVersion")
        if version is None or digest is None or digest.capped:
            return None
        mirrored = tuple(
            sorted((name, run["metadata"].get("resourceVersion")) for name, run in existing.items())
        )
        return hash(
            (
                version,
                digest.value,
                self.ctx.missed.get(schedule_id),
                self.ctx.unstorable.get(metadata["uid"]),
                circuit,
                mirrored,
                hot if watches_redis else None,
            )
        )

    async def _sync_settling(
        self,
        uid: str,
        inputs: int | None,
        now: float,
        *arguments: Any,
    ) -> None:
        """``_sync_scheduled_job``, then remember its inputs if it raised nothing; if it
        raised, the next pass sweeps again (a quiet pass would not retry it)."""
        if not await self._sync_scheduled_job(*arguments):
            self._swept_inputs = None
        elif inputs is not None:
            self._settled[uid] = (inputs, now)

    async def _hot_changes(self) -> tuple[object, ...] | None:
        """What moves on the hot queue when a run is claimed or given back there
        (``history.hot_changes``); ``()`` without a hot queue, None when Redis does not
        answer."""
        if self.ctx.hot_queue is None:
            return ()
        return await history.hot_changes(self.ctx.pool, self.ctx.hot_queue)

    async def _inputs_now(
        self, open_circuits: Mapping[str, circuits.OpenCircuit], hot: tuple[object, ...] | None
    ) -> tuple[Any, ...] | None:
        """Everything a sync reads, as numbers that move when it changes; None when PostgreSQL
        keeps no row counters (then every pass sweeps, as before)."""
        rows = await history.changes(self.ctx.pool)
        if rows is None:
            return None
        return (
            rows,
            self.ctx.scheduled_job_cache.changes,
            self.ctx.job_run_cache.changes,
            frozenset(self.ctx.missed.items()),
            frozenset(self.ctx.unstorable.items()),
            tuple(sorted(open_circuits.items(), key=lambda item: item[0])),
            hot,
        )

    def _quiet(self, inputs_now: tuple[Any, ...] | None, hot: tuple[object, ...] | None) -> bool:
        """Whether this pass may skip its sweep: it sees what the last sweep saw, that sweep is
        less than ``_QUIET_SECONDS`` old, and no Pod sweep is due. On the hot queue a claim
        moves no PostgreSQL counter but moves ``hot``; while Redis does not answer, no pass
        is quiet while a ScheduledJob has unfinished runs (one may have been claimed)."""
        return (
            inputs_now is not None
            and inputs_now == self._swept_inputs
            and self._swept_at is not None
            and time.monotonic() - self._swept_at < _QUIET_SECONDS
            and not self._pods.pending()
            and not (
                hot is None
                and any(_has_active(body) for body in self.ctx.scheduled_job_cache.bodies())
            )
        )

    def _sweep_due(self, *, backlog: bool) -> bool:
        """Whether this pass syncs every ScheduledJob (every pass does, but during a backlog)."""
        if not backlog or self._last_sweep is None:
            return True
        spacing = max(
            self.ctx.settings.mirror_interval.total_seconds(),
            _SWEEP_SPACING * self._sweep_seconds,
        )
        return time.monotonic() - self._last_sweep >= spacing

    async def _objects(self, objects: cache.ObjectCache, plural: str) -> list[Mapping[str, Any]]:
        """The watched objects of ``plural``: from the cache kopf's events keep, LISTed only
        when the cache is new or due for its resync."""
        if objects.needs_list():
            items, version = await self.ctx.api.list_versioned(
                plural, self.ctx.settings.namespaces, each=cache.slim
            )
            objects.replace(items, version)
            self._listed += len(items)
        return objects.bodies()

    async def _store(self, body: Mapping[str, Any]) -> None:
        if self.ctx.reconciled.get(body["metadata"]["uid"]) == body["metadata"].get("generation"):
            return
        async with self._writes:
            try:
                await scheduled_jobs.reconcile_once(self.ctx, body)
            except store_errors.NameTakenError as error:
                log.info(
                    "ScheduledJob waits for its name; retried on the next pass",
                    extra={
                        "object": f"{body['metadata']['namespace']}/{body['metadata']['name']}",
                        "error": str(error),
                    },
                )
            except Exception:
                log.exception(
                    "could not store a ScheduledJob; retried on the next pass",
                    extra={"object": f"{body['metadata']['namespace']}/{body['metadata']['name']}"},
                )

    def _index_user_runs(self, users: list[Mapping[str, Any]], registered_before: set[str]) -> None:
        """``ctx.job_runs`` becomes the listed user JobRuns, plus those a handler registered
        while the LIST was under way (newer than it); the rest were deleted."""
        listed = {
            job_runs.run_key(body["metadata"], (body.get("spec") or {}).get("idempotencyKey")): body
            for body in users
        }
        newer = {
            key: body
            for key, body in self.ctx.job_runs.items()
            if key not in registered_before and key not in listed
        }
        self.ctx.job_runs = {**newer, **listed}

    async def _store_unavailable(
        self, bodies: list[Mapping[str, Any]], error: BaseException
    ) -> None:
        """Degraded=True on every ScheduledJob while PostgreSQL cannot be read (once each:
        the message names only the kind of error, so repeated passes write nothing)."""
        cause = error.__cause__ or error  # psycopg's error, under the store's
        message = f"PostgreSQL is unreachable ({type(cause).__name__}); runs are not fired"
        wanted: list[tuple[str, common.ConditionStatus, str, str]] = [
            (
                conditions.ConditionType.DEGRADED,
                "True",
                conditions.ConditionReason.STORE_UNAVAILABLE,
                message,
            )
        ]

        async def one(body: Mapping[str, Any]) -> None:
            metadata = body["metadata"]
            current = body.get("status") or {}
            desired = {
                "conditions": status.conditions_with(
                    current,
                    wanted,
                    now=self.ctx.clock.now(),
                    generation=current.get("observedGeneration"),
                )
            }
            patch = status.changes(current, desired)
            if patch:
                async with self._writes:
                    await self.ctx.api.patch_status(
                        kube.SCHEDULED_JOBS, metadata["namespace"], metadata["name"], patch
                    )

        await asyncio.gather(*(one(body) for body in bodies), return_exceptions=True)

    async def _sync_scheduled_job(
        self,
        body: Mapping[str, Any],
        spec: scheduled_job.ScheduledJobSpec | None,
        problem: str | None,
        view: history.ScheduleView | None,
        window: history.Window | None,
        existing: dict[str, Mapping[str, Any]],
        circuit: circuits.OpenCircuit | None,
    ) -> bool:
        """Mirror one ScheduledJob's window and write its status; False if that failed."""
        metadata = body["metadata"]
        try:
            if context.RUN_NOW_ANNOTATION in (metadata.get("annotations") or {}):
                await scheduled_jobs.run_now(self.ctx, body)
            if window is not None:
                desired = {
                    status.mirror_name(metadata["name"], run.id): run
                    for run in _window_runs(body, window)
                }
                await mirrored_job_runs.sync(self.ctx, self._writes, body, desired, existing)
            schedule_id = status.schedule_id(body)
            reason: str = conditions.ConditionReason.INVALID_SPEC
            if problem is None and (taken := self.ctx.unstorable.get(metadata["uid"])):
                reason, problem = taken
            desired_status = status.scheduled_job_status(
                body,
                spec_error=problem,
                spec_error_reason=reason,
                schedule=view,
                window=window,
                missed=self.ctx.missed.get(schedule_id),
                now=self.ctx.clock.now(),
                circuit=circuit,
            )
            involved = {
                "apiVersion": common.API_VERSION,
                "kind": scheduled_job.KIND,
                "metadata": metadata,
            }
            events.record_broken_slos(
                self.ctx.recorder, involved, desired_status, body.get("status") or {}
            )
            patch = status.changes(body.get("status"), desired_status)
            if patch:
                async with self._writes:
                    patched = await self.ctx.api.patch_status(
                        kube.SCHEDULED_JOBS, metadata["namespace"], metadata["name"], patch
                    )
                if patched is not None:
                    self.ctx.scheduled_job_cache.observe("MODIFIED", patched)
        except Exception:
            log.exception(
                "mirror failed for a ScheduledJob",
                extra={"object": f"{metadata.get('namespace')}/{metadata.get('name')}"},
            )
            return False
        return True

    async def _sync_user_runs(self, bodies: list[Mapping[str, Any]]) -> None:
        """Follow user JobRuns: submit the waiting ones, refresh the ones with live runs."""
        ids = [
            int(body["status"]["runId"])
            for body in bodies
            if (body.get("status") or {}).get("runId") is not None
        ]
        known = await history.runs(self.ctx.pool, ids, hot=self.ctx.hot_queue)

        async def one(body: Mapping[str, Any]) -> None:
            current = body.get("status") or {}
            run = None
            if current.get("runId") is not None:
                run = known.get(int(current["runId"]))
                spec = body.get("spec") or {}
                done = current.get("phase") in job_run.ENDED_PHASES
                asked = replays.requested(body) is not None
                if done and spec.get("ttlSecondsAfterFinished") is None and not asked:
                    return  # finished and mirrored: nothing will change any more
                if run is None:
                    return
            async with self._writes:
                try:
                    await job_runs.reconcile(self.ctx, body, run)
                except Exception:
                    metadata = body["metadata"]
                    log.exception(
                        "could not reconcile a JobRun",
                        extra={"object": f"{metadata.get('namespace')}/{metadata.get('name')}"},
                    )

        await asyncio.gather(*(one(body) for body in bodies))


@dataclasses.dataclass(frozen=True)
class _ScheduledView:
    """What a pass derives from the cached ScheduledJobs, at a cache change count."""

    changes: int
    live: list[Mapping[str, Any]]  # not being deleted
    by_schedule: dict[uuid.UUID, Mapping[str, Any]]  # live ones by schedule id
    namespace_of: dict[uuid.UUID, str]  # every one's namespace by schedule id
    every_pass: list[Mapping[str, Any]]  # live ones synced on every pass


@dataclasses.dataclass(frozen=True)
class _ScheduledJobsDone:
    """What the ScheduledJobs' part of a pass did, for the rest of the pass."""

    #: The ended Pods listed when a Pod sweep was due (else None), and the runs each
    #: window keeps, for ``PodSweep.collect``.
    ended_pods: list[pod_gc.EndedPod] | None
    kept: dict[uuid.UUID, set[int]]
    #: ScheduledJobs stored, and synced (every live one on a sweep, else those stored).
    stored: int
    synced: int
    sweep: bool


class _WriteBound(asyncio.Semaphore):
    """The pass's concurrent writes, each taken only while no handler is submitting a JobRun
    or waiting to (``Context.no_submissions``): the process's CPU goes to a burst of
    submissions first (ADR 0040)."""

    def __init__(self, ctx: context.Context, limit: int) -> None:
        super().__init__(limit)
        self._ctx = ctx

    async def acquire(self) -> Literal[True]:
        await self._ctx.submissions_quiet()
        return await super().acquire()


def _synced_every_pass(body: Mapping[str, Any]) -> bool:
    """A ScheduledJob whose sync no input can skip: an SLO, which the clock alone can break,
    or a run-now asked for."""
    if (body.get("spec") or {}).get("slo") is not None:
        return True
    return context.RUN_NOW_ANNOTATION in (body["metadata"].get("annotations") or {})


def _has_active(body: Mapping[str, Any]) -> bool:
    """Whether the ScheduledJob's status lists unfinished runs."""
    return bool((body.get("status") or {}).get("activeCount"))


def _limits(body: Mapping[str, Any]) -> tuple[int, int]:
    """(successfulRunsHistoryLimit, failedRunsHistoryLimit), with the API's defaults."""
    spec = body.get("spec") or {}
    defaults = scheduled_job.ScheduledJobSpec.model_fields
    successful = spec.get("successfulRunsHistoryLimit")
    failed = spec.get("failedRunsHistoryLimit")
    return (
        int(
            defaults["successful_runs_history_limit"].default if successful is None else successful
        ),
        int(defaults["failed_runs_history_limit"].default if failed is None else failed),
    )


def _window_runs(body: Mapping[str, Any], window: history.Window) -> list[history.RunView]:
    """The runs a ScheduledJob mirrors: active ones, then the newest of each history limit."""
    successful, failed = _limits(body)
    return window.active + window.successful[:successful] + window.failed[:failed]


def _open_circuit(
    body: Mapping[str, Any], open_circuits: Mapping[str, circuits.OpenCircuit]
) -> circuits.OpenCircuit | None:
    """The open circuit of the dependency the raw spec names (read raw, so a ScheduledJob
    stalled by an invalid edit still says that its runs wait)."""
    dependency = (body.get("spec") or {}).get("dependency")
    return open_circuits.get(dependency) if isinstance(dependency, str) else None
