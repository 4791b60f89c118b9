"""``kubectl sundial logs JR``: the logs of the Pods of each attempt of a run.

The pod launcher labels every Pod with ``sundial.dev/run-id`` and ``sundial.dev/attempt``
(``sundial.pods.manifests``), so the Pods of a run are one label query, in attempt order.
A run served by a runner has no Pod: its handler's log lines are in the log of the runner
process that ran it, as JSON lines carrying ``"run_id"`` (``sundial.runner.context``); Sundial
keeps no copy of them, and this verb says so and how to find them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import click

from sundial.api import labels
from sundial.kubectl_plugin import client, options, outcome

__all__ = ["logs", "print_logs", "runner_hint"]


@click.command("logs")
@click.argument("name", metavar="JR", shell_complete=options.complete_names("JobRun"))
@options.connection_options
@click.option("--attempt", type=click.IntRange(min=1), help="Only this attempt's Pod.")
@click.option("-f", "--follow", is_flag=True, help="Follow the log of the latest (or --attempt).")
def logs(name: str, connection: options.Connection, attempt: int | None, follow: bool) -> None:
    """Print the Pod logs of each attempt of JobRun JR, oldest first."""
    cluster = connection.connect()
    try:
        print_logs(cluster, name, attempt, follow)
    finally:
        cluster.close()


def print_logs(cluster: client.Cluster, name: str, attempt: int | None, follow: bool) -> None:
    """Write the logs of JobRun ``name``'s Pods (one attempt's, or each one's in order) to
    stdout; ``PluginError`` says why there are none."""
    body = cluster.get(client.JOB_RUN, name)
    current = body.get("status") or {}
    run_id = current.get("runId")
    if run_id is None:
        raise outcome.PluginError(
            f"JobRun {name} has no run yet ({current.get('phase') or 'not submitted'}); "
            f"wait for it: kubectl sundial wait {name}"
        )
    selector = f"{labels.LABEL_RUN_ID}={run_id}"
    if attempt is not None:
        selector += f",{labels.LABEL_ATTEMPT}={attempt}"
    pods: list[Any] = sorted(
        cluster.pods(cluster.namespace, selector),
        key=lambda pod: int((pod.metadata.labels or {}).get(labels.LABEL_ATTEMPT, 0)),
    )
    if not pods:
        raise outcome.PluginError(_no_pods(cluster, body, int(run_id), attempt))
    if follow:
        pods = pods[-1:]
    failures = 0
    for pod in pods:
        label = (pod.metadata.labels or {}).get(labels.LABEL_ATTEMPT, "?")
        if len(pods) > 1 or attempt is None:
            click.echo(f"==> attempt {label}: pod/{pod.metadata.name} <==")
        try:
            for chunk in cluster.pod_log(cluster.namespace, pod.metadata.name, follow=follow):
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
        except outcome.PluginError as error:
            failures += 1
            click.echo(
                f"cannot read the log of pod/{pod.metadata.name} "
                f"(phase {getattr(pod.status, 'phase', None)}): {error.message}",
                err=True,
            )
    if failures == len(pods):
        raise outcome.PluginError(
            f"no log of run {run_id} could be read: the node of its Pods serves no logs "
            "(a simulated node), or the Pods have not started"
        )


def _no_pods(
    cluster: client.Cluster, body: Mapping[str, Any], run_id: int, attempt: int | None
) -> str:
    spec = body.get("spec") or {}
    job: Mapping[str, Any] = spec.get("job") or {}
    reference = (spec.get("jobRef") or {}).get("name")
    if reference:
        try:
            job = cluster.get(client.SCHEDULED_JOB, reference).get("spec") or {}
        except outcome.PluginError:
            job = {}
    handler = job.get("handler") or {}
    if handler and handler.get("executionModel") != "pod":
        return runner_hint(run_id, str(handler.get("name")))
    phase = (body.get("status") or {}).get("phase")
    which = f"attempt {attempt} of run {run_id}" if attempt else f"run {run_id}"
    return (
        f"no Pod of {which} is left (phase {phase}): Pods are deleted with their JobRun "
        "window, and a run that has not started has none yet"
    )


def runner_hint(run_id: int, handler: str) -> str:
    """Where the handler's log lines of a runner job are."""
    return (
        f"run {run_id} ran in a runner (handler {handler}), not in a Pod: Sundial keeps no copy "
        "of a handler's log lines; they are in the log of the runner that ran it, as JSON "
        f'lines with "run_id": {run_id} (e.g. kubectl logs RUNNER_POD | grep \'"run_id": '
        f"{run_id}[,}}]')"
    )
