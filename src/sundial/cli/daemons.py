"""The long-running processes: ``scheduler``, ``runner``, ``pod-launcher``, ``operator`` and
``history-api``.

Each imports what it runs inside its command, so ``sundial --help`` and the short commands stay
fast; each logs JSON lines through ``observability.json_logs`` and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import click

from sundial.cli import serve as serve_module
from sundial.cli.app import main
from sundial.cli.options import (
    _maintainer_settings,
    active_run_quota_options,
    archive_retention_option,
    dsn_option,
    fire_budget_options,
    fire_budget_settings,
    hot_window_option,
    is_namespace_name,
    job_pod_placement,
    job_pod_placement_options,
    key_retention_option,
    log_level_option,
    namespace_weight_option,
    oom_increase_option,
    oom_max_memory_option,
    reserved_pods_option,
    retention_interval_option,
)

if TYPE_CHECKING:
    from sundial.operator.metrics_tls import MetricsTls


@main.command()
@dsn_option
@click.option("--holder", default=None, help="Lease holder name (default: host-pid).")
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=1000, show_default=True)
@click.option(
    "--poll-seconds",
    type=click.FloatRange(0.05, 60),
    default=1.0,
    show_default=True,
    help="Longest sleep between steps; also how often a standby asks for the lease.",
)
@click.option("--lease-ttl", type=click.FloatRange(1, 600), default=15.0, show_default=True)
@fire_budget_options
@click.option(
    "--fire-burst",
    type=click.IntRange(1),
    default=None,
    hidden=True,
    help="No longer used: each second of run_at holds at most --fires-per-second runs.",
)
@click.option(
    "--maintainer/--no-maintainer",
    default=True,
    show_default=True,
    help="Run the maintainer while leading: reap expired leases, promote due runs, archive"
    " finished runs, drop old history (off: leave it to another process).",
)
@hot_window_option
@archive_retention_option
@retention_interval_option
@key_retention_option
@click.option("--once", is_flag=True, help="Run one step (lease, tick, maintenance) and exit.")
@click.option(
    "--hot-queue-url",
    envvar="SUNDIAL_HOT_QUEUE_URL",
    default=None,
    help="The hot queue's Redis, when the database's hot queue is on: the maintainer then also"
    " takes back the leases of runners that died and gives Redis back what it lost.",
)
@click.option(
    "--metrics-port",
    type=int,
    default=-1,
    show_default=True,
    help="Serve the trigger's and the maintainer's /metrics on this port (0: any free port;"
    " -1: off).",
)
@click.option("--metrics-host", default="0.0.0.0", show_default=True)
@log_level_option
def scheduler(
    dsn: str,
    holder: str | None,
    batch_size: int,
    poll_seconds: float,
    lease_ttl: float,
    fires_per_second: float,
    namespace_fires_per_second: float | None,
    fire_burst: int | None,
    maintainer: bool,
    hot_window: float,
    archive_retention_days: int,
    retention_interval: float,
    key_retention: float,
    once: bool,
    hot_queue_url: str | None,
    metrics_port: int,
    metrics_host: str,
    log_level: str,
) -> None:
    """Run the trigger loop, and the maintainer, under the PostgreSQL leader lease.

    The same loops the operator runs, without Kubernetes: schedules in the database turn into
    runs; expired leases are reaped; future runs are promoted when due; finished runs move to
    the archive after --hot-window and old history is dropped. Safe to start twice: one leads,
    the other stands by and takes over when the leader's lease runs out.
    """
    import asyncio
    import datetime
    import logging
    import os

    import prometheus_client

    from sundial.scheduler import maintainer as maintainer_module
    from sundial.scheduler import trigger
    from sundial.store import schema_version
    from sundial.store.hot_queue import outbox

    serve_module.configure_logs(log_level)
    if fire_burst is not None:
        click.echo(
            "warning: --fire-burst has no effect any more: each second of run_at holds at most"
            " --fires-per-second runs (and --namespace-fires-per-second of one namespace)",
            err=True,
        )
    maintenance = _maintainer_settings(
        hot_window, archive_retention_days, retention_interval, key_retention
    )
    everywhere, per_namespace = fire_budget_settings(fires_per_second, namespace_fires_per_second)
    settings = trigger.TriggerSettings(
        batch_size=batch_size,
        poll_interval=datetime.timedelta(seconds=poll_seconds),
        lease_ttl_seconds=lease_ttl,
        fires_per_second=everywhere,
        namespace_fires_per_second=per_namespace,
    )

    async def serve() -> None:
        stop = serve_module.stop_on_signals()
        opened = await schema_version.open_compatible_pool(
            dsn, "scheduler", min_size=1, max_size=4, name="sundial-scheduler"
        )
        redis = None
        try:
            await outbox.require_mode(opened, url_given=bool(hot_queue_url), component="scheduler")
            if hot_queue_url:
                from sundial.store.hot_queue import open_client

                redis = open_client(hot_queue_url)
            loop = trigger.TriggerLoop(opened, holder=holder, settings=settings, hot_queue=redis)
            keeper = maintainer_module.Maintainer(
                opened, holder=loop.holder, settings=maintenance, hot_queue=redis
            )
            if once:
                await loop.step()
                if maintainer:
                    await keeper.step()
                state = "leader" if loop.lease is not None else "standby"
                click.echo(f"one step done as {state} ({loop.holder})")
                return
            port = None
            if metrics_port >= 0:
                server, _ = prometheus_client.start_http_server(metrics_port, metrics_host)
                port = server.server_port
            logging.getLogger("sundial.scheduler").info(
                "scheduler running",
                extra={
                    "holder": loop.holder,
                    "maintainer": maintainer,
                    "metrics_port": port,
                    "pid": os.getpid(),
                },
            )
            await asyncio.gather(loop.run(stop), *([keeper.run(stop)] if maintainer else []))
        finally:
            if redis is not None:
                await redis.aclose()
            await opened.close()

    with serve_module.refused_at_start("sundial scheduler"):
        asyncio.run(serve())


def _parse_concurrency(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, int]:
    from sundial.api import execution_model

    parsed: dict[str, int] = {}
    models = [m.value for m in execution_model.ExecutionModel if m in execution_model.RUNNER_MODELS]
    for value in values:
        model, _, number = value.partition("=")
        if model not in models or not number.isdigit() or int(number) < 1:
            raise click.BadParameter(
                f"{value!r}: use MODEL=N with MODEL one of {', '.join(models)} and N >= 1"
            )
        parsed[model] = int(number)
    return parsed


def _parse_namespaces(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    """Namespace names, each a DNS-1123 label (what Kubernetes allows), comma lists split."""
    names = tuple(name.strip() for value in values for name in value.split(",") if name.strip())
    for name in names:
        if not is_namespace_name(name):
            raise click.BadParameter(
                f"{name!r} is not a namespace name: 1 to 63 lowercase letters, digits and '-',"
                " starting and ending with a letter or digit"
            )
    return names


@main.command()
@dsn_option
@click.option(
    "--handlers",
    "handler_modules",
    multiple=True,
    required=True,
    envvar="SUNDIAL_HANDLERS",
    help="Module that registers handlers with @sundial.job (repeatable; or SUNDIAL_HANDLERS, "
    "space-separated, as the runner image sets it).",
)
@click.option(
    "--queue", "queues", multiple=True, default=("default",), help="Queue to serve (repeatable)."
)
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    callback=_parse_namespaces,
    help="Serve only the runs of jobs in this namespace (repeatable). Each namespace is a tenant:"
    " a runner runs its handlers for the namespaces it names. Default: every namespace.",
)
@namespace_weight_option("--namespace-weight", "slots")
@click.option(
    "--concurrency",
    multiple=True,
    callback=_parse_concurrency,
    help="Slots per execution model, e.g. --concurrency async=500 --concurrency thread=16.",
)
@click.option("--lease-seconds", type=click.FloatRange(min=1), default=30.0, show_default=True)
@click.option(
    "--grace-seconds",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="On SIGTERM, how long running jobs may finish before they are released.",
)
@click.option(
    "--poll-seconds",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="Claim at least this often even without a notification.",
)
@click.option(
    "--quarantine-after",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Stop claiming a handler once this many of its attempts crashed their process.",
)
@click.option(
    "--retry-budget",
    type=click.IntRange(min=0),
    default=100,
    show_default=True,
    help="Quick retries per declared dependency per window; retries past it are deferred "
    "to after the window (they still count against maxRetries).",
)
@click.option(
    "--retry-budget-window-seconds",
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    help="The sliding window of --retry-budget.",
)
@click.option(
    "--maintenance",
    is_flag=True,
    help="Also reap expired leases and promote due runs, without a lease, for installations"
    " with neither `sundial scheduler` nor the operator (whose maintainer does it; it also"
    " archives, which this does not).",
)
@click.option(
    "--maintenance-seconds",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="How often --maintenance reaps and promotes.",
)
@click.option(
    "--reserved-slots",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Slots of each execution model that the namespace this runner runs most of may not"
    " take, where it serves more than one namespace: a quieter namespace's run starts at"
    " once beside another's flood. A model with fewer than 8 slots keeps none; 0: none.",
)
@click.option(
    "--max-unfinished",
    type=click.IntRange(min=1),
    default=None,
    help="Claimed runs whose finish is not committed yet, at most; claiming waits past it "
    "(default: twice the slots of --concurrency; never fewer than the slots).",
)
@click.option(
    "--metrics-port",
    type=int,
    default=None,
    help="Port of /metrics, /healthz and /readyz (0: any free port; -1: off). Default: 8081, or"
    " any free port when another process holds it (a second runner on the host); the port is"
    " logged in 'runner starting'. A port given here that is taken is an error.",
)
@click.option("--metrics-host", default="0.0.0.0", show_default=True)
@click.option("--worker-id", default=None, help="Lease owner name; defaults to host:pid.")
@click.option(
    "--hot-queue-url",
    envvar="SUNDIAL_HOT_QUEUE_URL",
    default=None,
    help="The hot queue's Redis (redis://, rediss://): claim, heartbeat and give back runs there,"
    " and relay the outbox to it. Required when the database's hot queue is on (`sundial"
    " migrate --hot-queue on`), refused when it is off.",
)
@log_level_option
def runner(
    dsn: str,
    handler_modules: tuple[str, ...],
    queues: tuple[str, ...],
    namespaces: tuple[str, ...],
    namespace_weights: dict[str, float],
    concurrency: dict[str, int],
    lease_seconds: float,
    grace_seconds: float,
    poll_seconds: float,
    quarantine_after: int,
    retry_budget: int,
    retry_budget_window_seconds: float,
    maintenance: bool,
    maintenance_seconds: float,
    reserved_slots: int,
    max_unfinished: int | None,
    metrics_port: int | None,
    metrics_host: str,
    worker_id: str | None,
    hot_queue_url: str | None,
    log_level: str,
) -> None:
    """Claim and execute runs of the registered handlers until SIGTERM; then drain, exit 0."""
    import asyncio
    import logging
    import os
    import socket
    import sys

    from sundial.runner import health, lifeline, registry, worker

    context = click.get_current_context()
    if not maintenance and context.get_parameter_source("maintenance_seconds") not in (
        click.core.ParameterSource.DEFAULT,
        None,
    ):
        raise click.UsageError(
            "--maintenance-seconds only sets the interval of --maintenance, which is off by"
            " default: add --maintenance, or leave reaping to `sundial scheduler` or the operator"
        )
    serve_module.configure_logs(log_level)
    try:
        handlers = registry.load_handlers(handler_modules)
    except registry.HandlersImportError as error:
        click.echo(str(error), err=True)
        sys.exit(2)
    if len(handlers) == 0:
        click.echo("no handlers registered by the --handlers modules", err=True)
        sys.exit(2)
    settings = worker.Settings(
        dsn=dsn,
        worker_id=worker_id or f"{socket.gethostname()}:{os.getpid()}",
        handler_modules=handler_modules,
        queues=queues,
        namespaces=namespaces or None,
        namespace_weights=namespace_weights,
        concurrency={
            **worker.DEFAULT_CONCURRENCY,
            **{registry.ExecutionModel(k): v for k, v in concurrency.items()},
        },
        lease_seconds=lease_seconds,
        poll_seconds=poll_seconds,
        grace_seconds=grace_seconds,
        quarantine_after_crashes=quarantine_after,
        retry_budget=retry_budget,
        retry_budget_window_seconds=retry_budget_window_seconds,
        maintenance_seconds=maintenance_seconds if maintenance else 0.0,
        max_unfinished=max_unfinished,
        reserved_slots=reserved_slots,
        metrics_host=metrics_host,
        metrics_port=(
            worker.DEFAULT_METRICS_PORT
            if metrics_port is None
            else (None if metrics_port < 0 else metrics_port)
        ),
        metrics_port_fallback=metrics_port is None,
        hot_queue_url=hot_queue_url or None,
    )
    # The DSN (and the Redis URL, which may hold a password) are in settings now: the process
    # pool's workers (spawned with this environment) need neither, and the runner's own
    # /proc/PID/environ is closed to its handlers.
    os.environ.pop("SUNDIAL_DSN", None)
    os.environ.pop("SUNDIAL_HOT_QUEUE_URL", None)
    lifeline.keep_environment_private()
    runner_worker = worker.Worker(settings, handlers)
    try:
        with serve_module.refused_at_start("sundial runner"):
            code = asyncio.run(runner_worker.run())
    except health.PortUnavailableError as error:
        click.echo(f"sundial runner: {error.strerror}", err=True)
        sys.exit(2)
    if runner_worker.leaked_threads:
        # Threads cannot be killed and the interpreter would wait for them at exit.
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


@main.command("pod-launcher")
@dsn_option
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="Namespace whose Pods it watches (repeatable; default: every namespace).",
)
@click.option("--kubeconfig", default=None, help="Default: in-cluster config, else ~/.kube/config.")
@click.option(
    "--worker", default=None, help="Lease owner id; keep it across restarts to adopt Pods."
)
@click.option("--instance", default="sundial", show_default=True, help="Label of Sundial's Pods.")
@click.option("--queue", "queues", multiple=True, default=("default",), show_default=True)
@click.option("--lease-seconds", type=click.FloatRange(3, 3600), default=30.0, show_default=True)
@click.option("--poll-seconds", type=click.FloatRange(0.05, 60), default=1.0, show_default=True)
@click.option("--max-pods", type=click.IntRange(1), default=200, show_default=True)
@click.option(
    "--max-pods-per-namespace",
    type=click.IntRange(1),
    default=None,
    help="Pods held at once in one namespace (default: only --max-pods bounds them).",
)
@reserved_pods_option
@namespace_weight_option("--namespace-weight", "Pods")
@click.option("--service-account", default=None, help="ServiceAccount of Pods that name none.")
@click.option("--runner-image", default="sundial-runner:latest", show_default=True)
@job_pod_placement_options
@oom_increase_option
@oom_max_memory_option
@log_level_option
def pod_launcher(
    dsn: str,
    namespaces: tuple[str, ...],
    kubeconfig: str | None,
    worker: str | None,
    instance: str,
    queues: tuple[str, ...],
    lease_seconds: float,
    poll_seconds: float,
    max_pods: int,
    max_pods_per_namespace: int | None,
    reserved_pods: int,
    namespace_weights: dict[str, float],
    service_account: str | None,
    runner_image: str,
    job_pod_node_selector: tuple[str, ...],
    job_pod_tolerations: tuple[str, ...],
    job_pod_affinity: str | None,
    oom_memory_increase_percent: int,
    oom_max_memory: int,
    log_level: str,
) -> None:
    """Launch pod-mode runs as Pods, one per attempt, outside the operator.

    The same component the operator hosts: claims pod runs, creates their Pods, keeps their
    leases, and maps each Pod's end onto the run (docs/adr/0009-pod-launcher.md).
    """
    import asyncio
    import logging
    import os
    import socket

    from kubernetes import client as kube_client
    from kubernetes import config as kube_config

    from sundial.pods import launcher as launcher_module
    from sundial.pods import manifests
    from sundial.store import schema_version

    placement = job_pod_placement(job_pod_node_selector, job_pod_tolerations, job_pod_affinity)
    serve_module.configure_logs(log_level)
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        kube_config.load_incluster_config()  # type: ignore[no-untyped-call]
        api_client = kube_client.ApiClient()
    else:
        api_client = kube_config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    settings = launcher_module.LauncherSettings(
        worker=worker or f"pod-launcher-{socket.gethostname()}-{os.getpid()}",
        queues=queues,
        namespaces=namespaces or None,
        lease_seconds=lease_seconds,
        poll_interval_seconds=poll_seconds,
        max_pods=max_pods,
        max_pods_per_namespace=max_pods_per_namespace,
        reserved_pods=reserved_pods,
        namespace_weights=namespace_weights,
        manifest=manifests.ManifestSettings(
            instance=instance,
            service_account_name=service_account,
            runner_image=runner_image,
            oom_memory_factor=1 + oom_memory_increase_percent / 100,
            oom_memory_cap_bytes=oom_max_memory,
            placement=placement,
        ),
    )

    async def serve() -> None:
        stop = serve_module.stop_on_signals()
        opened = await schema_version.open_compatible_pool(
            dsn, "pod launcher", min_size=1, max_size=4, name="sundial-pods"
        )
        try:
            launcher = launcher_module.PodLauncher(opened, api_client, settings)
            logging.getLogger("sundial.pods").info(
                "pod launcher running",
                extra={"worker": settings.worker, "queues": list(queues), "pid": os.getpid()},
            )
            await launcher.run(stop)
        finally:
            await opened.close()
            api_client.close()  # type: ignore[no-untyped-call]

    with serve_module.refused_at_start("sundial pod-launcher"):
        asyncio.run(serve())


@main.command()
@dsn_option
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="Watch only this namespace (repeatable). Default: every namespace.",
)
@click.option(
    "--all-namespaces", is_flag=True, help="Watch every namespace (the default; explicit form)."
)
@click.option(
    "--liveness-port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    help="Port of GET /healthz and /metrics (0 turns it off).",
)
@click.option(
    "--metrics-auth/--no-metrics-auth",
    default=True,
    show_default=True,
    help="Serve /metrics only to a bearer token the API server authenticates, of a user it"
    " allows to get the non-resource URL /metrics (the metrics name every namespace's jobs);"
    " /healthz stays open. Off: anyone who reaches the port reads them.",
)
@click.option(
    "--metrics-tls-cert",
    type=click.Path(dir_okay=False),
    default=None,
    help="Serve /metrics over HTTPS with this certificate (PEM, the chain), on --metrics-port,"
    " so the scrape's token never crosses the network in clear; the liveness port then"
    " serves /healthz only. Needs --metrics-tls-key.",
)
@click.option(
    "--metrics-tls-key",
    type=click.Path(dir_okay=False),
    default=None,
    help="The key of --metrics-tls-cert (PEM).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=8444,
    show_default=True,
    help="Port of GET /metrics over HTTPS, with --metrics-tls-cert.",
)
@click.option(
    "--holder",
    default=None,
    help="Lease holder name (default: host-pid); a restart with the same name leads at once.",
)
@click.option("--lease-ttl", type=click.FloatRange(1, 600), default=15.0, show_default=True)
@click.option(
    "--mirror-seconds",
    type=click.FloatRange(0.2, 600),
    default=3.0,
    show_default=True,
    help="Longest time between two status-mirror passes.",
)
@click.option(
    "--pod-gc-seconds",
    type=click.FloatRange(0.2, 3600),
    default=30.0,
    show_default=True,
    help="Longest time between two deletions of ended Pods whose run left its JobRun window.",
)
@click.option(
    "--pod-launcher/--no-pod-launcher",
    default=True,
    show_default=True,
    help="Launch pod-mode runs as Pods (off: leave them to a `sundial pod-launcher`).",
)
@click.option("--pod-instance", default="sundial", show_default=True, help="Label of its Pods.")
@click.option(
    "--pod-queue",
    "pod_queues",
    multiple=True,
    default=("default",),
    show_default=True,
    help="Queue whose pod-mode runs it launches (repeatable).",
)
@click.option("--max-pods", type=click.IntRange(1), default=200, show_default=True)
@click.option(
    "--max-pods-per-namespace",
    type=click.IntRange(1),
    default=None,
    help="Pods held at once in one namespace (default: only --max-pods bounds them).",
)
@reserved_pods_option
@namespace_weight_option("--pod-namespace-weight", "Pods")
@click.option("--pod-service-account", default=None, help="ServiceAccount of Pods that name none.")
@click.option(
    "--runner-image",
    default="sundial-runner:latest",
    show_default=True,
    help="Image of handler jobs whose executionModel is pod (it runs `sundial exec`).",
)
@job_pod_placement_options
@fire_budget_options
@active_run_quota_options
@hot_window_option
@archive_retention_option
@retention_interval_option
@key_retention_option
@oom_increase_option
@click.option(
    "--hot-queue-url",
    envvar="SUNDIAL_HOT_QUEUE_URL",
    default=None,
    help="The hot queue's Redis, when the database's hot queue is on: the maintainer then also"
    " takes back the leases of runners that died and gives Redis back what it lost.",
)
@oom_max_memory_option
def operator(
    dsn: str,
    namespaces: tuple[str, ...],
    all_namespaces: bool,
    liveness_port: int,
    metrics_auth: bool,
    metrics_tls_cert: str | None,
    metrics_tls_key: str | None,
    metrics_port: int,
    holder: str | None,
    lease_ttl: float,
    mirror_seconds: float,
    pod_gc_seconds: float,
    pod_launcher: bool,
    pod_instance: str,
    pod_queues: tuple[str, ...],
    max_pods: int,
    max_pods_per_namespace: int | None,
    reserved_pods: int,
    namespace_weights: dict[str, float],
    pod_service_account: str | None,
    runner_image: str,
    job_pod_node_selector: tuple[str, ...],
    job_pod_tolerations: tuple[str, ...],
    job_pod_affinity: str | None,
    fires_per_second: float,
    namespace_fires_per_second: float | None,
    active_runs_per_namespace: int | None,
    active_run_quotas: dict[str, int],
    hot_window: float,
    archive_retention_days: int,
    retention_interval: float,
    key_retention: float,
    oom_memory_increase_percent: int,
    hot_queue_url: str | None,
    oom_max_memory: int,
) -> None:
    """Run the Kubernetes operator: kopf handlers, the trigger loop and the maintainer, the
    status mirror and the pod launcher.

    Only the process holding the PostgreSQL `operator` lease acts; others stand by. The pod
    launcher's lease owner is the holder name: keep --holder across restarts to re-adopt Pods.
    """
    import asyncio
    import datetime
    import sys

    from sundial.operator import runtime
    from sundial.pods import manifests
    from sundial.scheduler import trigger

    if all_namespaces and namespaces:
        raise click.UsageError("--namespace and --all-namespaces exclude each other")
    metrics_tls = _metrics_tls(metrics_tls_cert, metrics_tls_key, metrics_port, liveness_port)
    maintenance = _maintainer_settings(
        hot_window, archive_retention_days, retention_interval, key_retention
    )
    placement = job_pod_placement(job_pod_node_selector, job_pod_tolerations, job_pod_affinity)
    everywhere, per_namespace = fire_budget_settings(fires_per_second, namespace_fires_per_second)
    config = runtime.OperatorConfig(
        dsn=dsn,
        namespaces=None if all_namespaces or not namespaces else namespaces,
        liveness_port=liveness_port,
        metrics_auth=metrics_auth,
        metrics_tls=metrics_tls,
        holder=holder or trigger.default_holder(),
        lease_ttl_seconds=lease_ttl,
        mirror_interval=datetime.timedelta(seconds=mirror_seconds),
        pod_gc_interval=datetime.timedelta(seconds=pod_gc_seconds),
        maintainer=maintenance,
        fires_per_second=everywhere,
        namespace_fires_per_second=per_namespace,
        pod_launcher=pod_launcher,
        pod_queues=pod_queues,
        max_pods=max_pods,
        max_pods_per_namespace=max_pods_per_namespace,
        reserved_pods=reserved_pods,
        pod_namespace_weights=namespace_weights,
        active_run_quotas=active_run_quotas,
        active_runs_per_namespace=active_runs_per_namespace,
        pods=manifests.ManifestSettings(
            instance=pod_instance,
            service_account_name=pod_service_account,
            runner_image=runner_image,
            oom_memory_factor=1 + oom_memory_increase_percent / 100,
            oom_memory_cap_bytes=oom_max_memory,
            placement=placement,
        ),
        hot_queue_url=hot_queue_url or None,
    )
    with serve_module.refused_at_start("sundial operator"):
        sys.exit(asyncio.run(runtime.serve(config)))


def _metrics_tls(
    cert: str | None, key: str | None, port: int, liveness_port: int
) -> MetricsTls | None:
    """The operator's HTTPS metrics port and its TLS context, or None (metrics on the
    liveness port). A pair that cannot be loaded is refused here, before anything starts."""
    from sundial.operator.metrics_tls import MetricsTls

    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise click.UsageError("--metrics-tls-cert and --metrics-tls-key go together")
    if port == liveness_port:
        raise click.UsageError(
            f"--metrics-port {port} is the liveness port: give the HTTPS metrics a port of"
            " their own"
        )
    try:
        return MetricsTls(port, cert, key)
    except (OSError, ssl.SSLError) as error:
        raise click.BadParameter(
            f"cannot serve TLS with {cert} and {key}: {error}. Give a PEM certificate and"
            " the PEM key it was made for.",
            param_hint="--metrics-tls-cert/--metrics-tls-key",
        ) from None


@main.command("history-api")
@dsn_option
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8443,
    show_default=True,
    help="HTTPS port where the API server's front proxy (and nobody else) reaches it.",
)
@click.option(
    "--tls-cert",
    type=click.Path(exists=True, dir_okay=False),
    required=True,
    help="Serving certificate (PEM) for the Service's DNS name; the APIService's caBundle"
    " signs it.",
)
@click.option(
    "--tls-key",
    type=click.Path(exists=True, dir_okay=False),
    required=True,
    help="The key of --tls-cert (PEM).",
)
@click.option(
    "--hot-queue-url",
    envvar="SUNDIAL_HOT_QUEUE_URL",
    default=None,
    help="The hot queue's Redis, when the database's hot queue is on: the runs a claimer holds"
    " there are listed running, as PostgreSQL alone would list them.",
)
@log_level_option
def history_api(
    dsn: str, port: int, tls_cert: str, tls_key: str, hot_queue_url: str | None, log_level: str
) -> None:
    """Serve PostgreSQL's run history as the aggregated API runs.history.sundial.dev, which
    `kubectl sundial history` reads under each namespace's RBAC.

    Give it a DSN of the reader's database login and a ServiceAccount that may only review
    tokens and access (system:auth-delegator) and read kube-system's
    extension-apiserver-authentication ConfigMap: it is the read path other Pods can reach, so
    it holds neither the operator's token nor a login that can write.
    """
    import asyncio
    import sys

    from sundial.errors import SundialError
    from sundial.operator import history_service

    serve_module.configure_logs(log_level)
    config = history_service.HistoryServiceConfig(
        dsn=dsn,
        port=port,
        cert_file=tls_cert,
        key_file=tls_key,
        hot_queue_url=hot_queue_url or None,
    )

    async def serve() -> int:
        stop = serve_module.stop_on_signals()
        return await history_service.serve(config, stop)

    try:
        sys.exit(asyncio.run(serve()))
    except (SundialError, OSError) as error:
        raise click.ClickException(f"the history API is not served: {error}") from error


#: ``sundial runs cancel`` / ``replay``: the run exists but its state does not allow it.
