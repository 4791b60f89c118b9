"""``kubectl sundial history SJ``: every run of a job, from PostgreSQL, without its DSN.

etcd keeps a bounded window of JobRuns; the full history is in PostgreSQL. The operator
serves it as an aggregated API (``runs.history.sundial.dev``) and this verb reads it through
the API server, so the user's kubeconfig and RBAC are all it needs: ``list`` on
``runs.history.sundial.dev`` in the namespace, which the chart aggregates into ``view``
(docs/adr/0048-history-as-an-aggregated-api.md).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import click

from sundial.api import job_run
from sundial.kubectl_plugin import client, options, output

__all__ = ["history", "history_table", "runs_path"]

PAGE: Final = 1000


def runs_path(namespace: str) -> str:
    """The history API's list of one namespace's runs."""
    return f"/apis/history.sundial.dev/v1alpha1/namespaces/{namespace}/runs"


def _parse(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _row(item: Mapping[str, Any]) -> dict[str, Any]:
    """A run as ``sundial runs -o json`` prints it: the API's object without its envelope."""
    return {
        key: value for key, value in item.items() if key not in ("kind", "apiVersion", "metadata")
    }


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
def history(
    scheduled_job: str,
    connection: options.Connection,
    limit: int,
    everything: bool,
    output_format: str | None,
) -> None:
    """Every run of ScheduledJob SJ that PostgreSQL has, newest first (also the runs of a
    deleted ScheduledJob, and runs long gone from the JobRun window).

    Needs RBAC ``list`` on ``runs.history.sundial.dev`` in the namespace (the chart gives it
    to ``view``), not a database DSN.
    """
    cluster = connection.connect()
    target = client.Target("list", client.HISTORY_RESOURCE, cluster.namespace)
    rows: list[dict[str, Any]] = []
    try:
        before: str | None = None
        while True:
            wanted = PAGE if everything else min(PAGE, limit - len(rows))
            query = {"job": scheduled_job, "limit": str(wanted)}
            if before is not None:
                query["continue"] = before
            page = cluster.get_path(target, runs_path(cluster.namespace), query)
            rows.extend(_row(item) for item in page.get("items") or [])
            before = (page.get("metadata") or {}).get("continue")
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
