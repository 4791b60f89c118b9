"""``kubectl sundial backfill SJ --from T --to T``: one JobRun per fire time in a closed range.

The fire times come from the ScheduledJob's own schedule in its own time zone
(``sundial.scheduling.cron``, the code the trigger loop fires with, DST rules included). Each
JobRun gets the fire time as ``spec.fireTime`` (handed to the job as its logical time), a name
and an ``idempotencyKey`` made of the job and that time, so running the same backfill twice,
or two overlapping ones, creates each run once. The range is bounded by ``--max`` and must lie
in the past: future fires are the schedule's own.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any, Final
from zoneinfo import ZoneInfo

import click

from sundial.kubectl_plugin import client, options, outcome
from sundial.scheduling import cron, union
from sundial.scheduling import errors as scheduling_errors

__all__ = ["BACKFILL_LABEL", "backfill", "fire_times_between", "run_name"]

BACKFILL_LABEL: Final = "sundial.dev/backfill-of"
DEFAULT_MAX: Final = 100


def parse_bound(text: str, zone: ZoneInfo, option: str) -> datetime.datetime:
    """An RFC 3339 time; a time or date without an offset is read in the job's zone."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as error:
        raise outcome.PluginError(
            f"{option} {text!r}: not a time; write e.g. 2026-11-01, 2026-11-01T09:00 (the "
            "ScheduledJob's time zone) or 2026-11-01T09:00:00Z",
            outcome.USAGE,
        ) from error
    if moment.tzinfo is None:
        moment = cron.resolve_wall_time(moment, zone)
    return moment.astimezone(datetime.UTC)


def fire_times_between(
    schedule: cron.Schedule, start: datetime.datetime, end: datetime.datetime
) -> Iterator[datetime.datetime]:
    """Every fire time ``t`` with ``start <= t <= end``, oldest first."""
    return cron.fire_times(schedule, start - datetime.timedelta(microseconds=1), end)


def run_name(scheduled_job: str, fire_time: datetime.datetime) -> str:
    """``nightly-bf-202611010900`` (UTC; seconds only when the fire has them)."""
    moment = fire_time.astimezone(datetime.UTC)
    stamp = moment.strftime("%Y%m%d%H%M%S" if moment.second else "%Y%m%d%H%M")
    return f"{scheduled_job}-bf-{stamp}"


def idempotency_key(uid: str, fire_time: datetime.datetime) -> str:
    return f"backfill.{uid}.{fire_time.astimezone(datetime.UTC):%Y%m%dT%H%M%SZ}"


def _rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


@click.command("backfill")
@click.argument(
    "scheduled_job", metavar="SJ", shell_complete=options.complete_names("ScheduledJob")
)
@options.connection_options
@click.option("--from", "start", required=True, metavar="TIME", help="The first time (included).")
@click.option("--to", "end", required=True, metavar="TIME", help="The last time (included).")
@click.option(
    "--max",
    "maximum",
    default=DEFAULT_MAX,
    show_default=True,
    type=click.IntRange(1, 10000),
    help="Refuse a range with more fire times than this.",
)
@click.option("--dry-run", is_flag=True, help="List the fire times and names; create nothing.")
def backfill(
    scheduled_job: str,
    connection: options.Connection,
    start: str,
    end: str,
    maximum: int,
    dry_run: bool,
) -> None:
    """Run ScheduledJob SJ once for each fire time of its schedule between --from and --to.

    Times without an offset are read in the ScheduledJob's timeZone. Each JobRun is named
    SJ-bf-<UTC time>, so a second backfill of the same range creates nothing new.
    """
    cluster = connection.connect()
    try:
        body = cluster.get(client.SCHEDULED_JOB, scheduled_job)
        spec = body.get("spec") or {}
        try:
            schedule = union.parse_manifest(spec)
            zone = cron.parse_time_zone(spec.get("timeZone"))
        except scheduling_errors.SchedulingError as error:
            raise outcome.PluginError(f"ScheduledJob {scheduled_job}: {error}") from error
        first = parse_bound(start, zone, "--from")
        last = parse_bound(end, zone, "--to")
        now = options.now()
        if first > last:
            raise outcome.PluginError("--from is after --to", outcome.USAGE)
        if last > now:
            raise outcome.PluginError(
                f"--to {end} is in the future: a backfill is for fires that have passed "
                "(the schedule fires the future ones itself)",
                outcome.USAGE,
            )
        times = []
        for moment in fire_times_between(schedule, first, last):
            times.append(moment)
            if len(times) > maximum:
                raise outcome.PluginError(
                    f"more than {maximum} fire times between {_rfc3339(first)} and "
                    f"{_rfc3339(last)}: narrow the range, or raise --max",
                    outcome.USAGE,
                )
        if not times:
            click.echo(f"no fire time of {spec.get('schedule')!r} between those times")
            return
        uid = str(body["metadata"]["uid"])
        created = existing = 0
        for moment in times:
            name = run_name(scheduled_job, moment)
            reference = f"{client.JOB_RUN.type_name}/{name}"
            local = moment.astimezone(zone).isoformat()
            if dry_run:
                click.echo(f"{reference} fire time {_rfc3339(moment)} ({local}) (dry run)")
                continue
            made = cluster.create_if_absent(
                client.JOB_RUN, cluster.namespace, _job_run(scheduled_job, uid, name, moment)
            )
            if made is None:
                existing += 1
                click.echo(f"{reference} unchanged (exists)")
            else:
                created += 1
                click.echo(f"{reference} created (fire time {_rfc3339(moment)})")
    finally:
        cluster.close()
    if dry_run:
        click.echo(f"{len(times)} fire times; nothing created (dry run)")
    else:
        click.echo(f"{created} created, {existing} already there")


def _job_run(scheduled_job: str, uid: str, name: str, moment: datetime.datetime) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": name, "labels": {BACKFILL_LABEL: scheduled_job}},
        "spec": {
            "jobRef": {"name": scheduled_job},
            "fireTime": _rfc3339(moment),
            "idempotencyKey": idempotency_key(uid, moment),
        },
    }
