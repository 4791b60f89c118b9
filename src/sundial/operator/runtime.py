"""``sundial operator``: one process hosting kopf, the trigger loop and the status mirror.

Start-up order: JSON logs, the PostgreSQL pool, the liveness endpoint, then the ``operator``
lease (``leadership``): a standby waits here. Once leading, it runs side by side

* kopf (embedded with ``kopf.operator``, standalone: our lease replaces kopf's peering), with
  our finalizer and annotation prefixes (``handlers.settings``);
* the trigger loop (``announcer``) and, under the same lease, the maintainer: reaping,
  promotion of due runs, archiving and retention (``scheduler.maintainer``);
* the status mirror (``mirror``) and the Event recorder (``events``);
* the pod launcher (``pod_launcher``, unless turned off), which claims pod-mode runs and drives
  their Pods. Its worker id is the operator's lease holder, so an operator restarted with the
  same ``--holder`` adopts the runs and Pods it held; one that takes the lease over from
  another holder (a ``helm upgrade`` replaces the operator Pod and its name) first takes the
  pod runs its predecessor still holds (``pod_runs.take_over``) and adopts their Pods under
  the same attempts, instead of leaving them to the reaper, which would start each over. Its
  Pods are owned by their ScheduledJob and their ends become Events (``pod_hooks``);
* the lease keeper.

The HTTP port (``--liveness-port``) serves ``/healthz`` and ``/metrics``: the trigger's and
the maintainer's metrics, and on the leader the per-ScheduledJob gauges
(``scheduled_job_metrics``), on the leader and on a standby alike. The history API is not
served here but by ``sundial history-api`` (``history_service``), a process without the
operator's token.

When any of them ends - SIGTERM (kopf handles it), a lost lease, a crash - the others are
stopped and the process exits; non-zero unless it was asked to stop. Everything is
recomputed from PostgreSQL and the API on the next start, so a restart is harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import kopf

from sundial.observability import json_logs as json_logging
from sundial.operator import (
    announcer,
    context,
    events,
    handlers,
    kube,
    liveness,
    metrics_access,
    mirror,
    pod_hooks,
    scheduled_job_metrics,
)
from sundial.operator.metrics_tls import MetricsTls
from sundial.pods import launcher, manifests
from sundial.scheduler import leadership, maintainer, trigger
from sundial.scheduling import clock as clocks
from sundial.store import hot_queue, pod_runs, quotas, schema_version
from sundial.store import pool as store_pool
from sundial.store.hot_queue import outbox

__all__ = ["OperatorConfig", "serve"]

log = logging.getLogger("sundial.operator")


@dataclass(frozen=True)
class OperatorConfig:
    dsn: str
    #: ``None``: every namespace.
    namespaces: tuple[str, ...] | None = None
    #: 0 turns the endpoint off.
    liveness_port: int = 8080
    #: Serve /metrics only to callers the API server authenticates and authorizes.
    metrics_auth: bool = True
    #: Serve /metrics over HTTPS on its port with its certificate instead of on the liveness
    #: port over HTTP. None: on the liveness port.
    metrics_tls: MetricsTls | None = None
    holder: str = field(default_factory=trigger.default_holder)
    lease_ttl_seconds: float = 15.0
    mirror_interval: timedelta = timedelta(seconds=3)
    #: The longest time between two sweeps of ended Pods outside their window (``pod_gc``).
    pod_gc_interval: timedelta = timedelta(seconds=30)
    trigger_poll: timedelta = timedelta(seconds=1)
    #: The fire budget: runs one second of run_at may hold in all (None: off) and of one
    #: namespace (None: only the global rate).
    fires_per_second: float | None = 1000.0
    namespace_fires_per_second: float | None = None
    #: The hot window, the archive retention and the intervals of the maintainer.
    maintainer: maintainer.MaintainerSettings = field(default_factory=maintainer.MaintainerSettings)
    #: Host the pod launcher (off: pod-mode runs wait for a ``sundial pod-launcher``).
    pod_launcher: bool = True
    pod_queues: tuple[str, ...] = ("default",)
    pod_poll: timedelta = timedelta(seconds=1)
    max_pods: int = 200
    #: Pods held at once in one namespace (None: only ``max_pods``).
    max_pods_per_namespace: int | None = None
    #: Of ``max_pods``, those only a namespace behind the one held most of may take.
    reserved_pods: int = 1
    #: Per namespace, its share of the Pods against the others' (a namespace not named weighs 1).
    pod_namespace_weights: Mapping[str, float] = field(default_factory=dict)
    #: Runs that have not ended a namespace may hold: by name, and for every other one (None:
    #: no quota). The leader stores them when it takes the lead (``store.quotas``).
    active_run_quotas: Mapping[str, int] = field(default_factory=dict)
    active_runs_per_namespace: int | None = None
    #: ``instance`` labels the Pods; the image runs handler jobs whose executionModel is pod.
    pods: manifests.ManifestSettings = field(default_factory=manifests.ManifestSettings)
    #: The hot queue's Redis, when the database's is on: the maintainer also takes back the
    #: leases of runners that died and gives Redis back what it lost. None: not its job.
    hot_queue_url: str | None = None


async def serve(config: OperatorConfig) -> int:
    """Run until stopped; the exit status for the process."""
    json_logging.configure()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    pool = await schema_version.open_compatible_pool(
        config.dsn, "operator", min_size=1, max_size=8, name="sundial-operator"
    )
    try:
        await outbox.require_mode(
            pool, url_given=config.hot_queue_url is not None, component="operator"
        )
    except BaseException:
        await pool.close()
        raise
    # The lease has a connection of its own: behind thousands of ScheduledJobs being stored
    # at once (10,000 applied), a renewal waiting for the shared pool outlived the lease.
    lease_pool = await store_pool.open_pool(
        config.dsn, min_size=1, max_size=1, name="sundial-operator-lease"
    )
    lead = leadership.Leadership(lease_pool, config.holder, ttl_seconds=config.lease_ttl_seconds)
    role = "standby"
    serving = bool(config.liveness_port or config.metrics_tls)
    access_api = kube.KubeApi() if serving and config.metrics_auth else None
    probe = liveness.LivenessServer(
        config.liveness_port,
        lambda: role,
        metrics_access=None
        if access_api is None
        else metrics_access.MetricsAccess(access_api.review_token, access_api.may_get_path),
        metrics_tls=config.metrics_tls,
    )
    if serving:
        await probe.start()
    try:
        if not await lead.acquire(stop):
            return 0
        role = "leader"
        return await _lead(config, pool, lead, stop)
    finally:
        await lead.resign()
        await probe.stop()
        if access_api is not None:
            access_api.close()
        await pool.close()
        await lease_pool.close()


async def _lead(
    config: OperatorConfig, pool: store_pool.Pool, lead: leadership.Leadership, stop: asyncio.Event
) -> int:
    # Renew the lease from the start, on a thread of its own (``Leadership.keep_apart``): the
    # event loop is busy for seconds while the operator starts beside thousands of objects.
    keeper = asyncio.create_task(lead.keep_apart(config.dsn, stop), name="lease")
    await quotas.configure(
        pool, per_namespace=config.active_run_quotas, default=config.active_runs_per_namespace
    )
    api = await asyncio.to_thread(kube.KubeApi)
    clock = clocks.SystemClock()
    recorder = events.EventRecorder(api, clock)
    redis = hot_queue.open_client(config.hot_queue_url) if config.hot_queue_url else None
    ctx = context.Context(
        pool=pool,
        api=api,
        recorder=recorder,
        clock=clock,
        hot_queue=redis,
        settings=context.OperatorSettings(
            namespaces=config.namespaces,
            mirror_interval=config.mirror_interval,
            pod_instance=config.pods.instance,
            pod_gc_interval=config.pod_gc_interval,
        ),
    )
    # Per-ScheduledJob gauges, from the watched objects, on the leader's /metrics only.
    gauges = scheduled_job_metrics.collector()
    gauges.objects = ctx.scheduled_job_cache
    triggers = announcer.AnnouncingTriggerLoop(
        pool,
        ctx,
        holder=config.holder,
        settings=trigger.TriggerSettings(
            poll_interval=config.trigger_poll,
            lease_ttl_seconds=config.lease_ttl_seconds,
            fires_per_second=config.fires_per_second,
            namespace_fires_per_second=config.namespace_fires_per_second,
        ),
    )
    housekeeping = maintainer.Maintainer(
        pool,
        holder=config.holder,
        clock=clock,
        settings=config.maintainer,
        hot_queue=redis,
        component="operator",
    )
    status_mirror = mirror.Mirror(ctx)
    kopf_stop = asyncio.Event()
    pod_launcher = None
    if config.pod_launcher:
        if lead.previous is not None:
            # The previous operator (an upgrade's, or one that failed) left its Pods running:
            # adopted under their attempts, not started over once the reaper saw them expire.
            taken = await pod_runs.take_over(pool, previous=lead.previous, worker=config.holder)
            log.info(
                "took over the pod runs of the previous operator",
                extra={"previous": lead.previous, "runs": taken[:20], "count": len(taken)},
            )
        pod_launcher = launcher.PodLauncher(
            pool,
            api.api_client,
            launcher.LauncherSettings(
                worker=config.holder,
                queues=config.pod_queues,
                namespaces=config.namespaces,
                poll_interval_seconds=config.pod_poll.total_seconds(),
                max_pods=config.max_pods,
                max_pods_per_namespace=config.max_pods_per_namespace,
                reserved_pods=config.reserved_pods,
                namespace_weights=config.pod_namespace_weights,
                manifest=config.pods,
            ),
            clock=clock,
            hooks=pod_hooks.OperatorPodHooks(ctx),
        )
    tasks = {
        asyncio.create_task(
            kopf.operator(
                registry=handlers.registry,
                settings=handlers.settings(),
                standalone=True,
                # Our lease replaces kopf's peering, but kopf still names itself; left to
                # itself it asks getpass.getuser(), which raises in an image whose numeric
                # user (65532) has no passwd entry, and the operator died at start in its Pod.
                identity=config.holder,  # type: ignore[arg-type]
                clusterwide=config.namespaces is None,
                namespaces=config.namespaces or (),
                memo=kopf.Memo(context=ctx, stop=stop),
                stop_flag=kopf_stop,
            ),
            name="kopf",
        ),
        asyncio.create_task(triggers.run(stop), name="trigger"),
        asyncio.create_task(housekeeping.run(stop), name="maintainer"),
        asyncio.create_task(status_mirror.run(stop), name="mirror"),
        asyncio.create_task(recorder.run(stop), name="events"),
        keeper,
        *([asyncio.create_task(pod_launcher.run(stop), name="pods")] if pod_launcher else []),
        asyncio.create_task(lead.lost.wait(), name="lease-lost"),
        asyncio.create_task(stop.wait(), name="stop"),
    }
    log.info(
        "operator running",
        extra={
            "holder": config.holder,
            "namespaces": config.namespaces or "all",
            "pod_launcher": config.pod_launcher,
        },
    )
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    failed = [task for task in done if task.get_name() not in {"stop"}]
    for task in failed:
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "operator task failed", exc_info=task.exception(), extra={"task": task.get_name()}
            )
    stop.set()
    kopf_stop.set()
    for task in tasks:
        if task.get_name() in {"lease-lost", "stop"}:
            task.cancel()
    _, pending = await asyncio.wait(tasks, timeout=10)
    for task in pending:
        task.cancel()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(recorder.flush(), timeout=5)
    gauges.objects = None
    api.close()
    if redis is not None:
        with contextlib.suppress(Exception):
            await redis.aclose()
    if lead.lost.is_set():
        return 1
    asked_to_stop = any(task.get_name() in {"stop", "kopf"} for task in done)
    return 0 if asked_to_stop and not failed_tasks(done) else 1


def failed_tasks(done: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    return [task for task in done if not task.cancelled() and task.exception() is not None]
