"""``kubectl sundial history SJ``: every run of a job, from PostgreSQL, without its DSN.

etcd keeps a bounded window of JobRuns; the full history is in PostgreSQL. The operator
serves it (``sundial.operator.history_endpoint``) and this verb reaches it through the API
server's service proxy, so the user's kubeconfig and RBAC are all it needs: ``get`` on
``services/proxy`` for the operator's Service (docs/adr/0026-history-through-the-service-proxy.md).
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import click

from sundial.api import job_run
from sundial.kubectl_plugin import options, outcome, output

__all__ = ["DEFAULT_SERVICE", "SERVICE_ENV", "history", "history_table", "parse_service"]

SERVICE_ENV: Final = "SUNDIAL_HISTORY_SERVICE"
DEFAULT_SERVICE: Final = "sundial-system/sundial-operator"
PAGE: Final = 1000


def parse_service(text: str) -> tuple[str, str]:
    """``NAMESPACE/NAME[:PORT]`` into (namespace, name[:port])."""
    namespace, separator, name = text.partition("/")
    if not separator or not namespace or not name:
        raise outcome.PluginError(
            f"--service {text!r}: write NAMESPACE/NAME[:PORT] (the operator's Service)",
            outcome.USAGE,
        )
    return namespace, name


def _parse(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def history_table(rows: Sequence[Mapping[str, Any]], *, now: datetime.datetime, wide: bool) -> str:
    header = ["RUN", "STATE", "ATTEMPT", "FIRE TIME", "STARTED", "DURATION", "REASON"]
    if wide:
        header += ["POD", "EXIT CODE", "DETAIL"]
    lines = []
    for row in rows:
        started, finished = _parse(row.get("startedAt")), _parse(row.get("finishedAt"))
        duration = (
            job_run.format_duration((finished - started).total_seconds())
            if started and finished
            else output.NONE
        )
        cells = [
            str(row.get("runId")),
            str(row.get("state")),
            str(row.get("attempt")),
            str(row.get("fireTime") or output.NONE),
            output.age_since(row.get("startedAt"), now),
            duration,
            str(row.get("failureReason") or output.NONE),
        ]
        if wide:
            exit_code = row.get("podExitCode")
            cells += [
                str(row.get("podName") or output.NONE),
                output.NONE if exit_code is None else str(exit_code),
                str(row.get("failureDetail") or output.NONE),
            ]
        lines.append(cells)
    return output.table(lines, header)


@click.command("history")
@click.argument(
    "scheduled_job", metavar="SJ", shell_complete=options.complete_names("ScheduledJob")
)
@options.connection_options
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 100000))
@click.option("--all", "everything", is_flag=True, help="Every run (pages through them all).")
@click.option(
    "-o", "--output", "output_format", type=click.Choice(["wide", "json"]), help="Output format."
)
@click.option(
    "--service",
    envvar=SERVICE_ENV,
    default=DEFAULT_SERVICE,
    show_default=True,
    metavar="NAMESPACE/NAME[:PORT]",
    help=f"The operator's Service (also ${SERVICE_ENV}).",
)
def history(
    scheduled_job: str,
    connection: options.Connection,
    limit: int,
    everything: bool,
    output_format: str | None,
    service: str,
) -> None:
    """Every run of ScheduledJob SJ that PostgreSQL has, newest first (also the runs of a
    deleted ScheduledJob, and runs long gone from the JobRun window).

    Needs RBAC ``get`` on ``services/proxy`` for the operator's Service, not a database DSN.
    """
    service_namespace, service_name = parse_service(service or os.environ.get(SERVICE_ENV, ""))
    cluster = connection.connect()
    rows: list[dict[str, Any]] = []
    try:
        before: str | None = None
        while True:
            wanted = PAGE if everything else min(PAGE, limit - len(rows))
            query = {"namespace": cluster.namespace, "job": scheduled_job, "limit": str(wanted)}
            if before is not None:
                query["before"] = before
            page = cluster.proxy_get(service_namespace, service_name, "history", query)
            rows.extend(page.get("items") or [])
            before = page.get("before")
            if before is None or (not everything and len(rows) >= limit):
                break
    finally:
        cluster.close()
    if output_format == "json":
        click.echo(json.dumps({"items": rows}, indent=4))
        return
    if not rows:
        click.echo(
            f"No runs of {scheduled_job} in namespace {cluster.namespace} in PostgreSQL.", err=True
        )
        return
    click.echo(history_table(rows, now=options.now(), wide=output_format == "wide"))
