"""``kubectl sundial wait JR``: follow a run's phase until it ends; the exit code says how.

A watch on the one JobRun (``metadata.name`` field selector) from the resourceVersion of a
first read, so no change between the read and the watch is missed; a watch the server ends
(its timeout, or 410 Gone after compaction) is restarted from a fresh read. Each change of
phase or attempt is printed once, with the reason when there is one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

import click

from sundial.api import job_run
from sundial.kubectl_plugin import client, options, outcome, output

__all__ = ["EXIT_FOR_PHASE", "describe", "follow_to_the_end", "wait", "wait_limit"]

EXIT_FOR_PHASE: Final = {
    "Succeeded": outcome.OK,
    "Failed": outcome.FAILED,
    "TimedOut": outcome.FAILED,
    "DeadLettered": outcome.FAILED,
    "Cancelled": outcome.CANCELLED,
}
assert set(EXIT_FOR_PHASE) == job_run.ENDED_PHASES


def describe(body: Mapping[str, Any]) -> str:
    """One line for the run's state: ``Running (attempt 2)``, ``Failed: OOMKilled``."""
    current = body.get("status") or {}
    phase = current.get("phase") or "Pending (not submitted yet)"
    parts = [str(phase)]
    if current.get("attempt"):
        parts.append(f"(attempt {current['attempt']})")
    line = " ".join(parts)
    if current.get("reason"):
        line += f": {current['reason']}"
    if current.get("phase") in job_run.ENDED_PHASES and current.get("lastError"):
        line += f" - {str(current['lastError']).splitlines()[0][:200]}"
    return line


@click.command("wait")
@click.argument("name", metavar="JR", shell_complete=options.complete_names("JobRun"))
@options.connection_options
@click.option(
    "--timeout",
    default="0",
    show_default=True,
    metavar="DURATION",
    help="Give up after this long (exit 5); 0 waits for as long as it takes.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the final phase.")
def wait(name: str, connection: options.Connection, timeout: str, quiet: bool) -> None:
    """Wait for JobRun JR to finish, printing its phase as it changes.

    Exits 0 if it Succeeded, 1 if it Failed, TimedOut or was DeadLettered, 4 if it was
    Cancelled, 5 if --timeout passed first, 3 if there is no such JobRun (or it was deleted).
    """
    limit = wait_limit(timeout)
    cluster = connection.connect()
    try:
        code = follow_to_the_end(cluster, name, limit, quiet)
    finally:
        cluster.close()
    raise SystemExit(code)


def wait_limit(timeout: str) -> float:
    """Seconds of ``--timeout`` (0: no limit), or the usage error that says what is wrong."""
    try:
        return output.parse_duration(timeout)
    except ValueError as error:
        raise outcome.PluginError(f"--timeout: {error}", outcome.USAGE) from error


def follow_to_the_end(cluster: client.Cluster, name: str, limit: float, quiet: bool) -> int:
    """Print JobRun ``name``'s phase as it changes until it ends; the exit code for its final
    phase. Raises ``PluginError`` when it is deleted, or still running after ``limit`` seconds
    (``wait_limit``; 0: no limit)."""
    deadline = time.monotonic() + limit if limit else None
    reference = f"{client.JOB_RUN.type_name}/{name}"
    last = ""
    while True:
        body = cluster.get(client.JOB_RUN, name)
        last = _show(reference, body, last, quiet)
        phase = (body.get("status") or {}).get("phase")
        if phase in EXIT_FOR_PHASE:
            return _finish(reference, body, quiet)
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            break
        window = 30 if remaining is None else max(1, min(30, int(remaining)))
        try:
            for event in cluster.watch(
                client.JOB_RUN,
                cluster.namespace,
                field_selector=f"metadata.name={name}",
                resource_version=str(body["metadata"].get("resourceVersion", "")),
                timeout_seconds=window,
            ):
                changed = event.get("object") or {}
                if event.get("type") == "DELETED":
                    raise outcome.PluginError(
                        f"{reference} was deleted while waiting", outcome.NOT_FOUND
                    )
                if event.get("type") == "ERROR":
                    break  # 410 Gone and the like: start over from a fresh read
                last = _show(reference, changed, last, quiet)
                if (changed.get("status") or {}).get("phase") in EXIT_FOR_PHASE:
                    return _finish(reference, changed, quiet)
                if deadline is not None and time.monotonic() >= deadline:
                    break
        except outcome.PluginError as error:
            if error.code != outcome.FAILED or "410" not in error.message:
                raise
        if deadline is not None and time.monotonic() >= deadline:
            break
    raise outcome.PluginError(
        f"{reference} still {last.split(' ')[0] if last else 'unknown'} after {limit:g}s",
        outcome.TIMEOUT,
    )


def _show(reference: str, body: Mapping[str, Any], last: str, quiet: bool) -> str:
    line = describe(body)
    if line != last and not quiet:
        click.echo(f"{reference} {line}")
    return line


def _finish(reference: str, body: Mapping[str, Any], quiet: bool) -> int:
    phase = str((body.get("status") or {}).get("phase"))
    if quiet:
        click.echo(f"{reference} {describe(body)}")
    return EXIT_FOR_PHASE[phase]
