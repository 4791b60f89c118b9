"""``kubectl sundial next SJ`` (or ``-f FILE``): when a ScheduledJob fires next, and why then.

The times come from the trigger loop's own code (``scheduling.fire_preview`` over
``scheduling.cron``), so the preview and the schedule never disagree. Each line shows the fire
in the job's time zone and in UTC, when its run may start (the fire plus the job's spread
offset), and a note when DST moved it: a wall time skipped by spring-forward fires at the
transition; one repeated by fall-back fires once, at the first occurrence.

From the cluster the job's uid fixes its spread offset. From a file (offline, before an
apply) there is no uid yet, so a spread is shown as the window a run may start in.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import yaml

from sundial.kubectl_plugin import backfilling, client, options, outcome, output
from sundial.scheduling import cron, fire_preview, union
from sundial.scheduling import errors as scheduling_errors

__all__ = ["next_fires", "preview_lines"]


def _stamp(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def _from_file(path: str, name: str | None) -> Mapping[str, Any]:
    """The ScheduledJob of the file (``name`` picks one when it holds several)."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        documents = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except (OSError, yaml.YAMLError) as error:
        raise outcome.PluginError(f"{path}: {error}", outcome.USAGE) from error
    jobs = [d for d in documents if d.get("kind") == "ScheduledJob"]
    if name is not None:
        jobs = [d for d in jobs if (d.get("metadata") or {}).get("name") == name]
    if len(jobs) != 1:
        found = "no ScheduledJob" if not jobs else f"{len(jobs)} ScheduledJobs"
        hint = f" named {name}" if name else ""
        raise outcome.PluginError(
            f"{path}: {found}{hint}; give a file with one, or name one: "
            "kubectl sundial next NAME -f FILE",
            outcome.USAGE,
        )
    return jobs[0]


def preview_lines(
    body: Mapping[str, Any], after: datetime.datetime, count: int
) -> tuple[list[list[str]], list[str], dict[str, Any]]:
    """Table rows and header for ``body`` (a ScheduledJob), and the same as JSON."""
    metadata = body.get("metadata") or {}
    spec = body.get("spec") or {}
    name = metadata.get("name", "?")
    try:
        schedule = union.parse_manifest(spec)
        zone = cron.parse_time_zone(spec.get("timeZone"))
    except scheduling_errors.SchedulingError as error:
        raise outcome.PluginError(f"ScheduledJob {name}: {error}") from error
    spread_seconds = int(spec.get("spreadSeconds") or 0)
    uid = metadata.get("uid")
    fires = fire_preview.preview(
        schedule, after, count, spread_seconds=spread_seconds, identity=uid
    )
    zone_name = str(spec.get("timeZone") or "UTC")
    rows = []
    items = []
    for fire in fires:
        if fire.run_at is not None:
            run_at = _stamp(fire.run_at)
        else:
            run_at = f"{_stamp(fire.fire_time)} + up to {spread_seconds}s"
        local = fire.fire_time.astimezone(zone).isoformat()
        rows.append([local, _stamp(fire.fire_time), run_at, fire.note or ""])
        items.append(
            {
                "fireTime": _stamp(fire.fire_time),
                "localTime": local,
                "runAt": None if fire.run_at is None else _stamp(fire.run_at),
                "note": fire.note,
            }
        )
    header = [f"FIRE ({zone_name})", "UTC", "RUN AT", "NOTE"]
    document = {
        "scheduledJob": name,
        "schedule": spec.get("schedule"),
        "additionalSchedules": spec.get("additionalSchedules") or [],
        "exclusions": spec.get("exclusions") or [],
        "timeZone": zone_name,
        "spreadSeconds": spread_seconds,
        "suspended": bool(spec.get("suspend")),
        "fires": items,
    }
    return rows, header, document


@click.command("next")
@click.argument(
    "scheduled_job",
    metavar="SJ",
    required=False,
    shell_complete=options.complete_names("ScheduledJob"),
)
@options.connection_options
@click.option(
    "-f",
    "--filename",
    metavar="FILE",
    help="Read the ScheduledJob from FILE ('-': stdin) instead of the cluster; no cluster needed.",
)
@click.option(
    "--count",
    type=click.IntRange(1, fire_preview.MAX_COUNT),
    default=10,
    show_default=True,
    help="How many fire times.",
)
@click.option(
    "--after",
    metavar="TIME",
    help="Start after this RFC 3339 time (default: now); without an offset, in the job's zone.",
)
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json"]), default="table")
def next_fires(
    scheduled_job: str | None,
    connection: options.Connection,
    filename: str | None,
    count: int,
    after: str | None,
    fmt: str,
) -> None:
    """Print the next fire times of ScheduledJob SJ, in its time zone and in UTC, when each
    run may start, and which ones DST moved.

    With -f FILE it reads the manifest instead (offline, before `kubectl apply`).
    """
    if filename is not None:
        body = _from_file(filename, scheduled_job)
    elif scheduled_job is None:
        raise outcome.PluginError("give a ScheduledJob name, or -f FILE", outcome.USAGE)
    else:
        cluster = connection.connect()
        try:
            body = cluster.get(client.SCHEDULED_JOB, scheduled_job)
        finally:
            cluster.close()
    start = options.now()
    if after is not None:
        zone_text = (body.get("spec") or {}).get("timeZone")
        try:
            zone = cron.parse_time_zone(zone_text)
        except scheduling_errors.SchedulingError as error:
            raise outcome.PluginError(str(error)) from error
        start = backfilling.parse_bound(after, zone, "--after")
    rows, header, document = preview_lines(body, start, count)
    if fmt == "json":
        click.echo(json.dumps(document, indent=2))
        return
    if document["suspended"]:
        click.echo("suspended: none of these fires until it is resumed")
    click.echo(output.table(rows, header))
