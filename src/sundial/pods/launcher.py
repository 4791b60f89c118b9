"""The pod launcher: pod-mode runs claimed from the store, one Pod per attempt, ends mapped back.

A ``PodLauncher`` is an asyncio component with no kopf in it: the operator hosts it, and
``sundial pod-launcher`` runs it alone. Each ``step``:

1. **Heartbeat**, in one statement, every held run whose lease was last extended a third of a
   lease ago (``attempt.heartbeats``, as the runner does). A run whose lease was lost is no
   longer ours: its Pod is deleted and its outcome ignored. A run with a cancel request has its
   Pod deleted (with a grace period) and is finished cancelled.
2. **Claim** pod-mode runs (``execution_models=('pod',)``) up to free slots, and **start**
   each attempt: first every Pod of an *older* attempt of the same run that has not ended is
   deleted, and the new Pod is created only once they are terminal or gone (one attempt's Pod
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
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sundial.api import common
from sundial.attempt import finishes, heartbeats
from sundial.observability import pod_metrics
from sundial.pods import failure_policy, manifests, outcomes, pod_api, pod_security
from sundial.pods.outcomes import PodOutcome, PodState
from sundial.scheduling import clock as clocks
from sundial.scheduling import failures, run_state
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

_PERMANENT_CREATE_STATUSES = frozenset({400, 422})

#: The reason recorded for a Pod that went with its deleted owner (``deleted_with_owner``).
OWNER_DELETED = "OwnerDeleted"


@dataclass(frozen=True)
class LauncherSettings:
    worker: str
    queues: Sequence[str] = ("default",)
    #: Where the launcher looks for its Pods; None: every namespace (a cluster-wide LIST).
    namespaces: Sequence[str] | None = None
    lease_seconds: float = claims.DEFAULT_LEASE_SECONDS
    poll_interval_seconds: float = 1.0
    #: Attempts held at once (Pods live or starting).
    max_pods: int = 200
    #: Attempts held at once in one namespace (None: only ``max_pods``), so one tenant whose
    #: Pods run long cannot hold every Pod slot.
    max_pods_per_namespace: int | None = None
    claim_batch: int = 50
    #: Used when the job sets no startTimeoutSeconds.
    default_start_timeout_seconds: float = 300.0
    delete_grace_seconds: int = 5
    #: Our clock's timeout fires this long after activeDeadlineSeconds should have.
    timeout_slack_seconds: float = 5.0
    #: How long past a deleted Pod's grace period the kubelet's final status is waited for
    #: (then the Pod is GONE, reason PodDeleted, with no exit code). A loaded node reports late:
    #: 20 Pods deleted at once at a load of 20-30 reported 2.7-10.8 s after the delete.
    deletion_slack_seconds: float = outcomes.DELETION_SLACK.total_seconds()
    manifest: manifests.ManifestSettings = field(default_factory=manifests.ManifestSettings)
    #: How long a namespace's Pod Security label and allowed ServiceAccounts are trusted.
    namespace_ttl_seconds: float = 30.0
    #: Follow the tracked Pods with a watch that wakes the loop (off: poll only).
    watch: bool = True
    #: Steps woken by the watch are at least this far apart, so a burst of Pod events costs a
    #: few relists, not one per event.
    min_step_interval_seconds: float = 0.1
    #: Finalizer releases in flight at once.
    release_concurrency: int = 16


@dataclass(frozen=True)
class AttemptEnd:
    """An attempt whose Pod ended (or never started), after its finish committed."""

    run_id: int
    attempt: int
    job_id: str
    namespace: str
    job_name: str
    pod_name: str
    outcome: PodOutcome
    #: The run's state after the finish: ``pending``/``retry_wait`` (retried), ``completed``,
    #: ``failed``, ``dead_lettered`` ...; None if the store did not say.
    run_state: str | None
    #: The run's idempotency key (per run; a user JobRun's run is found by it).
    idempotency_key: str | None = None


class LaunchHooks(Protocol):
    """What a host adds to the launcher (see the module docstring)."""

    async def owner(
        self, namespace: str, job_name: str, job_id: str, idempotency_key: str
    ) -> Mapping[str, Any] | None:
        """The ownerReference for the Pods of the run with ``idempotency_key`` of the job, or
        None for none."""

    async def former_owner(
        self, namespace: str, job_name: str, job_id: str, idempotency_key: str
    ) -> Mapping[str, Any] | None:
        """The ownerReference a Pod deleted while no launcher ran most likely had, looked up
        afresh (it went with the Pod): the run's user JobRun even while it is being deleted,
        else as ``owner``. Asked once per such Pod, after a restart, so it may LIST."""

    async def deleted_with_owner(self, namespace: str, owner: Mapping[str, Any]) -> str | None:
        """For a Pod that is gone and had the ownerReference ``owner``: the reason its run is
        cancelled if the Pod went because its owner was deleted (the owner is gone or being
        deleted), else None (the job's ``podDeletionPolicy`` applies)."""

    async def ended(self, end: AttemptEnd) -> None:
        """Called once per committed end of an attempt this launcher observed; never raises."""

    async def forged(self, pod: Mapping[str, Any], run_id: int, attempt: int) -> None:
        """Called once per Pod that carries the labels of an attempt this launcher holds but is
        not that attempt's Pod (another namespace, another name, another UID): it changed
        nothing, and the host reports it (a Warning Event on it); never raises."""


@dataclass
class _Attempt:
    run: claims.ClaimedRun
    context: pod_runs.LaunchContext
    pod_name: str
    namespace: str
    claimed_at: datetime
    created_at: datetime | None = None  # None until the Pod exists
    #: The UID of the Pod this launcher created (from the create's answer) or adopted (found
    #: under the attempt's own name in the run's namespace). Only that object's status is the
    #: attempt's outcome: labels alone can be written by anyone who may create a Pod anywhere.
    pod_uid: str | None = None
    #: The Pod's ``status.startTime`` once the kubelet has taken it on: our own timeout counts
    #: from it, as ``activeDeadlineSeconds`` does.
    started_at: datetime | None = None
    #: How the attempt ended, kept until its finish commits: a failed write is retried on the
    #: next step with the same outcome, even once the Pod has been deleted.
    ended: PodOutcome | None = None
    #: Look for existing Pods of the run before creating one: any retry (an older attempt's
    #: Pod may live), an adopted run, or a create that met a 409. A first attempt just claimed
    #: cannot have a Pod yet, which saves a LIST per launch.
    look_first: bool = True
    #: The ownerReference its Pod was created with (or adopted with), if any.
    owner: Mapping[str, Any] | None = None
    #: Set when the Pod went with its deleted owner: the attempt ends cancelled with this.
    cancel_reason: str | None = None
    #: An adopted attempt whose Pod the store says was created (its name is recorded): if it
    #: is not found, it was deleted, and is not created again.
    pod_recorded: bool = False
    #: The UID recorded with that name, when it was: only that object is the attempt's Pod.
    recorded_uid: str | None = None
    #: Taken over from a launcher with the same worker id (a restart), not claimed now.
    adopted: bool = False
    #: Annotated on the Pod this launcher creates (``manifests.ANNOTATION_LAUNCH_ID``).
    launch_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    #: The earliest delete request of its Pod seen on a step: the kubelet's own last delete
    #: overwrites the Pod's record of it (``outcomes.classify``, docs/adr/0033).
    delete_requested_at: datetime | None = None
    #: The launcher's clock (epoch seconds) when the claim or the last heartbeat that extended
    #: the lease was sent (``attempt.heartbeats``); an adopted attempt is due at once.
    extended_at: float = -math.inf

    @property
    def key(self) -> tuple[int, int]:
        return (self.run.id, self.run.attempt)


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
        self._hooks = hooks
        self._api_client = api_client
        self._pods = pod_api.PodApi(api_client, delete_grace_seconds=settings.delete_grace_seconds)
        self._settings = settings
        self._clock = clock or clocks.SystemClock()
        self._attempts: dict[int, _Attempt] = {}  # run id -> the attempt we hold
        self._heartbeats = heartbeats.Heartbeats(
            lambda: self._pool,
            settings.worker,
            self._attempts,
            lease_seconds=settings.lease_seconds,
            clock=lambda: self._clock.now().timestamp(),
        )
        self._adopted = False
        self._forgeries_reported: set[str] = set()  # Pod UIDs, reported once each
        #: Namespace objects read for their Pod Security level: name -> (read at, body).
        self._namespaces: dict[str, tuple[datetime, Mapping[str, Any] | None]] = {}

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
        await self._start_pending()
        await self._observe()

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
            await self._finish([(a, finishes.cancelled(a.run), None) for a in cancelled])

    # -- starting attempts -----------------------------------------------------------------

    async def _claim(self) -> None:
        free = self._settings.max_pods - len(self._attempts)
        if free <= 0:
            return
        cap = self._settings.max_pods_per_namespace
        if cap is None:
            await self._claim_some(min(free, self._settings.claim_batch))
            return
        # A claim may hand all it claims to one namespace. So: the namespaces this launcher
        # holds no Pod of, up to ``cap`` at once; then those it holds some of, up to the least
        # room any of them has left. Neither claim can take a namespace past ``cap``.
        held = Counter(a.run.namespace for a in self._attempts.values() if a.run.namespace)
        room = {namespace: cap - count for namespace, count in held.items()}
        free -= await self._claim_some(
            min(free, self._settings.claim_batch, cap), excluded=sorted(room)
        )
        partly = sorted(namespace for namespace, left in room.items() if left > 0)
        if partly and free > 0:
            least = min(room[namespace] for namespace in partly)
            await self._claim_some(min(free, self._settings.claim_batch, least), only=partly)

    async def _claim_some(
        self, limit: int, *, excluded: Sequence[str] = (), only: Sequence[str] | None = None
    ) -> int:
        """Claim up to ``limit`` pod runs of the namespaces served (``only`` these, none of
        ``excluded``) and track them; how many were claimed."""
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
            attempt = _Attempt(run, context, name, context.namespace, now)
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
        await self._finish(cancelled)

    async def _start_pending(self) -> None:
        starting = [a for a in self._attempts.values() if a.created_at is None]
        if starting:
            await asyncio.gather(*(self._start(attempt) for attempt in starting))

    async def _start(self, attempt: _Attempt) -> None:
        """Create the attempt's Pod once no older attempt's Pod of the run is alive."""
        run_pods = []
        if attempt.look_first:
            run_pods = await self._pods.list(
                [attempt.namespace], f"{manifests.LABEL_RUN_ID}={attempt.run.id}"
            )
        older_alive = False
        for pod in run_pods:
            pod_attempt = pod_api.attempt_of(pod)
            if pod_attempt == attempt.run.attempt:
                if pod["metadata"].get("name") != attempt.pod_name:
                    await self._report_forged(attempt, pod)
                    continue
                if not self._made_by_us(attempt, pod):
                    await self._report_forged(attempt, pod)
                    if attempt.pod_recorded:
                        continue  # ours was created, then deleted: gone, below
                    await self._refuse(
                        attempt,
                        "PodNameTaken",
                        f"a Pod named {attempt.pod_name} exists in namespace"
                        f" {attempt.namespace} that Sundial did not create for this attempt:"
                        " the run cannot have its Pod under that name",
                    )
                    return
                self._adopt_pod(attempt, pod)
                return
            if pod_attempt < attempt.run.attempt and not pod_api.ended(pod):
                older_alive = True
                log.info(
                    "run %s: deleting the Pod of stale attempt %s", attempt.run.id, pod_attempt
                )
                await self._pods.delete(attempt.namespace, pod["metadata"]["name"])
        if attempt.pod_recorded:
            await self._adopt_gone_pod(attempt)
            return
        if older_alive:
            return  # created on a later step, once the old Pod is terminal or gone
        spec = manifests.LaunchSpec(
            run_id=attempt.run.id,
            attempt=attempt.run.attempt,
            job_id=str(attempt.run.job_id),
            job_namespace=attempt.namespace,
            job_name=attempt.context.job_name,
            handler=attempt.run.handler,
            template=attempt.context.pod_template,
            args=attempt.run.args if isinstance(attempt.run.args, Mapping) else {},
            idempotency_key=attempt.run.idempotency_key,
            fire_time=attempt.run.fire_time,
            run_at=attempt.run.run_at,
            timeout_seconds=_timeout_seconds(attempt.run),
            oom_kills_before=attempt.context.oom_kills,
            oom_memory_increase_percent=attempt.context.oom_memory_increase_percent,
            oom_max_memory_bytes=attempt.context.oom_max_memory_bytes,
            owner=await self._owner(attempt),
            launch_id=attempt.launch_id,
        )
        attempt.owner = spec.owner
        manifest = manifests.pod_manifest(spec, self._settings.manifest)
        refusal = await self._pod_security_refusal(attempt.namespace, manifest["spec"])
        if refusal is not None:
            await self._refuse(attempt, "PodSecurity", refusal)
            return
        try:
            attempt.pod_uid = await self._pods.create(attempt.namespace, manifest)
        except ApiException as error:
            if error.status == 409:
                attempt.look_first = True  # it exists: adopted on the next step
                return
            if error.status == 403 and "error looking up service account" in str(error.body):
                account = manifest["spec"].get("serviceAccountName") or "default"
                await self._refuse(
                    attempt,
                    "ServiceAccountMissing",
                    f"the ServiceAccount {account!r} of job Pods does not exist in namespace"
                    f" {attempt.namespace}: add the namespace to the chart's jobPods.namespaces"
                    f" (or watchNamespaces), or create {account!r} there with"
                    " automountServiceAccountToken: false",
                )
                return
            if error.status in _PERMANENT_CREATE_STATUSES or (
                error.status == 403 and "PodSecurity" in str(error.body)
            ):
                await self._reject(attempt, error)
                return
            log.warning("run %s: creating its Pod failed (%s); retrying", attempt.run.id, error)
            await self._fail_if_never_started(attempt)
            return
        attempt.created_at = self._clock.now()
        recorded = await pod_runs.record_pod(
            self._pool,
            self._settings.worker,
            attempt.run.id,
            attempt.run.attempt,
            pod_name=attempt.pod_name,
            pod_uid=attempt.pod_uid,
        )
        if not recorded:
            self._attempts.pop(attempt.run.id, None)
            await self._pods.delete(attempt.namespace, attempt.pod_name)

    async def _owner(self, attempt: _Attempt, *, former: bool = False) -> Mapping[str, Any] | None:
        if self._hooks is None:
            return None
        lookup = self._hooks.former_owner if former else self._hooks.owner
        try:
            return await lookup(
                attempt.namespace,
                attempt.context.job_name,
                str(attempt.run.job_id),
                attempt.run.idempotency_key,
            )
        except Exception:  # an owner reference is a convenience: launch without one
            log.exception("run %s: could not resolve the Pod's owner", attempt.run.id)
            return None

    async def _adopt_gone_pod(self, attempt: _Attempt) -> None:
        """An adopted attempt whose Pod was created (the store recorded it) and is gone: it
        was deleted while no launcher watched. ``_observe`` ends it as a gone Pod, as if this
        launcher had seen it go; its owner is looked up again for ``_gone_with_owner``, since
        the ownerReference went with the Pod."""
        log.info(
            "run %s attempt %s: its Pod %s was deleted while the launcher was away",
            attempt.run.id,
            attempt.run.attempt,
            attempt.pod_name,
        )
        attempt.owner = await self._owner(attempt, former=True)
        attempt.created_at = self._clock.now()
        # A Pod made later under the same name is not this one: only the recorded UID is.
        attempt.pod_uid = attempt.recorded_uid

    def _made_by_us(self, attempt: _Attempt, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod``, under the attempt's own name in the run's namespace, is the Pod a
        launcher made for this attempt. A UID recorded with the name decides. Else the launch
        id this launcher annotated (a create whose answer was lost). Else, for an attempt taken
        over after a restart whose create was never recorded, the name is all there is."""
        uid = pod_api.uid_of(pod)
        if attempt.recorded_uid is not None:
            return uid == attempt.recorded_uid
        annotations = pod.get("metadata", {}).get("annotations") or {}
        if annotations.get(manifests.ANNOTATION_LAUNCH_ID) == attempt.launch_id:
            return True
        return attempt.adopted

    def _adopt_pod(self, attempt: _Attempt, pod: Mapping[str, Any]) -> None:
        attempt.pod_uid = pod_api.uid_of(pod)
        references = pod.get("metadata", {}).get("ownerReferences") or ()
        attempt.owner = references[0] if references else None
        created = pod.get("metadata", {}).get("creationTimestamp")
        attempt.created_at = (
            datetime.fromisoformat(str(created).replace("Z", "+00:00"))
            if created
            else self._clock.now()
        )

    async def _pod_security_refusal(
        self, namespace: str, pod_spec: Mapping[str, Any]
    ) -> str | None:
        """Why the Pod may not be created in ``namespace`` (``pod_security``), or None. The
        namespace is read at most every ``namespace_ttl_seconds``; unreadable, it counts as
        unlabelled: restricted, and no other ServiceAccount."""
        now = self._clock.now()
        cached = self._namespaces.get(namespace)
        if (
            cached is None
            or (now - cached[0]).total_seconds() > self._settings.namespace_ttl_seconds
        ):
            try:
                body = await self._pods.namespace(namespace)
            except Exception:
                log.exception("could not read namespace %s; holding it to restricted", namespace)
                body = None
            cached = (now, body)
            self._namespaces[namespace] = cached
        level, problem = pod_security.level_of(cached[1])
        if problem is not None:
            log.warning("namespace %s: %s", namespace, problem)
        found = pod_security.violations(
            pod_spec,
            level,
            installation_service_account=self._settings.manifest.service_account_name,
            allowed_accounts=pod_security.allowed_service_accounts(cached[1]),
        )
        return pod_security.describe(found, level, namespace) if found else None

    async def _reject(self, attempt: _Attempt, error: ApiException) -> None:
        await self._refuse(
            attempt, "PodRejected", f"the apiserver refused the Pod: {pod_api.api_message(error)}"
        )

    async def _refuse(self, attempt: _Attempt, reason: str, message: str) -> None:
        """End the attempt's run failed (class ``permanent``: a retry would be refused the
        same way) without a Pod, with ``reason`` and ``message`` on the run."""
        log.warning("run %s: its Pod is refused: %s", attempt.run.id, message)
        self._attempts.pop(attempt.run.id, None)
        await pod_runs.record_pod(
            self._pool,
            self._settings.worker,
            attempt.run.id,
            attempt.run.attempt,
            pod_name=attempt.pod_name,
            pod_uid=attempt.pod_uid,
            reason=reason,
        )
        attempt.ended = PodOutcome(PodState.NEVER_STARTED, reason, message=message)
        outcome = finishes.failed(attempt.run, message, failures.FailureClass.PERMANENT)
        await self._finish([(attempt, outcome, None)])

    async def _fail_if_never_started(self, attempt: _Attempt) -> None:
        limit = self._start_timeout(attempt)
        if self._clock.now() - attempt.claimed_at > limit:
            outcome = PodOutcome(
                PodState.NEVER_STARTED,
                "StartTimeout",
                message=f"the Pod could not be created within {limit.total_seconds():.0f} s",
            )
            self._attempts.pop(attempt.run.id, None)
            attempt.ended = outcome
            await self._end([(attempt, outcome)])

    # -- observing Pods --------------------------------------------------------------------

    async def _observe(self) -> None:
        """Classify the Pods of the attempts we hold; delete live Pods of stale attempts.

        Reads only what is unaccounted for: the LIST selects the tracked Pods (live, or ended
        with their outcome not yet recorded), not the released ones the mirror keeps for the
        JobRun window, which can outnumber them a hundred to one. An attempt whose Pod is not
        in the list was released or is gone (a Pod created before the finalizer existed, or
        one whose finalizer someone removed); one GET by its name says which.
        """
        pods = await self._pods.list(
            self._settings.namespaces, pod_api.tracked_selector(self._settings.manifest.instance)
        )
        by_attempt: dict[tuple[int, int], dict[str, Any] | None] = {}
        for listed in pods:
            key = (pod_api.run_of(listed), pod_api.attempt_of(listed))
            if self._forged(listed):
                await self._report_forged(self._attempts[key[0]], listed)
                continue
            by_attempt[key] = listed
        watched = [
            a for a in self._attempts.values() if a.created_at is not None and a.ended is None
        ]
        missing = [a for a in watched if a.key not in by_attempt]
        if missing:
            found = await self._pods.get_many([(a.namespace, a.pod_name) for a in missing])
            for absent, got in zip(missing, found, strict=True):
                if got is not None and not _is_its_pod(absent, got):
                    # Its name, in its namespace, but another object: the Pod we created was
                    # deleted and someone made this one. Ours is gone.
                    await self._report_forged(absent, got)
                    got = None
                by_attempt[absent.key] = got
        now = self._clock.now()
        ended: list[tuple[_Attempt, PodOutcome]] = []
        for attempt in list(self._attempts.values()):
            if attempt.created_at is None:
                continue
            if attempt.ended is not None:
                ended.append((attempt, attempt.ended))
                continue
            pod = by_attempt.get(attempt.key)
            _remember_delete_request(attempt, pod)
            outcome = outcomes.classify(
                pod,
                now=now,
                start_timeout=self._start_timeout(attempt),
                deletion_slack=timedelta(seconds=self._settings.deletion_slack_seconds),
                delete_requested_at=attempt.delete_requested_at,
            )
            attempt.started_at = outcomes.started_at(pod) or attempt.started_at
            deadline = self._deadline(attempt, attempt.created_at)
            if outcome.state is PodState.GONE:
                outcome = await self._gone_with_owner(attempt, outcome)
            if not outcome.state.terminal and now > deadline:
                outcome = PodOutcome(
                    PodState.DEADLINE_EXCEEDED,
                    "DeadlineExceeded",
                    message=f"running past timeoutSeconds ({_timeout_seconds(attempt.run)} s)",
                )
            if outcome.state.terminal:
                attempt.ended = outcome
                ended.append((attempt, outcome))
        # Decided before the ends: a Pod released by its own finish below is not swept again.
        # A forged Pod is neither held nor swept: it is not ours to delete or release.
        unheld = [pod for pod in pods if not self._holds(pod) and not self._forged(pod)]
        await self._end(ended)
        await self._sweep(unheld)

    async def _gone_with_owner(self, attempt: _Attempt, outcome: PodOutcome) -> PodOutcome:
        """``outcome`` (GONE), or an ``OWNER_DELETED`` one if the hooks say the Pod went with
        its deleted owner; then the attempt is cancelled (``cancel_reason``)."""
        if self._hooks is None or attempt.owner is None:
            return outcome
        try:
            reason = await self._hooks.deleted_with_owner(attempt.namespace, attempt.owner)
        except Exception:  # unknown: let the next step ask again rather than guess a retry
            log.exception("run %s: could not read the owner of its gone Pod", attempt.run.id)
            return PodOutcome(PodState.RUNNING, "Unknown")
        if reason is None:
            return outcome
        attempt.cancel_reason = reason
        return PodOutcome(PodState.GONE, OWNER_DELETED, message=reason)

    async def _end(self, ended: Sequence[tuple[_Attempt, PodOutcome]]) -> None:
        results: list[tuple[_Attempt, claims.Finish, failure_policy.Verdict | None]] = []
        for attempt, outcome in ended:
            if outcome.state in (PodState.NEVER_STARTED, PodState.DEADLINE_EXCEEDED):
                await self._pods.delete(attempt.namespace, attempt.pod_name)
            verdict = failure_policy.decide(
                attempt.context.failure_policy,
                outcome,
                pod_deletion_policy=attempt.context.pod_deletion_policy,
            )
            await pod_runs.record_pod(
                self._pool,
                self._settings.worker,
                attempt.run.id,
                attempt.run.attempt,
                pod_name=attempt.pod_name,
                pod_uid=attempt.pod_uid,
                exit_code=outcome.exit_code,
                reason=outcome.reason,
            )
            if attempt.cancel_reason is not None:
                cancelled = finishes.cancelled(attempt.run, attempt.cancel_reason)
                results.append((attempt, cancelled, None))
            elif verdict.failure is None:
                results.append((attempt, finishes.succeeded(attempt.run), verdict))
            elif verdict.failure is failures.FailureClass.CANCELLED:
                # The same fenced end as a cancel request: state cancelled, dependents cancelled.
                reason = f"{outcome.describe()} (podDeletionPolicy: Cancel)"
                results.append((attempt, finishes.cancelled(attempt.run, reason), verdict))
            else:
                error = outcome.describe()
                if verdict.action:
                    error = f"{error} (failurePolicy: {verdict.action})"
                result = finishes.failed(attempt.run, error, verdict.failure)
                results.append((attempt, result, verdict))
            log.info(
                "run %s attempt %s: Pod %s ended %s",
                attempt.run.id,
                attempt.run.attempt,
                attempt.pod_name,
                outcome.describe(),
            )
        await self._finish(results)

    async def _finish(
        self,
        results: Sequence[tuple[_Attempt, claims.Finish, failure_policy.Verdict | None]],
    ) -> None:
        if not results:
            return
        result = await claims.finish(
            self._pool, self._settings.worker, [outcome for _, outcome, _ in results]
        )
        # Committed (or lost to a newer attempt): nothing more is to be read off these Pods.
        await self._release(
            [(a.namespace, a.pod_name) for a, _, _ in results if a.created_at is not None]
        )
        for attempt, outcome, verdict in results:
            if self._attempts.get(attempt.run.id) is attempt:
                del self._attempts[attempt.run.id]
            if outcome.run_id in result.lost:
                log.warning("run %s attempt %s: finish discarded (lease lost)", *attempt.key)
            else:
                if verdict is not None and verdict.quarantine:
                    await pod_runs.quarantine_schedule(
                        self._pool, attempt.run.id, f"failurePolicy Quarantine: {outcome.error}"
                    )
                await self._report_end(attempt, result.states.get(attempt.run.id))

    async def _report_end(self, attempt: _Attempt, run_state: str | None) -> None:
        if self._hooks is None or attempt.ended is None:
            return
        end = AttemptEnd(
            run_id=attempt.run.id,
            attempt=attempt.run.attempt,
            job_id=str(attempt.run.job_id),
            namespace=attempt.namespace,
            job_name=attempt.context.job_name,
            pod_name=attempt.pod_name,
            outcome=attempt.ended,
            run_state=run_state,
            idempotency_key=attempt.run.idempotency_key,
        )
        try:
            await self._hooks.ended(end)
        except Exception:  # reporting never undoes a committed finish
            log.exception("run %s attempt %s: reporting its end failed", *attempt.key)

    async def _release(self, pods: Sequence[tuple[str, str]]) -> None:
        """Remove the outcome finalizer of ``pods`` ((namespace, name)), a few at a time. A
        release that fails is logged: the Pod stays tracked, and the next step's sweep
        releases it once it sees the attempt is no longer held."""
        if not pods:
            return
        limit = asyncio.Semaphore(self._settings.release_concurrency)

        async def release(namespace: str, name: str) -> None:
            async with limit:
                try:
                    await self._pods.release(namespace, name)
                except Exception:
                    log.exception("could not release Pod %s/%s; retried later", namespace, name)

        await asyncio.gather(*(release(namespace, name) for namespace, name in pods))

    async def _sweep(self, pods: Sequence[Mapping[str, Any]]) -> None:
        """``pods``: tracked Pods whose attempt this launcher does not hold. Delete the live ones
        that are stale, and release every one whose attempt is no longer current.

        An attempt is current while its run is running under that attempt (held by this
        launcher while adopting, or by another one); a Pod of a newer attempt than the store
        showed is a claim newer than our read, and is left alone too. Everything else is done:
        the run finished, moved on, or went back to pending after a lost lease. An ended Pod of
        a stale attempt is released and left for the mirror's sweep
        (docs/adr/0011-finished-pod-gc.md)."""
        candidates = list(pods)
        if not candidates:
            return
        current = await pod_runs.current_attempts(
            self._pool, [pod_api.run_of(p) for p in candidates]
        )
        done = []
        for pod in candidates:
            run = current.get(pod_api.run_of(pod))
            pod_attempt = pod_api.attempt_of(pod)
            if (
                run is not None
                and run.attempt == pod_attempt
                and run.state == run_state.RunState.RUNNING
            ):
                continue  # current: held by this launcher (being adopted) or another one
            if run is not None and run.attempt < pod_attempt:
                continue  # a claim newer than our read: not stale
            metadata = pod["metadata"]
            if not pod_api.ended(pod) and not metadata.get("deletionTimestamp"):
                log.info("deleting stale Pod %s/%s", metadata["namespace"], metadata["name"])
                await self._pods.delete(metadata["namespace"], metadata["name"])
            done.append((str(metadata["namespace"]), str(metadata["name"])))
        await self._release(done)

    def _holds(self, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod`` is the Pod of an attempt this launcher holds."""
        attempt = self._attempts.get(pod_api.run_of(pod))
        return (
            attempt is not None
            and attempt.run.attempt == pod_api.attempt_of(pod)
            and _is_its_pod(attempt, pod)
        )

    def _forged(self, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod`` wears the labels of an attempt this launcher holds but is not its Pod."""
        attempt = self._attempts.get(pod_api.run_of(pod))
        return (
            attempt is not None
            and attempt.run.attempt == pod_api.attempt_of(pod)
            and not _is_its_pod(attempt, pod)
        )

    async def _report_forged(self, attempt: _Attempt, pod: Mapping[str, Any]) -> None:
        """Log a Pod that wears ``attempt``'s labels without being its Pod, and tell the hooks
        once per Pod (by UID): the attempt's outcome never comes from it."""
        uid = pod_api.uid_of(pod) or ""
        if uid in self._forgeries_reported:
            return
        self._forgeries_reported.add(uid)
        metadata = pod.get("metadata") or {}
        log.warning(
            "run %s attempt %s: Pod %s/%s carries its labels but is not its Pod; ignored",
            attempt.run.id,
            attempt.run.attempt,
            metadata.get("namespace"),
            metadata.get("name"),
        )
        if self._hooks is None:
            return
        try:
            await self._hooks.forged(pod, attempt.run.id, attempt.run.attempt)
        except Exception:  # reporting is best effort; ignoring the Pod is what protects the run
            log.exception("could not report the forged Pod %s", metadata.get("name"))

    def _deadline(self, attempt: _Attempt, created_at: datetime) -> datetime:
        """When our own clock times the attempt out: ``timeoutSeconds`` (plus the slack) from
        the Pod's start, as the kubelet counts ``activeDeadlineSeconds``, so a Pod that waited
        for a node or its image still gets its whole timeout. Before it starts, the start
        timeout ends a Pod left Pending (``outcomes.classify``), so the backstop is its
        creation plus both timeouts."""
        timeout = timedelta(
            seconds=_timeout_seconds(attempt.run) + self._settings.timeout_slack_seconds
        )
        if attempt.started_at is not None:
            return attempt.started_at + timeout
        return created_at + self._start_timeout(attempt) + timeout

    def _start_timeout(self, attempt: _Attempt) -> timedelta:
        seconds = attempt.context.start_timeout_seconds
        if seconds is None:
            return timedelta(seconds=self._settings.default_start_timeout_seconds)
        return timedelta(seconds=seconds)


def _is_its_pod(attempt: _Attempt, pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` is the Pod this launcher made for ``attempt``: in the run's namespace,
    under the attempt's deterministic name, and (once known) with the UID the create returned
    or the adoption found. The Job controller matches its Pods the same way, by owner UID inside
    the Job's namespace, never by labels alone."""
    metadata = pod.get("metadata") or {}
    if metadata.get("namespace") != attempt.namespace or metadata.get("name") != attempt.pod_name:
        return False
    return attempt.pod_uid is None or pod_api.uid_of(pod) == attempt.pod_uid


def _remember_delete_request(attempt: _Attempt, pod: Mapping[str, Any] | None) -> None:
    """Keep the earliest delete request of the attempt's Pod read so far."""
    if pod is None:
        return
    requested = outcomes.latest_delete_request(pod.get("metadata") or {})
    if requested is not None and (
        attempt.delete_requested_at is None or requested < attempt.delete_requested_at
    ):
        attempt.delete_requested_at = requested


def _timeout_seconds(run: claims.ClaimedRun) -> int:
    """The manifest's timeoutSeconds, else the default: a Pod's handler registration is not
    visible from here, so ``@sundial.job(timeout_seconds=...)`` does not apply to Pod runs."""
    if run.timeout_seconds is None:
        return common.DEFAULT_TIMEOUT_SECONDS
    return run.timeout_seconds


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
