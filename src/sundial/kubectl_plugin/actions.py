"""The verbs that change something: ``run``, ``suspend``, ``resume``, ``cancel``, ``replay``.

Each is one write to the API server that the operator acts on, the way a Kubernetes user
already drives a CronJob: ``run`` creates a JobRun with ``jobRef`` (``kubectl create job
--from=cronjob/x``), ``suspend``/``resume`` set ``spec.suspend``, ``cancel`` sets
``spec.cancel``, and ``replay`` sets the ``sundial.dev/replay`` annotation, which the operator
turns into the store's replay of the run and then removes.
"""

from __future__ import annotations

import datetime
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import pydantic
import yaml

from sundial.api import job_run, validate
from sundial.kubectl_plugin import client, options, outcome, output, pod_logs, waiting

__all__ = ["cancel", "parse_args", "replay", "resume", "run", "suspend"]

CREATED_BY_ANNOTATION = "sundial.dev/created-by"


def parse_args(pairs: tuple[str, ...], args_file: str | None) -> dict[str, Any]:
    """``--args-file`` (a JSON or YAML mapping; ``-`` is stdin), then each ``--arg KEY=VALUE``
    over it. A VALUE that parses as JSON is that JSON value (``n=5`` is the number 5,
    ``flags=[1,2]`` a list); anything else is the string as typed."""
    args: dict[str, Any] = {}
    if args_file is not None:
        text = sys.stdin.read() if args_file == "-" else _read(args_file)
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise outcome.PluginError(
                f"--args-file {args_file}: not JSON or YAML ({error})", outcome.USAGE
            ) from error
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise outcome.PluginError(
                f"--args-file {args_file}: must hold a mapping of argument names to values, "
                f"not a {type(loaded).__name__}",
                outcome.USAGE,
            )
        args.update({str(key): value for key, value in loaded.items()})
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise outcome.PluginError(
                f"--arg {pair!r}: write KEY=VALUE (e.g. --arg day=2026-12-01)", outcome.USAGE
            )
        try:
            args[key] = json.loads(value)
        except ValueError:
            args[key] = value
    if len(args) > validate.MAX_ARGS_KEYS:
        raise outcome.PluginError(
            f"{len(args)} arguments, more than the limit of {validate.MAX_ARGS_KEYS}",
            outcome.USAGE,
        )
    try:
        validate.validate_args_size(args)
    except validate.ArgsTooLargeError as error:
        raise outcome.PluginError(str(error), outcome.USAGE) from error
    return args


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise outcome.PluginError(f"cannot read {path}: {error.strerror}", outcome.USAGE) from error


def parse_at(text: str) -> datetime.datetime:
    """An RFC 3339 time with an offset (``2026-12-01T09:00:00Z``)."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as error:
        raise outcome.PluginError(
            f"--at {text!r}: not an RFC 3339 time; write e.g. 2026-12-01T09:00:00Z", outcome.USAGE
        ) from error
    if moment.tzinfo is None:
        raise outcome.PluginError(
            f"--at {text!r}: give the offset too (…Z or …+01:00): a bare time is ambiguous",
            outcome.USAGE,
        )
    return moment


def job_run_body(
    scheduled_job: str,
    *,
    name: str | None,
    args: dict[str, Any],
    delay_seconds: int | None,
    run_at: datetime.datetime | None,
    priority: int | None,
) -> dict[str, Any]:
    """A JobRun of ``scheduled_job``'s job, checked against the model before it is sent."""
    spec: dict[str, Any] = {"jobRef": {"name": scheduled_job}}
    if args:
        spec["args"] = args
    if delay_seconds is not None:
        spec["delaySeconds"] = delay_seconds
    if run_at is not None:
        spec["runAt"] = run_at.isoformat().replace("+00:00", "Z")
    if priority is not None:
        spec["priority"] = priority
    metadata: dict[str, Any] = {"annotations": {CREATED_BY_ANNOTATION: "kubectl-sundial run"}}
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = f"{scheduled_job}-run-"
    body = {"apiVersion": "sundial.dev/v1alpha1", "kind": "JobRun", "metadata": metadata}
    body["spec"] = spec
    try:
        job_run.JobRunSpec.model_validate(spec)
    except pydantic.ValidationError as error:
        problems = "; ".join(
            ".".join(str(p) for p in ("spec", *d["loc"])) + ": " + d["msg"] for d in error.errors()
        )
        raise outcome.PluginError(problems, outcome.USAGE) from error
    return body


@click.command("run")
@click.argument(
    "scheduled_job", metavar="SJ", shell_complete=options.complete_names("ScheduledJob")
)
@options.connection_options
@click.option("--name", help="The JobRun's name (default: SJ-run-<random>).")
@click.option("--arg", "pairs", multiple=True, metavar="KEY=VALUE", help="An argument (repeat).")
@click.option("--args-file", metavar="FILE", help="Arguments from a JSON/YAML mapping (- stdin).")
@click.option("--delay", metavar="DURATION", help="Start no sooner than this (90s, 5m, 1h30m).")
@click.option("--at", "at", metavar="TIME", help="Start no sooner than this RFC 3339 time.")
@click.option("--priority", type=click.IntRange(0, 9), help="This run's priority (0-9).")
@click.option("-o", "--output", "output_format", type=click.Choice(["name"]), help="Print only")
@click.option(
    "--wait",
    "wait_for_it",
    is_flag=True,
    help="Then wait for the run to end, printing its phase; exit as `wait` does.",
)
@click.option(
    "--timeout",
    default="0",
    show_default=True,
    metavar="DURATION",
    help="With --wait: give up after this long (exit 5); 0 waits as long as it takes.",
)
@click.option("--log", is_flag=True, help="Then wait (as --wait) and print its Pods' logs.")
def run(
    scheduled_job: str,
    connection: options.Connection,
    name: str | None,
    pairs: tuple[str, ...],
    args_file: str | None,
    delay: str | None,
    at: str | None,
    priority: int | None,
    output_format: str | None,
    wait_for_it: bool,
    timeout: str,
    log: bool,
) -> None:
    """Start a run of ScheduledJob SJ now (or later): a JobRun with jobRef, like
    ``kubectl create job --from=cronjob/x``. Arguments merge over the handler's ``args``.

    With ``--wait`` (or ``--log``) it then follows the run to its end and exits as ``wait``
    does: 0 Succeeded, 1 Failed, TimedOut or DeadLettered, 4 Cancelled, 5 past ``--timeout``;
    ``--log`` then prints the logs of its Pods, attempt by attempt."""
    if delay is not None and at is not None:
        raise outcome.PluginError("give --delay or --at, not both", outcome.USAGE)
    limit = waiting.wait_limit(timeout)
    delay_seconds = None
    if delay is not None:
        try:
            delay_seconds = output.parse_duration(delay)
        except ValueError as error:
            raise outcome.PluginError(f"--delay: {error}", outcome.USAGE) from error
    body = job_run_body(
        scheduled_job,
        name=name,
        args=parse_args(pairs, args_file),
        delay_seconds=delay_seconds,
        run_at=parse_at(at) if at is not None else None,
        priority=priority,
    )
    cluster = connection.connect()
    try:
        cluster.get(client.SCHEDULED_JOB, scheduled_job)  # a clear "not found" before creating
        created = cluster.create(client.JOB_RUN, cluster.namespace, body)
        name = created["metadata"]["name"]
        reference = f"{client.JOB_RUN.type_name}/{name}"
        click.echo(reference if output_format == "name" else f"{reference} created")
        if not (wait_for_it or log):
            return
        code = waiting.follow_to_the_end(cluster, name, limit, quiet=False)
        if log:
            try:
                pod_logs.print_logs(cluster, name, None, follow=False)
            except outcome.PluginError as error:
                click.echo(f"no logs: {error.message}", err=True)
    finally:
        cluster.close()
    raise SystemExit(code)


def _set_suspend(connection: options.Connection, name: str, value: bool) -> None:
    cluster = connection.connect()
    try:
        before = cluster.get(client.SCHEDULED_JOB, name)
        word = "suspended" if value else "resumed"
        reference = f"{client.SCHEDULED_JOB.type_name}/{name}"
        quarantined = _quarantine_message(before)
        if bool((before.get("spec") or {}).get("suspend")) == value:
            if not value and quarantined is not None:
                # Only a spec change lifts a quarantine (docs/failure-modes.md), and there is
                # none to make here: say how, rather than "already resumed".
                raise outcome.PluginError(
                    f"{reference} is quarantined ({quarantined}); a spec change lifts it: fix"
                    f" the job and apply it, or to try again as it is: kubectl sundial suspend"
                    f" {name} && kubectl sundial resume {name}",
                    outcome.FAILED,
                )
            click.echo(f"{reference} already {word}")
            return
        cluster.patch(client.SCHEDULED_JOB, name, {"spec": {"suspend": value}})
        lifted = " (the new generation lifts its quarantine)" if quarantined and not value else ""
        click.echo(f"{reference} {word}{lifted}")
    finally:
        cluster.close()


def _quarantine_message(body: Mapping[str, Any]) -> str | None:
    """The message of a ScheduledJob's Quarantined=True condition, or None."""
    for condition in (body.get("status") or {}).get("conditions") or ():
        if (
            isinstance(condition, dict)
            and condition.get("type") == "Quarantined"
            and condition.get("status") == "True"
        ):
            return str(condition.get("message") or "after repeated failures")
    return None


@click.command("suspend")
@click.argument("name", metavar="SJ", shell_complete=options.complete_names("ScheduledJob"))
@options.connection_options
def suspend(name: str, connection: options.Connection) -> None:
    """Stop ScheduledJob SJ from firing (``spec.suspend: true``); active runs go on."""
    _set_suspend(connection, name, True)


@click.command("resume")
@click.argument("name", metavar="SJ", shell_complete=options.complete_names("ScheduledJob"))
@options.connection_options
def resume(name: str, connection: options.Connection) -> None:
    """Let ScheduledJob SJ fire again (``spec.suspend: false``)."""
    _set_suspend(connection, name, False)


@click.command("cancel")
@click.argument("name", metavar="JR", shell_complete=options.complete_names("JobRun"))
@options.connection_options
def cancel(name: str, connection: options.Connection) -> None:
    """Cancel JobRun JR (``spec.cancel: true``): a run not started ends now, a running one is
    stopped. A finished run is left as it is."""
    cluster = connection.connect()
    reference = f"{client.JOB_RUN.type_name}/{name}"
    try:
        body = cluster.get(client.JOB_RUN, name)
        phase = (body.get("status") or {}).get("phase")
        if phase in job_run.ENDED_PHASES:
            click.echo(f"{reference} already finished ({phase}): nothing to cancel")
            return
        cluster.patch(client.JOB_RUN, name, {"spec": {"cancel": True}})
    finally:
        cluster.close()
    click.echo(f"{reference} cancel requested (kubectl sundial wait {name} follows it)")


@click.command("replay")
@click.argument("name", metavar="JR", shell_complete=options.complete_names("JobRun"))
@options.connection_options
@click.option(
    "--timeout",
    default="30s",
    show_default=True,
    metavar="DURATION",
    help="How long to wait for the operator to take the replay (0: do not wait).",
)
def replay(name: str, connection: options.Connection, timeout: str) -> None:
    """Run JobRun JR's run again with a fresh retry budget: a DeadLettered, Failed or TimedOut
    run goes back to Pending (same run, next attempt number). The operator does it when it sees
    the ``sundial.dev/replay`` annotation."""
    wait_seconds = waiting.wait_limit(timeout)
    cluster = connection.connect()
    reference = f"{client.JOB_RUN.type_name}/{name}"
    try:
        body = cluster.get(client.JOB_RUN, name)
        current = body.get("status") or {}
        phase = current.get("phase")
        if phase not in job_run.REPLAYABLE_PHASES:
            allowed = ", ".join(sorted(job_run.REPLAYABLE_PHASES))
            raise outcome.PluginError(
                f"{reference} is {phase or 'not submitted yet'}: only {allowed} runs can be "
                "replayed"
            )
        token = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        annotations = {job_run.REPLAY_ANNOTATION: token}
        cluster.patch(client.JOB_RUN, name, {"metadata": {"annotations": annotations}})
        if wait_seconds == 0:
            click.echo(f"{reference} replay requested")
            return
        deadline = time.monotonic() + wait_seconds
        while time.monotonic() < deadline:
            body = cluster.get(client.JOB_RUN, name)
            taken = job_run.REPLAY_ANNOTATION not in (body["metadata"].get("annotations") or {})
            now = body.get("status") or {}
            now_phase = now.get("phase")
            # A replayed run may fail again before this poll: a later attempt is a replay too.
            moved_on = int(now.get("attempt") or 0) > int(current.get("attempt") or 0)
            if taken and (now_phase not in job_run.REPLAYABLE_PHASES or moved_on):
                click.echo(
                    f"{reference} replayed: run {current.get('runId')} is {now_phase} again "
                    f"(its next attempt is {int(current.get('attempt') or 0) + 1})"
                )
                return
            if taken:
                raise outcome.PluginError(
                    f"the operator did not replay {reference}; its reason is in the Events: "
                    f"kubectl get events -n {cluster.namespace} "
                    f"--field-selector involvedObject.name={name}"
                )
            time.sleep(0.5)
    finally:
        cluster.close()
    raise outcome.PluginError(
        f"the replay of {reference} was requested, but the operator did not take it within "
        f"{timeout}: is the operator running? (the annotation {job_run.REPLAY_ANNOTATION} stays "
        "until it does)",
        outcome.TIMEOUT,
    )
