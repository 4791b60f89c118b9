"""The ``sundial`` command: the one entry point for operators, runners and people."""

from __future__ import annotations

import contextlib
import pathlib
import unicodedata
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, NoReturn

import click

import sundial
from sundial.api import crd, validate

if TYPE_CHECKING:
    from sundial.scheduler import maintainer as maintainer_module
    from sundial.store.pool import Pool

#: Every command that talks to PostgreSQL takes the database the same way.
dsn_option = click.option(
    "--dsn",
    envvar="SUNDIAL_DSN",
    required=True,
    help="libpq URL of the PostgreSQL database (or SUNDIAL_DSN).",
)


@click.group()
@click.version_option(sundial.__version__, prog_name="sundial")
def main() -> None:
    """Sundial: a Kubernetes-native job scheduler on PostgreSQL."""


@main.command()
@click.option(
    "--output",
    "output",
    type=click.Path(file_okay=False, writable=True, path_type=pathlib.Path),
    default=None,
    help="Write one <plural>.sundial.dev.yaml per kind into this directory instead of stdout.",
)
def crds(output: pathlib.Path | None) -> None:
    """Print (or write) the CustomResourceDefinitions generated from sundial.api."""
    if output is None:
        click.echo("---\n".join(crd.render(resource) for resource in crd.RESOURCES), nl=False)
        return
    output.mkdir(parents=True, exist_ok=True)
    for resource in crd.RESOURCES:
        path = output / crd.file_name(resource)
        path.write_text(crd.render(resource), encoding="utf-8")
        click.echo(f"wrote {path}")


@main.command("exec")
@click.argument("handler")
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
    "--args-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="JSON object of arguments; defaults to the SUNDIAL_ARGS environment variable.",
)
@click.option(
    "--log-level",
    default="INFO",
    show_default=True,
    envvar="SUNDIAL_LOG_LEVEL",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="Level of the handler's ctx.logger lines (or SUNDIAL_LOG_LEVEL).",
)
def exec_(
    handler: str, handler_modules: tuple[str, ...], args_file: str | None, log_level: str
) -> None:
    """Run one registered HANDLER in the foreground; the exit code is the outcome.

    0 succeeded, 1 the handler raised, 3 bad arguments, 4 unknown handler, 5 a handlers
    module failed to import, 6 bad SUNDIAL_* environment, 143 cancelled by SIGTERM.

    Log records (the handler's ctx.logger among them) go to stdout as JSON lines with the
    keys of every Sundial process; stderr carries only the reason of a failure, which the
    subprocess executor keeps as the run's error.
    """
    import os
    import sys

    from sundial.observability import logging as json_logging
    from sundial.runner import exec_command

    json_logging.configure(log_level.upper(), stream=sys.stdout)

    try:
        args_text = exec_command.read_args(args_file, os.environ)
    except OSError as error:
        click.echo(f"cannot read --args-file: {error}", err=True)
        sys.exit(exec_command.EXIT_BAD_ARGS)
    sys.exit(exec_command.run(handler, handler_modules, args_text=args_text, environ=os.environ))


class MemoryQuantity(click.ParamType[int, object]):
    """A Kubernetes memory quantity (``8Gi``, ``512Mi``, ``1e9``) converted to bytes."""

    name = "quantity"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int:
        if isinstance(value, int):
            return value
        converted = validate.memory_bytes(str(value))
        if not converted:
            self.fail(
                f"{value!r} is not a positive memory quantity: write it like 512Mi or 8Gi"
                " (no sign, no milli-bytes, more than 0)",
                param,
                ctx,
            )
        return converted


#: The installation-wide OOM memory bump (a job's ``oom`` settings override it; ADR 0010).
oom_increase_option = click.option(
    "--oom-memory-increase-percent",
    type=click.IntRange(0, 1000),
    default=0,
    show_default=True,
    help="Raise memory requests and limits by this percentage per earlier OOM kill of the run,"
    " compounded, for jobs that set no oom.memoryIncreasePercent (0: no bump).",
)
oom_max_memory_option = click.option(
    "--oom-max-memory",
    type=MemoryQuantity(),
    default="8Gi",
    show_default=True,
    help="The most memory a bump may reach, as a quantity, for jobs that set no oom.maxMemory.",
)


class Duration(click.ParamType[float, object]):
    """A duration in seconds, written ``90``, ``90s``, ``30m``, ``1h`` or ``2d``."""

    name = "duration"
    _UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip().lower()
        unit = self._UNITS.get(text[-1:], None)
        number = text[:-1] if unit is not None else text
        try:
            seconds = float(number) * (unit or 1.0)
        except ValueError:
            seconds = -1.0
        if not seconds >= 0 or seconds == float("inf"):
            self.fail(
                f"{value!r} is not a duration: write a number of seconds, or a number with"
                " s, m, h or d (90s, 30m, 1h, 2d)",
                param,
                ctx,
            )
        return seconds


#: The daemons' log level; every daemon logs JSON lines (``observability.logging``).
log_level_option = click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="INFO",
    show_default=True,
)

#: What the maintainer keeps where (ADR 0019); on `sundial scheduler` and `sundial operator`.
hot_window_option = click.option(
    "--hot-window",
    type=Duration(),
    default="1h",
    show_default=True,
    help="How long finished runs stay in the hot table (job_runs) before the maintainer moves"
    " them to the month partitions of finished_runs: 90s, 30m, 1h, 2d.",
)
archive_retention_option = click.option(
    "--archive-retention-days",
    type=click.IntRange(min=0),
    default=30,
    show_default=True,
    help="Drop a month partition of run history once its whole month ended this many days"
    " ago (0: keep every partition).",
)


def _maintainer_settings(
    hot_window: float, archive_retention_days: int
) -> maintainer_module.MaintainerSettings:
    """The maintainer's settings from the command line; a usage error names what to change."""
    import datetime

    from sundial.scheduler import maintainer

    try:
        return maintainer.MaintainerSettings(
            hot_window=datetime.timedelta(seconds=hot_window),
            archive_retention=(
                datetime.timedelta(days=archive_retention_days) if archive_retention_days else None
            ),
        )
    except ValueError:
        raise click.UsageError(
            f"--hot-window ({hot_window:g}s) must be shorter than --archive-retention-days"
            f" ({archive_retention_days} days): raise the retention or shorten the window"
        ) from None


@main.command()
@dsn_option
@click.option("--target", type=int, default=None, help="Stop after this migration version.")
def migrate(dsn: str, target: int | None) -> None:
    """Apply the database migrations that are not applied yet (safe to run concurrently)."""
    from sundial.store import errors as store_errors
    from sundial.store import migrate as store_migrate

    try:
        applied = store_migrate.migrate(dsn, target=target)
    except store_errors.StoreError as error:
        raise click.ClickException(str(error)) from error
    for migration in applied:
        click.echo(f"applied {migration.version:04d}_{migration.name}")
    if not applied:
        click.echo("schema is up to date")


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
@click.option(
    "--fires-per-second",
    type=click.FloatRange(0),
    default=1000.0,
    show_default=True,
    help="Global fire budget on run_at (0 turns it off: spread alone).",
)
@click.option("--fire-burst", type=click.IntRange(1), default=1000, show_default=True)
@click.option(
    "--maintainer/--no-maintainer",
    default=True,
    show_default=True,
    help="Run the maintainer while leading: reap expired leases, promote due runs, archive"
    " finished runs, drop old history (off: leave it to another process).",
)
@hot_window_option
@archive_retention_option
@click.option("--once", is_flag=True, help="Run one step (lease, tick, maintenance) and exit.")
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
    fire_burst: int,
    maintainer: bool,
    hot_window: float,
    archive_retention_days: int,
    once: bool,
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
    import signal

    import prometheus_client

    from sundial.observability import logging as json_logging
    from sundial.scheduler import maintainer as maintainer_module
    from sundial.scheduler import trigger
    from sundial.store import pool as store_pool

    json_logging.configure(log_level.upper())
    maintenance = _maintainer_settings(hot_window, archive_retention_days)
    settings = trigger.TriggerSettings(
        batch_size=batch_size,
        poll_interval=datetime.timedelta(seconds=poll_seconds),
        lease_ttl_seconds=lease_ttl,
        fires_per_second=fires_per_second or None,
        fire_burst=fire_burst,
    )

    async def serve() -> None:
        # Handle SIGTERM from the start: a stop while the pool opens is still a clean exit.
        stop = asyncio.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(signum, stop.set)
        opened = await store_pool.open_pool(dsn, min_size=1, max_size=4, name="sundial-scheduler")
        try:
            loop = trigger.TriggerLoop(opened, holder=holder, settings=settings)
            keeper = maintainer_module.Maintainer(opened, holder=loop.holder, settings=maintenance)
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
            await opened.close()

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
    "--max-unfinished",
    type=click.IntRange(min=1),
    default=None,
    help="Claimed runs whose finish is not committed yet, at most; claiming waits past it "
    "(default: twice the slots of --concurrency; never fewer than the slots).",
)
@click.option(
    "--metrics-port",
    type=int,
    default=8080,
    show_default=True,
    help="Port of /metrics, /healthz and /readyz (0: any free port; -1: off).",
)
@click.option("--metrics-host", default="0.0.0.0", show_default=True)
@click.option("--worker-id", default=None, help="Lease owner name; defaults to host:pid.")
@log_level_option
def runner(
    dsn: str,
    handler_modules: tuple[str, ...],
    queues: tuple[str, ...],
    concurrency: dict[str, int],
    lease_seconds: float,
    grace_seconds: float,
    poll_seconds: float,
    quarantine_after: int,
    retry_budget: int,
    retry_budget_window_seconds: float,
    maintenance: bool,
    maintenance_seconds: float,
    max_unfinished: int | None,
    metrics_port: int,
    metrics_host: str,
    worker_id: str | None,
    log_level: str,
) -> None:
    """Claim and execute runs of the registered handlers until SIGTERM; then drain, exit 0."""
    import asyncio
    import logging
    import os
    import socket
    import sys

    from sundial.observability import logging as json_logging
    from sundial.runner import health, registry, worker

    context = click.get_current_context()
    if not maintenance and context.get_parameter_source("maintenance_seconds") not in (
        click.core.ParameterSource.DEFAULT,
        None,
    ):
        raise click.UsageError(
            "--maintenance-seconds only sets the interval of --maintenance, which is off by"
            " default: add --maintenance, or leave reaping to `sundial scheduler` or the operator"
        )
    json_logging.configure(log_level.upper())
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
        metrics_host=metrics_host,
        metrics_port=None if metrics_port < 0 else metrics_port,
    )
    runner_worker = worker.Worker(settings, handlers)
    try:
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
@click.option("--service-account", default=None, help="ServiceAccount of Pods that name none.")
@click.option("--runner-image", default="sundial-runner:latest", show_default=True)
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
    service_account: str | None,
    runner_image: str,
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
    import signal
    import socket

    from kubernetes import client as kube_client
    from kubernetes import config as kube_config

    from sundial.observability import logging as json_logging
    from sundial.pods import launcher as launcher_module
    from sundial.pods import manifests
    from sundial.store import pool as store_pool

    json_logging.configure(log_level.upper())
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
        manifest=manifests.ManifestSettings(
            instance=instance,
            service_account_name=service_account,
            runner_image=runner_image,
            oom_memory_factor=1 + oom_memory_increase_percent / 100,
            oom_memory_cap_bytes=oom_max_memory,
        ),
    )

    async def serve() -> None:
        opened = await store_pool.open_pool(dsn, min_size=1, max_size=4, name="sundial-pods")
        try:
            launcher = launcher_module.PodLauncher(opened, api_client, settings)
            stop = asyncio.Event()
            for signum in (signal.SIGINT, signal.SIGTERM):
                asyncio.get_running_loop().add_signal_handler(signum, stop.set)
            logging.getLogger("sundial.pods").info(
                "pod launcher running",
                extra={"worker": settings.worker, "queues": list(queues), "pid": os.getpid()},
            )
            await launcher.run(stop)
        finally:
            await opened.close()
            api_client.close()  # type: ignore[no-untyped-call]

    asyncio.run(serve())


@main.group("pods")
def pods_() -> None:
    """Sundial's Pods, outside a running launcher."""


@pods_.command("release")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="Namespace to release Pods in (repeatable; default: every namespace).",
)
@click.option("--kubeconfig", default=None, help="Default: in-cluster config, else ~/.kube/config.")
@click.option("--instance", default="sundial", show_default=True, help="Label of Sundial's Pods.")
def pods_release(namespaces: tuple[str, ...], kubeconfig: str | None, instance: str) -> None:
    """Remove Sundial's outcome finalizer from every Pod of the installation.

    For uninstalling: run it after the operator (or `sundial pod-launcher`) is gone, so no
    Pod waits for a launcher that will not come back. Pods still running keep running; their
    outcome is not recorded (docs/adr/0023-pod-outcome-finalizer.md).
    """
    import asyncio

    from kubernetes import config as kube_config

    from sundial.pods import launcher as launcher_module

    api_client = kube_config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    try:
        released = asyncio.run(
            launcher_module.release_all(api_client, namespaces or None, instance)
        )
    finally:
        api_client.close()
    for name in released:
        click.echo(f"released {name}")
    click.echo(f"{len(released)} Pods released", err=True)


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
    help="Port of GET /healthz (0 turns it off).",
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
@click.option("--pod-service-account", default=None, help="ServiceAccount of Pods that name none.")
@click.option(
    "--runner-image",
    default="sundial-runner:latest",
    show_default=True,
    help="Image of handler jobs whose executionModel is pod (it runs `sundial exec`).",
)
@hot_window_option
@archive_retention_option
@oom_increase_option
@oom_max_memory_option
def operator(
    dsn: str,
    namespaces: tuple[str, ...],
    all_namespaces: bool,
    liveness_port: int,
    holder: str | None,
    lease_ttl: float,
    mirror_seconds: float,
    pod_gc_seconds: float,
    pod_launcher: bool,
    pod_instance: str,
    pod_queues: tuple[str, ...],
    max_pods: int,
    pod_service_account: str | None,
    runner_image: str,
    hot_window: float,
    archive_retention_days: int,
    oom_memory_increase_percent: int,
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
    maintenance = _maintainer_settings(hot_window, archive_retention_days)
    config = runtime.OperatorConfig(
        dsn=dsn,
        namespaces=None if all_namespaces or not namespaces else namespaces,
        liveness_port=liveness_port,
        holder=holder or trigger.default_holder(),
        lease_ttl_seconds=lease_ttl,
        mirror_interval=datetime.timedelta(seconds=mirror_seconds),
        pod_gc_interval=datetime.timedelta(seconds=pod_gc_seconds),
        maintainer=maintenance,
        pod_launcher=pod_launcher,
        pod_queues=pod_queues,
        max_pods=max_pods,
        pods=manifests.ManifestSettings(
            instance=pod_instance,
            service_account_name=pod_service_account,
            runner_image=runner_image,
            oom_memory_factor=1 + oom_memory_increase_percent / 100,
            oom_memory_cap_bytes=oom_max_memory,
        ),
    )
    sys.exit(asyncio.run(runtime.serve(config)))


#: ``sundial runs cancel`` / ``replay``: the run exists but its state does not allow it.
EXIT_RUN_REFUSED = 1
#: ``sundial runs cancel`` / ``replay``: there is no run with that id.
EXIT_NO_SUCH_RUN = 3

_RUN_EXIT_CODES = """\b
Exit codes:
  0  done
  1  the run's state does not allow it (the message says why and what to do)
  2  usage error (a missing --dsn, a bad RUN_ID)
  3  there is no run with that id"""


#: A run id is a PostgreSQL bigint, and ids start at 1.
MAX_RUN_ID = 2**63 - 1


class RunIdType(click.ParamType[int]):
    """A run id as `sundial runs` prints it: ASCII digits, 1 to 2**63-1.

    ``int()`` alone is too lenient for an id a person types or pastes: it takes ``' 7 '``,
    ``'1_000'`` and other scripts' digits (``'٣'`` is 3), and a number past bigint would reach
    PostgreSQL as an error. Anything else is a usage error (exit 2) that says what an id is.
    """

    name = "run_id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        text = str(value)
        shown = ascii(text) if len(text) <= 40 else ascii(text[:37]) + "..."
        if not text.isascii() or not text.isdigit():
            self.fail(
                f"{shown} is not a run id: give the number `sundial runs` shows in its ID"
                " column (ASCII digits only)",
                param,
                ctx,
            )
        number = int(text)
        if not 1 <= number <= MAX_RUN_ID:
            self.fail(f"{shown} is not a run id: ids run from 1 to {MAX_RUN_ID}", param, ctx)
        return number


RUN_ID = RunIdType()


def _refuse(message: str, exit_code: int) -> NoReturn:
    """``Error: <message>`` on stderr, then exit with the command's documented code."""
    click.echo(f"Error: {message}", err=True)
    raise click.exceptions.Exit(exit_code)


#: ``--dsn`` of ``sundial runs``: required to list, or given to a subcommand instead.
_optional_dsn_option = click.option(
    "--dsn",
    envvar="SUNDIAL_DSN",
    default=None,
    help="libpq URL of the PostgreSQL database (or SUNDIAL_DSN).",
)


def _require_dsn(ctx: click.Context, dsn: str | None) -> str:
    """``dsn``, else the one given to ``sundial runs``; a usage error (exit 2) without one."""
    parent = ctx.parent.params.get("dsn") if ctx.parent is not None else None
    chosen = dsn or parent
    if not chosen:
        [param] = [p for p in ctx.command.params if p.name == "dsn"]
        raise click.MissingParameter(ctx=ctx, param=param)
    return str(chosen)


@main.group("runs", invoke_without_command=True)
@_optional_dsn_option
@click.option("--job", default=None, help="Only this job: namespace/name (or name in default).")
@click.option("--limit", type=click.IntRange(1, 100_000), default=50, show_default=True)
@click.pass_context
def runs_(ctx: click.Context, dsn: str | None, job: str | None, limit: int) -> None:
    """List the newest runs from PostgreSQL: the full history, not only the JobRun window.

    With a command, act on one run without the operator: `sundial runs cancel RUN_ID`,
    `sundial runs replay RUN_ID`.
    """
    if ctx.invoked_subcommand is not None:
        return
    _list_runs(_require_dsn(ctx, dsn), job, limit)


def _list_runs(dsn: str, job: str | None, limit: int) -> None:
    import asyncio

    from sundial.store import history
    from sundial.store import pool as store_pool

    namespace = name = None
    if job is not None:
        if any(unicodedata.category(c) in ("Cc", "Cs") for c in job):
            raise click.BadParameter(
                "give namespace/name (or a name in default) without control characters",
                param_hint="--job",
            )
        namespace, slash, name = job.partition("/")
        if not slash:
            namespace, name = "default", job

    async def read() -> list[history.HistoryRow]:
        opened = await store_pool.open_pool(dsn, min_size=1, max_size=1, name="sundial-runs")
        try:
            return await history.recent(opened, namespace=namespace, job=name, limit=limit)
        finally:
            await opened.close()

    def when(moment: object) -> str:
        return "-" if moment is None else f"{moment:%Y-%m-%dT%H:%M:%SZ}"

    rows = asyncio.run(read())
    header = (
        "ID",
        "JOB",
        "STATE",
        "ATTEMPT",
        "FIRE TIME",
        "STARTED",
        "FINISHED",
        "REASON",
        "DETAIL",
        "POD",
        "EXIT",
        "POD REASON",
    )
    table = [header] + [
        (
            str(row.id),
            f"{row.namespace}/{row.job}",
            row.state,
            str(row.attempt),
            when(row.fire_time),
            when(row.started_at),
            when(row.finished_at),
            "Unclaimable" if row.unclaimable_reason else (row.failure_reason or "-"),
            row.failure_detail or "-",
            row.pod_name or "-",
            "-" if row.pod_exit_code is None else str(row.pod_exit_code),
            row.pod_reason or "-",
        )
        for row in rows
    ]
    widths = [max(len(line[column]) for line in table) for column in range(len(header))]
    for line in table:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )
    # Why a run waits is a sentence, too long for a column: under the table, one per run.
    for row in rows:
        if row.unclaimable_reason:
            click.echo(f"run {row.id} is unclaimable: {row.unclaimable_reason}")


@runs_.command("cancel", epilog=_RUN_EXIT_CODES)
@click.argument("run_id", type=RUN_ID)
@click.option(
    "--reason",
    default="sundial runs cancel",
    show_default=True,
    help="Why; the run's last error becomes 'cancelled: REASON'.",
)
@_optional_dsn_option
@click.pass_context
def runs_cancel(ctx: click.Context, run_id: int, reason: str, dsn: str | None) -> None:
    """Cancel the run RUN_ID, as deleting its JobRun or `spec.cancel` would.

    A run that has not started (scheduled, blocked, pending, retry_wait) ends cancelled now,
    and the runs that depend on it are cancelled with it. A running run is asked to stop: its
    worker (a runner, or the pod launcher, which deletes its Pod) ends it cancelled at its next
    heartbeat, within a third of its lease; if its worker is gone, the reaper ends it cancelled
    once its lease expires. A finished run is left as it is (exit 1).
    """
    import asyncio

    from sundial.scheduling import run_state
    from sundial.store import errors, runs

    database = _require_dsn(ctx, dsn)
    text = reason.strip()
    if not text:
        raise click.BadParameter("give a reason, or leave --reason out", param_hint="--reason")
    if any(unicodedata.category(c) in ("Cc", "Cs") and c not in "\t\n" for c in text):
        raise click.BadParameter(
            "give a reason without control characters (NUL and the like)", param_hint="--reason"
        )
    recorded = f"cancelled: {text}"
    if len(recorded.encode()) > 8192:  # job_runs.cancel_reason's CHECK (migration 0070)
        raise click.BadParameter("at most 8,000 bytes", param_hint="--reason")

    async def cancel() -> tuple[runs.CancelResult, runs.RunInfo | None]:
        async with _store_pool(database) as pool:
            result = await runs.cancel(pool, run_id, reason=recorded)
            info = await runs.get(pool, run_id)
            return result, info

    try:
        result, info = asyncio.run(cancel())
    except errors.NoSuchRunError as error:
        _refuse(str(error), EXIT_NO_SUCH_RUN)
    if result is runs.CancelResult.CANCELLED:
        click.echo(f"run {run_id} cancelled (it had not started; its dependents are cancelled)")
    elif result is runs.CancelResult.REQUESTED:
        owner = info.lease_owner if info is not None and info.lease_owner else "its worker"
        click.echo(
            f"run {run_id} is running: cancel requested; {owner} ends it cancelled at its next"
            f" heartbeat (`sundial runs` shows the end)"
        )
    else:
        state = info.state if info is not None else "finished"
        hint = (
            f"; to run it again: sundial runs replay {run_id}" if state in run_state.FAILED else ""
        )
        _refuse(
            f"run {run_id} cannot be cancelled: it already ended {state}, nothing is left to"
            f" stop{hint}",
            EXIT_RUN_REFUSED,
        )


@runs_.command("replay", epilog=_RUN_EXIT_CODES)
@click.argument("run_id", type=RUN_ID)
@_optional_dsn_option
@click.pass_context
def runs_replay(ctx: click.Context, run_id: int, dsn: str | None) -> None:
    """Put the dead-lettered, failed or timed-out run RUN_ID back in the queue.

    It stays the same run with a fresh retry budget (retries, OOM and infrastructure retries);
    its next claim is a new attempt, so fencing tokens are never reused. Runs that depended on
    it and were already failed stay failed: submit them again. A run archived out of the live
    table cannot be replayed (exit 1): submit its job again.
    """
    import asyncio

    from sundial.store import errors, runs

    database = _require_dsn(ctx, dsn)

    async def replay() -> int:
        async with _store_pool(database) as pool:
            return await runs.replay(pool, run_id)

    try:
        attempt = asyncio.run(replay())
    except errors.NoSuchRunError as error:
        _refuse(str(error), EXIT_NO_SUCH_RUN)
    except errors.RunNotReplayableError as error:
        _refuse(str(error), EXIT_RUN_REFUSED)
    click.echo(
        f"run {run_id} replayed: pending with a fresh retry budget; its next claim is"
        f" attempt {attempt + 1}"
    )


@contextlib.asynccontextmanager
async def _store_pool(dsn: str) -> AsyncIterator[Pool]:
    from sundial.store import pool as store_pool

    opened = await store_pool.open_pool(dsn, min_size=1, max_size=1, name="sundial-runs")
    try:
        yield opened
    finally:
        await opened.close()
