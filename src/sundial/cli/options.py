"""Options and parameter types shared by several commands: the database, memory, durations,
log levels, the maintainer's windows."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from sundial.api import validate

if TYPE_CHECKING:
    from sundial.scheduler import maintainer as maintainer_module

#: Every command that talks to PostgreSQL takes the database the same way.
dsn_option = click.option(
    "--dsn",
    envvar="SUNDIAL_DSN",
    required=True,
    help="libpq URL of the PostgreSQL database (or SUNDIAL_DSN).",
)


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
    """A duration in seconds, written ``90``, ``90s``, ``30m``, ``1h`` or ``2d``; never
    negative. ``positive``: 0 is refused too (an interval of 0 would run its task without a
    pause), and ``example`` is what the error suggests instead."""

    name = "duration"
    _UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

    def __init__(self, *, positive: bool = False, example: str = "90s, 30m, 1h") -> None:
        self.positive = positive
        self.example = example

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            seconds = float(value)
        else:
            text = str(value).strip().lower()
            unit = self._UNITS.get(text[-1:], None)
            number = text[:-1] if unit is not None else text
            try:
                seconds = float(number) * (unit or 1.0)
            except ValueError:
                seconds = float("nan")
        if seconds != seconds or seconds == float("inf"):  # NaN: not a number at all
            self.fail(
                f"{value!r} is not a duration: write a number of seconds, or a number with"
                " s, m, h or d (90s, 30m, 1h, 2d)",
                param,
                ctx,
            )
        if seconds < 0:
            self.fail(f"{value!r} is negative: write a duration such as {self.example}", param, ctx)
        if self.positive and seconds == 0:
            self.fail(
                f"{value!r} is not more than 0: write a duration such as {self.example}",
                param,
                ctx,
            )
        return seconds


#: The daemons' log level; every daemon logs JSON lines (``observability.json_logs``).
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


#: How often retention runs; an hour suits month partitions, a benchmark shortens it.
retention_interval_option = click.option(
    "--retention-interval",
    type=Duration(positive=True, example="1h (the default) or 5m"),
    default="1h",
    show_default=True,
    help="How often the maintainer creates the next month partitions and drops the expired"
    " ones: 90s, 30m, 1h.",
)


key_retention_option = click.option(
    "--key-retention",
    type=Duration(),
    default="7d",
    show_default=True,
    help="Delete idempotency keys and schedule fire keys this long after they were written,"
    " once their run left job_runs (0: keep them). A submission retried after it makes a"
    " second run: keep it longer than any client retries a submit or the operator stays down.",
)


def _maintainer_settings(
    hot_window: float,
    archive_retention_days: int,
    retention_interval: float = 3600.0,
    key_retention: float = 7 * 86400.0,
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
            retention_interval=datetime.timedelta(seconds=retention_interval),
            key_retention=datetime.timedelta(seconds=key_retention) if key_retention else None,
        )
    except ValueError:
        raise click.UsageError(
            f"--hot-window ({hot_window:g}s) must be shorter than --archive-retention-days"
            f" ({archive_retention_days} days): raise the retention or shorten the window"
        ) from None


def fire_budget_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--fires-per-second`` and ``--namespace-fires-per-second``: how many runs one second of
    run_at may hold, in all and of one namespace (``sundial.scheduling.fire_budget``)."""
    command = click.option(
        "--namespace-fires-per-second",
        type=click.FloatRange(0, min_open=True),
        default=None,
        help="Runs one second of run_at may hold of one namespace, so a namespace with many"
        " schedules due at once cannot fill the seconds its neighbours fire in (default: only"
        " --fires-per-second).",
    )(command)
    return click.option(
        "--fires-per-second",
        type=click.FloatRange(0),
        default=1000.0,
        show_default=True,
        help="Runs one second of run_at may hold in all; runs past it move to the next second"
        " with room (0 turns the budget off: spread alone).",
    )(command)


def fire_budget_settings(
    fires_per_second: float, namespace_fires_per_second: float | None
) -> tuple[float | None, float | None]:
    """The two options as ``TriggerSettings``' ``fires_per_second`` and
    ``namespace_fires_per_second``; a namespace rate needs the global one."""
    if namespace_fires_per_second is not None and not fires_per_second:
        raise click.UsageError(
            "--namespace-fires-per-second needs a fire budget: give --fires-per-second a rate"
            " above 0 (0 turns the budget off)"
        )
    return fires_per_second or None, namespace_fires_per_second


def job_pod_placement_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--job-pod-node-selector``, ``--job-pod-toleration``, ``--job-pod-affinity``: where every
    job Pod may run, under its template's own placement (``sundial.pods.placement``)."""
    command = click.option(
        "--job-pod-affinity",
        default=None,
        metavar="JSON",
        help="A Pod affinity object for job Pods; a template's own kind of affinity wins.",
    )(command)
    command = click.option(
        "--job-pod-toleration",
        "job_pod_tolerations",
        multiple=True,
        metavar="KEY[=VALUE][:EFFECT]|JSON",
        help="A toleration every job Pod gets besides its template's (repeatable).",
    )(command)
    return click.option(
        "--job-pod-node-selector",
        "job_pod_node_selector",
        multiple=True,
        metavar="KEY=VALUE",
        help="A node label every job Pod selects; a template's own key wins (repeatable).",
    )(command)


def job_pod_placement(
    node_selector: tuple[str, ...], tolerations: tuple[str, ...], affinity: str | None
) -> Any:
    """The ``Placement`` of the three options; a bad value is a usage error naming it."""
    from sundial.pods import placement

    try:
        return placement.Placement(
            node_selector=placement.parse_node_selector(node_selector),
            tolerations=tuple(placement.parse_toleration(t) for t in tolerations),
            affinity=placement.parse_affinity(affinity),
        )
    except placement.PlacementError as error:
        raise click.UsageError(str(error)) from None


_NAMESPACE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def is_namespace_name(name: str) -> bool:
    """Whether ``name`` is a DNS-1123 label, what Kubernetes allows a namespace to be called."""
    return len(name) <= 63 and _NAMESPACE_NAME.fullmatch(name) is not None


def _parse_namespace_weights(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, float]:
    """``NAMESPACE=WEIGHT`` values (comma lists split) as a mapping; each weight above 0."""
    weights: dict[str, float] = {}
    for item in (part.strip() for value in values for part in value.split(",")):
        if not item:
            continue
        name, separator, text = item.partition("=")
        name = name.strip()
        if not separator or not is_namespace_name(name):
            raise click.BadParameter(
                f"{item!r} is not NAMESPACE=WEIGHT: write e.g. team-a=3 (a namespace not named"
                " weighs 1)"
            )
        try:
            weight = float(text)
        except ValueError:
            weight = float("nan")
        if not 0 < weight < float("inf"):
            raise click.BadParameter(
                f"the weight of {name!r} is {text.strip()!r}: write a number above 0, e.g."
                f" {name}=3 for three times a namespace of weight 1"
            )
        if name in weights:
            raise click.BadParameter(f"{name!r} is weighed twice: give each namespace once")
        weights[name] = weight
    return weights


def namespace_weight_option(
    name: str, what: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``name`` (``NAMESPACE=WEIGHT``, repeatable) as ``namespace_weights``: a namespace's
    share of ``what`` against the others' while several have runs waiting."""
    return click.option(
        name,
        "namespace_weights",
        multiple=True,
        metavar="NAMESPACE=WEIGHT",
        callback=_parse_namespace_weights,
        help=f"A namespace's share of the {what} against the others' when several have runs"
        " waiting (repeatable; a namespace not named weighs 1): team-a=3 gives team-a three"
        " runs to one of each other namespace.",
    )


#: The pod launcher's ``--reserved-pods`` (the operator's and ``sundial pod-launcher``'s).
reserved_pods_option = click.option(
    "--reserved-pods",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Pods that the namespace the pod launcher holds most of may not take, where it serves"
    " more than one namespace: a quieter namespace's Pod starts at once beside another's flood"
    " of long Pods. With fewer than 8 --max-pods it keeps none; 0: none.",
)


def _parse_active_run_quotas(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, int]:
    """``NAMESPACE=RUNS`` values (comma lists split) as a mapping; each quota 0 or more."""
    found: dict[str, int] = {}
    for item in (part.strip() for value in values for part in value.split(",")):
        if not item:
            continue
        name, separator, text = item.partition("=")
        name = name.strip()
        if not separator or not is_namespace_name(name):
            raise click.BadParameter(
                f"{item!r} is not NAMESPACE=RUNS: write e.g. team-a=500 (a namespace not named"
                " gets --active-runs-per-namespace)"
            )
        try:
            quota = int(text.strip())
        except ValueError:
            quota = -1
        if not 0 <= quota <= 2**31 - 1:
            raise click.BadParameter(
                f"the quota of {name!r} is {text.strip()!r}: write a whole number of runs, 0"
                f" or more, e.g. {name}=500"
            )
        if name in found:
            raise click.BadParameter(f"{name!r} is given twice: give each namespace once")
        found[name] = quota
    return found


def active_run_quota_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--active-runs-per-namespace`` and ``--namespace-active-runs``: how many runs that have
    not ended a namespace may hold (``sundial.store.quotas``)."""
    command = click.option(
        "--namespace-active-runs",
        "active_run_quotas",
        multiple=True,
        metavar="NAMESPACE=RUNS",
        callback=_parse_active_run_quotas,
        help="A namespace's quota of runs that have not ended (repeatable; overrides"
        " --active-runs-per-namespace for it). A submission past it is refused, a fire past it"
        " dropped with a QuotaExceeded Event, a JobRun waits.",
    )(command)
    return click.option(
        "--active-runs-per-namespace",
        type=click.IntRange(0, 2**31 - 1),
        default=None,
        help="The quota of runs that have not ended of every namespace not named by"
        " --namespace-active-runs (default: none).",
    )(command)
