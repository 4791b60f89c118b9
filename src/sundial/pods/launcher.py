"""The pod launcher: pod-mode runs claimed from the store, one Pod per attempt, ends mapped back.

This module is the loop and its leases (adopt, heartbeat, claim); the phases of an attempt's
Pod are in ``pods.launch`` (``starting``, ``observing``, ``ending``), one module each.

A ``PodLauncher`` is an asyncio component with no kopf in it: the operator hosts it, and
``sundial pod-launcher`` runs it alone. Each ``step``:

1. **Heartbeat**, in one statement, every held run whose lease was last extended a third of a
   lease ago (``attempt.heartbeats``, as the runner does). A run whose lease was lost is no
   longer ours: its Pod is deleted and its outcome ignored. A run with a cancel request has its
   Pod deleted (with a grace period) and is finished cancelled.
2. **Claim** pod-mode runs (``execution_models=('pod',)``) up to free slots, and **start**
   each attempt: first every Pod of an *older* attempt of the same run that has not ended is
   deleted, and the new Pod is created only once they have ended or are gone (one attempt's Pod
   at a time, checked at every start, so it also holds after a reap and a new claim). The Pod
   name is deterministic per attempt: a second create is a 409, adopted, never a second Pod.
   A Pod that breaks the namespace's Pod Security level as Sundial holds it (``pod_security``:
   restricted by default, the namespace label ``sundial.dev/pod-security`` otherwise) or names
   a ServiceAccount the namespace does not allow is never created, and neither is a template
   the apiserver rejects (400/422, or 403 from Pod Security): the run fails at once with the
   reason (class ``permanent``: no retry storm).
3. **Observe** the Pods (one LIST per namespace of this installation's Pods whose outcome is
   not recorded yet, ``sundial.dev/tracked=true``, plus a GET for each held attempt missing
   from it: level triggered, see docs/adr/0009-pod-launcher.md), classify each attempt's Pod
   (``pod_outcomes``), and finish the ended ones in one batch through the job's failure policy
   (``failure_policy``), after recording the Pod's name, exit code and reason on the run. The
   timeout (``activeDeadlineSeconds`` on the Pod, and our own clock as a backstop, both counted
   from the Pod's ``status.startTime``, so time spent Pending is not taken from
   ``timeoutSeconds``), and a Pod that never starts, delete the Pod. A Pod someone else deleted
   before it ended is retried (a crash) or ends the run cancelled, as the job's
   ``podDeletionPolicy`` says. A Pod of ours whose attempt is not current (its run moved on, or
   is not running) is deleted; its outcome is never recorded. A Pod that is gone because the
   object owning it was deleted (the garbage collector took it with a deleted user JobRun) ends
   its run cancelled, whatever the job's ``podDeletionPolicy`` says, when the hooks say so
   (``deleted_with_owner``): a run whose JobRun was deleted is cancelled, never retried with a
   new Pod, even if the Pod went before the operator's cancel landed
   (docs/adr/0013-job-run-owns-its-pods.md).

**No Pod ends unaccounted** (docs/adr/0023-pod-outcome-finalizer.md): every Pod is created
with the finalizer ``sundial.dev/pod-outcome``, so an evicted or deleted Pod stays readable,
with its final status, until the launcher has committed its attempt's outcome; only then is
the finalizer removed (``PodApi.release``). A tracked Pod whose attempt no launcher holds any
more (the run finished, moved to a newer attempt, was cancelled, or its launcher lost the
lease or crashed between the commit and the release) is released by whichever launcher of the
installation lists it next; a live one is deleted first. A watch on the tracked Pods wakes the
step loop as soon as one of them changes; the relist each ``poll_interval_seconds`` stays the
safety net, so a broken watch costs latency, not correctness.

Hooks (``LaunchHooks``, optional): the host may give each Pod an owner reference (the operator
points it at the run's user JobRun, else the job's ScheduledJob, when one exists) and is told
of every attempt whose Pod ended once its finish committed (the operator records Kubernetes
Events from it). Without hooks (``sundial pod-launcher``) neither happens.

Restart-safe: state lives in PostgreSQL and on the Pods. A launcher restarted with the same
worker id adopts the runs it still holds and their Pods. It creates the Pod only if the crash
fell between claim and create: the run's recorded Pod name (``pod_runs.record_pod``, written
after the create succeeded) says whether the current attempt's Pod was created, and a Pod that
was created and is gone now was deleted while the launcher was down — handled as a live
launcher handles a gone Pod (``podDeletionPolicy``, or cancelled with its deleted owner, which
the hooks look up again: ``former_owner``), never
created again under the same attempt. A crash between the create and the record leaves no
name, but the Pod exists under its deterministic name and is adopted. A launcher that does
not come back loses its leases; the reaper returns the runs to pending and the next claim's
start deletes the old attempt's Pod first. Stopping the launcher leaves Pods running, on purpose.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence

from kubernetes import client

from sundial.attempt import finishes, heartbeats
from sundial.observability import pod_metrics
from sundial.pods import manifests, pod_api
from sundial.pods.launch.attempt import PodAttempt
from sundial.pods.launch.ending import Ending
from sundial.pods.launch.observing import Observing
from sundial.pods.launch.settings import (
    OWNER_DELETED,
    AttemptEnd,
    LauncherSettings,
    LaunchHooks,
)
from sundial.pods.launch.starting import Starting
from sundial.pods.launch.state import LaunchState
from sundial.scheduling import clock as clocks
from sundial.store import claims, pod_runs
from sundial.store.pool import Pool

__all__ = [
    "OWNER_DELETED",
    "AttemptEnd",
    "LaunchHooks",
    "LauncherSettings",
    "PodLauncher",
    "release_all",
]

log = logging.getLogger("sundial.pod_launcher")


class PodLauncher:
    """Claims pod-mode runs and drives one Pod per attempt; see the module docstring."""

    def __init__(
        self,
        pool: Pool,
        api_client: client.ApiClient,
        settings: LauncherSettings,
        *,
        clock: clocks.Clock | None = None,
        hooks: LaunchHooks | None = None,
    ) -> None:
        self._pool = pool
        self._api_client = api_client
        self._settings = settings
        self._clock = clock or clocks.SystemClock()
        state = LaunchState(
            pool,
            pod_api.PodApi(api_client, delete_grace_seconds=settings.delete_grace_seconds),
            settings,
            self._clock,
            hooks,
        )
        self._pods = state.pods
        self._attempts = state.attempts  # run id -> the attempt we hold
        self._ending = Ending(state)
        self._starting = Starting(state, self._ending)
        self._observing = Observing(state, self._ending)
        self._heartbeats = heartbeats.Heartbeats(
            lambda: self._pool,
            settings.worker,
            self._attempts,
            lease_seconds=settings.lease_seconds,
            clock=lambda: self._clock.now().timestamp(),
        )
        self._adopted = False

    @property
    def held(self) -> dict[int, int]:
        """Run id -> attempt of every run this launcher holds now."""
        return {run_id: a.run.attempt for run_id, a in self._attempts.items()}

    async def run(self, stop: asyncio.Event) -> None:
        """Step until ``stop`` is set; Pods and leases are left as they are."""
        changed = asyncio.Event()
        watch = None
        if self._settings.watch:
            watch = pod_api.PodWatch(
                self._api_client,
                self._settings.namespaces,
                pod_api.tracked_selector(self._settings.manifest.instance),
                changed,
            )
        try:
            while not stop.is_set():
                changed.clear()
                try:
                    await self.step()
                except Exception:  # a failed step is retried; state is in PostgreSQL and Pods
                    log.exception("pod launcher step failed")
                await self._wait(stop, changed)
        finally:
            if watch is not None:
                await asyncio.to_thread(watch.close)

    async def _wait(self, stop: asyncio.Event, changed: asyncio.Event) -> None:
        """Until the poll interval passes, ``stop`` is set, or the watch saw a change (but at
        least ``min_step_interval_seconds``)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._settings.min_step_interval_seconds):
                await stop.wait()  # not wait_for, which can lose a cancel
            return
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(changed.wait())]
        try:
            await asyncio.wait(
                waiters,
                timeout=self._settings.poll_interval_seconds,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def step(self) -> None:
        if not self._adopted:
            await self._adopt()
            self._adopted = True
        await self._heartbeat()
        await self._claim()
        await self._starting.start_pending()
        await self._observing.observe()

    # -- leases ------------------------------------------------------------------------------

    async def _adopt(self) -> None:
        held = await pod_runs.held_runs(self._pool, self._settings.worker)
        if held:
            log.info("adopting %d runs held by %s", len(held), self._settings.worker)
            await self._track(
                [h.run for h in held],
                adopted=True,
                recorded={h.run.id: (h.recorded_pod_name, h.recorded_pod_uid) for h in held},
            )

    async def _heartbeat(self) -> None:
        """Extend the leases that are due; a run another attempt owns now loses its Pod, a run
        someone cancelled loses its Pod and ends cancelled."""
        beat = await self._heartbeats.beat()
        for attempt in beat.lost:
            self._attempts.pop(attempt.run.id, None)
            log.warning("run %s attempt %s: lease lost; deleting its Pod", *attempt.key)
            await self._pods.delete(attempt.namespace, attempt.pod_name)
        cancelled = [a for a in beat.cancel_requested if self._attempts.pop(a.run.id, None) is a]
        for attempt in cancelled:
            await self._pods.delete(attempt.namespace, attempt.pod_name)
        if cancelled:
            await self._ending.finish([(a, finishes.cancelled(a.run), None) for a in cancelled])

    # -- claiming (starting, observing and ending are in pods.launch) --------------------

    async def _claim(self) -> None:
        free = self._settings.max_pods - len(self._attempts)
        if free <= 0:
            return
        cap = self._settings.max_pods_per_namespace
        if cap is None:
            limit = min(free, self._settings.claim_batch)
            await self._claim_some(limit, reserved=self._reserved(free, limit))
            return
        # A claim may hand all it claims to one namespace. So: the namespaces this launcher
        # holds no Pod of, up to ``cap`` at once; then those it holds some of, up to the least
        # room any of them has left. Neither claim can take a namespace past ``cap``.
        held = self._held()
        room = {namespace: cap - count for namespace, count in held.items()}
        limit = min(free, self._settings.claim_batch, cap)
        free -= await self._claim_some(
            limit, excluded=sorted(room), held=held, reserved=self._reserved(free, limit)
        )
        partly = sorted(namespace for namespace, left in room.items() if left > 0)
        if partly and free > 0:
            least = min(room[namespace] for namespace in partly)
            limit = min(free, self._settings.claim_batch, least)
            await self._claim_some(limit, only=partly, reserved=self._reserved(free, limit))

    def _reserved(self, free: int, limit: int) -> int:
        """Of a claim of ``limit`` with ``free`` Pods left, those that only a namespace behind
        the one this launcher holds most of may take (``LauncherSettings.reserved_pods``): a
        quieter namespace's Pod starts at once beside a flood of long ones. None where the
        launcher serves one namespace or may hold fewer than ``claims.RESERVE_FROM_SLOTS`` Pods;
        Pods free beyond this claim's limit are kept already."""
        served = self._settings.namespaces
        if self._settings.max_pods < claims.RESERVE_FROM_SLOTS or (
            served is not None and len(served) < 2
        ):
            return 0
        return max(0, min(limit, self._settings.reserved_pods - (free - limit)))

    def _held(self) -> Counter[str]:
        """The attempts held per namespace: the per-namespace Pod limit, and a claim's fair
        share (``claims.claim``'s ``held``). Counted when asked: a launcher holds at most
        ``max_pods`` (hundreds), and claims a few times a second."""
        return Counter(a.run.namespace for a in self._attempts.values() if a.run.namespace)

    async def _claim_some(
        self,
        limit: int,
        *,
        excluded: Sequence[str] = (),
        only: Sequence[str] | None = None,
        held: Counter[str] | None = None,
        reserved: int = 0,
    ) -> int:
        """Claim up to ``limit`` pod runs of the namespaces served (``only`` these, none of
        ``excluded``) and track them; how many were claimed. ``held``: ``_held()`` if the
        caller has just counted it; ``reserved``: ``_reserved``."""
        sent = self._clock.now().timestamp()  # no later than the lease's start
        claimed = await claims.claim(
            self._pool,
            self._settings.worker,
            queues=self._settings.queues,
            execution_models=("pod",),
            limit=limit,
            lease_seconds=self._settings.lease_seconds,
            namespaces=self._settings.namespaces if only is None else only,
            excluded_namespaces=excluded,
            weights=self._settings.namespace_weights,
            held=self._held() if held is None else held,
            reserved=reserved,
        )
        if claimed:
            lease = self._settings.lease_seconds
            for run in claimed:  # started_at = lease_until - lease (claims.claim)
                lag = (run.lease_until - run.run_at).total_seconds() - lease
                pod_metrics.SCHEDULE_LAG.labels(run.queue).observe(lag if lag > 0.0 else 0.0)
            await self._track(claimed, extended_at=sent)
        return len(claimed)

    async def _track(
        self,
        runs: Sequence[claims.ClaimedRun],
        *,
        adopted: bool = False,
        recorded: Mapping[int, tuple[str | None, str | None]] | None = None,
        extended_at: float = -math.inf,
    ) -> None:
        """Hold ``runs``: claimed by this launcher when their leases were set (no earlier than
        ``extended_at``), or ``adopted`` from its previous life, whose leases are due now."""
        contexts = await pod_runs.launch_context(self._pool, [run.id for run in runs])
        now = self._clock.now()
        instance = self._settings.manifest.instance
        cancelled = []
        for run in runs:
            context = contexts[run.id]
            name = manifests.pod_name(instance, context.job_name, run.id, run.attempt)
            attempt = PodAttempt(run, context, name, context.namespace, now)
            attempt.extended_at = extended_at
            attempt.look_first = adopted or run.attempt > 1
            attempt.adopted = adopted
            recorded_name, recorded_uid = (recorded or {}).get(run.id, (None, None))
            attempt.pod_recorded = recorded_name == name
            if attempt.pod_recorded:
                attempt.recorded_uid = recorded_uid
            if run.cancel_requested:
                cancelled.append((attempt, finishes.cancelled(run), None))
                continue
            self._attempts[run.id] = attempt
        await self._ending.finish(cancelled)


async def release_all(
    api_client: client.ApiClient, namespaces: Sequence[str] | None, instance: str
) -> list[str]:
    """Take the outcome finalizer off every tracked Pod of the installation ``instance``; the
    ``namespace/name`` of each. For an uninstall: once no launcher runs, nothing else removes
    it, and a deleted Pod would wait for ever. Outcomes not recorded by then are lost; the
    runs stay as PostgreSQL has them (``sundial runs cancel`` ends one)."""
    pods = pod_api.PodApi(api_client, delete_grace_seconds=0)
    tracked = await pods.list(namespaces, pod_api.tracked_selector(instance))
    names = [(str(p["metadata"]["namespace"]), str(p["metadata"]["name"])) for p in tracked]
    for namespace, name in names:
        await pods.release(namespace, name)
    return [f"{namespace}/{name}" for namespace, name in names]
