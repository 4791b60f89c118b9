"""``kubectl sundial lint -f FILE``: what the API server and the operator would say, offline.

Each ScheduledJob and JobRun in the file goes through three gates, in the order a real apply
meets them, and stops at the first that refuses it (the operator never sees an object the API
server rejected):

1. the CRD schema (``schema_check.schema_problems``), as ``kubectl apply`` reports it;
2. the CEL rules of the schema (``schema_check.cel_problems``; needs the ``cel`` extra);
3. the operator's own checks, with the operator's messages: the models
   (``scheduled_job.parse``: sizes, quantities, cross-field rules), the cron expression and
   time zone (``scheduling.cron``, the text of the Stalled condition) and the policy fields
   (``scheduling.plan.rules_from_policy``).

Then, across the file, ``dependsOn`` cycles between JobRuns of one namespace, found and worded
as the operator does (it marks each member, and each JobRun waiting on one, Stalled).
"""

from __future__ import annotations

import datetime
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pydantic
import yaml

from sundial.api import crd, job_run, messages, scheduled_job
from sundial.kubectl_plugin import outcome, schema_check
from sundial.scheduling import dependency_cycles, plan, union
from sundial.scheduling import errors as scheduling_errors

__all__ = ["Problem", "dependency_stalls", "lint", "lint_documents"]

SCHEMAS = {
    resource.kind: crd.crd(resource)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for resource in crd.RESOURCES
}
CEL_MISSING = (
    "the CEL rules were not checked: cel-python is not installed"
    " (pip install 'sundial-scheduler[cel]')"
)


@dataclass(frozen=True)
class Problem:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def _documents(text: str, source: str) -> list[Any]:
    try:
        loaded = [document for document in yaml.safe_load_all(text) if document is not None]
    except yaml.YAMLError as error:
        raise outcome.PluginError(f"{source}: not YAML: {error}") from error
    except RecursionError:
        # PyYAML parses nesting recursively: a few hundred levels of [ or { exhaust the stack.
        raise outcome.PluginError(
            f"{source}: nested too deeply to read (hundreds of levels of lists or maps):"
            " a manifest's values nest a few levels"
        ) from None
    flat: list[Any] = []
    for document in loaded:
        if isinstance(document, dict) and str(document.get("kind", "")).endswith("List"):
            flat.extend(document.get("items") or [])
        else:
            flat.append(document)
    return flat


def _name(document: Mapping[str, Any], index: int) -> str:
    metadata = document.get("metadata") or {}
    name = metadata.get("name") or metadata.get("generateName") or f"#{index + 1}"
    return f"{document.get('kind')}/{name}"


def _operator_problems(kind: str, document: Mapping[str, Any]) -> Iterator[str]:
    spec_body = document.get("spec") or {}
    if kind == "ScheduledJob":
        # The API server fills in what a manifest leaves out; the operator checks the rest.
        metadata = {"namespace": "default", "uid": str(uuid.UUID(int=0)), "generation": 1}
        metadata.update(document.get("metadata") or {})
        spec, problem = scheduled_job.parse({**document, "metadata": metadata})
        if spec is None:
            yield f"{problem} (the operator reports this as InvalidSpec)"
            return
        try:
            union.parse(
                spec.schedule,
                spec.additional_schedules or (),
                spec.exclusions or (),
                spec.time_zone,
            )
            plan.rules_from_policy(
                spec.spread_seconds,
                spec.concurrency_policy,
                spec.missed_fire_policy,
                spec.max_backfill or 1,
                spec.starting_deadline_seconds,
            )
        except scheduling_errors.SchedulingError as error:
            yield f"{error} (the operator sets Stalled with reason {error.reason})"
        name = (document.get("metadata") or {}).get("name")
        if name and len(name) > scheduled_job.MAX_NAME_LENGTH:
            yield scheduled_job.NAME_LENGTH.message
        return
    try:
        run_spec = job_run.JobRunSpec.model_validate(spec_body)
    except pydantic.ValidationError as error:
        problem = messages.describe(error)
        yield f"{problem} (the operator sets Stalled with reason InvalidSpec)"
        return
    # Applied now, the JobRun would be created now.
    too_far = job_run.run_at_problem(run_spec, datetime.datetime.now(datetime.UTC))
    if too_far is not None:
        yield f"{too_far} (the operator sets Stalled with reason InvalidSpec)"


def lint_documents(documents: Sequence[Any], source: str, *, cel: bool) -> list[Problem]:
    problems: list[Problem] = []
    for index, document in enumerate(documents):
        if not isinstance(document, dict):
            problems.append(Problem(f"{source}: document {index + 1}", "is not a mapping"))
            continue
        kind = document.get("kind")
        where = f"{source}: {_name(document, index)}"
        if kind not in SCHEMAS:
            continue  # not ours: kubectl apply checks it against its own schema
        if document.get("apiVersion") != "sundial.dev/v1alpha1":
            problems.append(
                Problem(
                    where,
                    f"apiVersion must be sundial.dev/v1alpha1, not {document.get('apiVersion')!r}",
                )
            )
            continue
        found = list(schema_check.schema_problems(SCHEMAS[kind], document))
        if not found and cel:
            found = list(schema_check.cel_problems(SCHEMAS[kind], document))
        if not found:
            found = list(_operator_problems(kind, document))
        problems.extend(Problem(where, message) for message in found)
    for namespace, name, message in dependency_stalls(documents):
        where = f"{source}: JobRun/{name}" + (f" (namespace {namespace})" if namespace else "")
        problems.append(
            Problem(where, f"{message} (the operator sets Stalled with reason DependencyCycle)")
        )
    return problems


def dependency_stalls(documents: Sequence[Any]) -> list[tuple[str | None, str, str]]:
    """(namespace, JobRun, message) for each JobRun of the file that the operator would stall
    on a ``dependsOn`` cycle among the file's JobRuns of its namespace: the members, and
    those waiting on one. The cycle is found and worded as the operator does
    (``scheduling.dependency_cycles``)."""
    graphs: dict[str | None, dict[str, list[str]]] = {}
    for document in documents:
        if not isinstance(document, dict) or document.get("kind") != "JobRun":
            continue
        metadata = document.get("metadata") or {}
        name = metadata.get("name")
        depends = (document.get("spec") or {}).get("dependsOn") or []
        if isinstance(name, str) and isinstance(depends, list):
            edges = [str(d) for d in depends]
            graphs.setdefault(metadata.get("namespace"), {})[name] = edges
    stalls = []
    for namespace, graph in graphs.items():
        for name in sorted(graph):
            cycle = dependency_cycles.find_cycle(graph, name)
            if cycle is not None:
                stalls.append((namespace, name, dependency_cycles.cycle_message(name, cycle)))
    return stalls


@click.command("lint")
@click.option(
    "-f", "--filename", "files", multiple=True, required=True, metavar="FILE",
    help="A manifest file or directory (repeat; - is stdin).",
)  # fmt: skip
def lint(files: tuple[str, ...]) -> None:
    """Check ScheduledJob and JobRun manifests offline: the CRD schema, its CEL rules and the
    operator's own checks (cron, time zone, sizes, dependsOn cycles), with the messages the API
    server and the operator would give. Exits 1 if anything is wrong."""
    cel = schema_check.cel_available()
    if not cel:
        click.echo(f"warning: {CEL_MISSING}", err=True)
    problems: list[Problem] = []
    checked = 0
    sources: list[str] = []
    for given in files:
        if given != "-" and Path(given).is_dir():  # as kubectl -f DIR: its manifests, sorted
            found = sorted(
                str(path)
                for path in Path(given).iterdir()
                if path.suffix in (".yaml", ".yml", ".json") and path.is_file()
            )
            if not found:
                raise outcome.PluginError(f"{given}: no .yaml, .yml or .json files", outcome.USAGE)
            sources.extend(found)
        else:
            sources.append(given)
    for source in sources:
        if source == "-":
            text = sys.stdin.read()
        else:
            try:
                with open(source, encoding="utf-8") as handle:
                    text = handle.read()
            except OSError as error:
                raise outcome.PluginError(
                    f"cannot read {source}: {error.strerror}", outcome.USAGE
                ) from error
        documents = _documents(text, source)
        checked += sum(1 for d in documents if isinstance(d, dict) and d.get("kind") in SCHEMAS)
        problems.extend(lint_documents(documents, source, cel=cel))
    for problem in problems:
        click.echo(str(problem))
    if problems:
        raise outcome.PluginError(
            f"{len(problems)} problem(s) in {checked} Sundial object(s)", outcome.FAILED
        )
    click.echo(f"{checked} Sundial object(s) OK")
