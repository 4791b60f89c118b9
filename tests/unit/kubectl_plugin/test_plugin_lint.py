"""``kubectl sundial lint``: the schema, the CEL rules and the operator's checks, offline."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sundial.api import crd, job_run, scheduled_job
from sundial.kubectl_plugin import linting, main, schema_check
from sundial.scheduling import dependency_cycles

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

GOOD_JOB: dict[str, Any] = {
    "apiVersion": "sundial.dev/v1alpha1",
    "kind": "ScheduledJob",
    "metadata": {"name": "nightly"},
    "spec": {"schedule": "0 2 * * *", "timeZone": "Europe/Paris", "handler": {"name": "etl.run"}},
}


def job(**spec: Any) -> dict[str, Any]:
    body = copy.deepcopy(GOOD_JOB)
    body["spec"].update(spec)
    return body


def run(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": name},
        "spec": {"job": {"handler": {"name": "etl.run"}}, **spec},
    }


def problems(*documents: Any) -> list[str]:
    return [p.message for p in linting.lint_documents(documents, "f.yaml", cel=True)]


def test_every_example_manifest_is_clean() -> None:
    files = sorted(EXAMPLES.glob("*.yaml"))
    assert files
    result = CliRunner().invoke(main.cli, ["lint", *(a for f in files for a in ("-f", str(f)))])
    assert result.exit_code == 0, result.output
    assert "OK" in result.output
    whole_directory = CliRunner().invoke(main.cli, ["lint", "-f", str(EXAMPLES)])
    assert whole_directory.output == result.output


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (job(schedule=None), "spec.schedule: Required value"),
        (job(suspend="yes"), 'spec.suspend: Invalid value: "string": spec.suspend in body must be'),
        (job(concurrencyPolicy="Sometimes"), 'Unsupported value: "Sometimes": supported values:'),
        (job(spreadSeconds=4000), "spec.spreadSeconds in body should be less than or equal to"),
        (job(queue="x" * 100), "spec.queue: Too long: may not be more than"),
        (job(colour="red"), 'unknown field "spec.colour"'),
        (job(timeZone="not a zone"), "spec.timeZone in body should match"),
    ],
)
def test_schema_problems_are_worded_as_the_api_server_words_them(
    document: dict[str, Any], message: str
) -> None:
    found = problems(document)
    assert any(message in p for p in found), found


def test_cel_rules_are_checked_with_their_messages() -> None:
    found = problems(job(maxBackfill=5))
    assert found == [
        "spec.maxBackfill: Invalid value: maxBackfill is only valid with missedFirePolicy Backfill"
    ]
    both = run("r", jobRef={"name": "x"})
    assert any("exactly one of jobRef or job must be set" in p for p in problems(both))


def test_the_operators_own_checks_give_the_operators_messages() -> None:
    [bad_cron] = problems(job(schedule="61 * * * *"))
    assert "61" in bad_cron and "Stalled" in bad_cron and "InvalidSchedule" in bad_cron
    [bad_zone] = problems(job(timeZone="Mars/Olympus"))
    assert "Mars/Olympus" in bad_zone and "UnknownTimeZone" in bad_zone
    big = job(handler={"name": "etl.run", "args": {"blob": "x" * (70 * 1024)}})
    [too_big] = problems(big)
    # As the operator receives it: the API server has set the namespace and the uid.
    stored = {**big, "metadata": {**big["metadata"], "namespace": "t", "uid": str(uuid.uuid4())}}
    operator_says = scheduled_job.parse(stored)[1]
    assert operator_says is not None and "spec.handler.args" in operator_says
    assert too_big == f"{operator_says} (the operator reports this as InvalidSpec)"


def test_a_run_at_more_than_a_year_out_is_what_the_operator_stalls() -> None:
    """Applied now, a JobRun is created now: its ``runAt`` may be 366 days after that, as
    ``delaySeconds`` may; the message is the operator's."""
    now = datetime.now(UTC)
    soon = (now + timedelta(days=365)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert problems(run("soon", runAt=soon)) == []
    [far] = problems(run("far", runAt="9999-12-31T23:59:59Z"))
    spec = job_run.JobRunSpec.model_validate(run("far", runAt="9999-12-31T23:59:59Z")["spec"])
    operator_says = job_run.run_at_problem(spec, now)
    assert operator_says is not None
    assert far.startswith("spec.runAt: 9999-12-31T23:59:59Z is more than 366 days after")
    assert far.endswith("(the operator sets Stalled with reason InvalidSpec)")
    assert job_run.run_at_problem(spec, datetime(9999, 1, 1, tzinfo=UTC)) is None


def test_depends_on_cycles_in_one_file_stall_what_the_operator_stalls() -> None:
    documents = [
        run("a", dependsOn=["b"]),
        run("b", dependsOn=["c"]),
        run("c", dependsOn=["a"]),
        run("waits", dependsOn=["a"]),
        run("d", dependsOn=["d-parent", "elsewhere"]),
        run("d-parent"),
    ]
    found = linting.lint_documents(documents, "f.yaml", cel=True)
    suffix = " (the operator sets Stalled with reason DependencyCycle)"
    assert [(p.where, p.message) for p in found] == [
        ("f.yaml: JobRun/a", dependency_cycles.cycle_message("a", ["a", "b", "c", "a"]) + suffix),
        ("f.yaml: JobRun/b", dependency_cycles.cycle_message("b", ["b", "c", "a", "b"]) + suffix),
        ("f.yaml: JobRun/c", dependency_cycles.cycle_message("c", ["c", "a", "b", "c"]) + suffix),
        (
            "f.yaml: JobRun/waits",
            dependency_cycles.cycle_message("waits", ["a", "b", "c", "a"]) + suffix,
        ),
    ]
    assert "forms a cycle: a -> b -> c -> a" in found[0].message
    assert "an upstream JobRun is on a dependsOn cycle" in found[3].message
    other_namespace = run("c", dependsOn=["a"])
    other_namespace["metadata"]["namespace"] = "elsewhere"
    assert problems(*documents[:2], other_namespace) == []


def test_the_cli_exits_1_and_prints_each_problem(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [job(suspend=3)]}))
    result = CliRunner().invoke(main.cli, ["lint", "-f", str(path)])
    assert result.exit_code == 1
    assert f'{path}: ScheduledJob/nightly: spec.suspend: Invalid value: "integer"' in result.output


def test_the_schema_checker_knows_every_keyword_the_crds_use() -> None:
    def keywords(node: Any, inside_properties: bool = False) -> set[str]:
        found: set[str] = set()
        if isinstance(node, dict):
            for key, value in node.items():
                if not inside_properties:
                    found.add(key)
                found |= keywords(value, key == "properties" and not inside_properties)
        elif isinstance(node, list):
            for item in node:
                found |= keywords(item)
        return found

    for resource in crd.RESOURCES:
        schema = crd.crd(resource)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        unknown = keywords(schema) - schema_check.KEYWORDS
        # Rule fields sit inside x-kubernetes-validations entries, not schema nodes.
        assert unknown <= {"rule", "message", "fieldPath"}, unknown


def test_a_number_past_64_bits_is_named_not_a_traceback() -> None:
    found = problems(job(handler={"name": "etl.run", "args": {"rows": [1, 10**400]}}))
    assert found == [
        "spec.handler.args.rows[1]: Invalid value: 100000000000... (401 digits):"
        " past CEL's 64-bit integers"
    ]


def test_a_file_nested_too_deeply_to_read_says_so(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("spec: " + "[" * 2000 + "]" * 2000 + "\n")
    result = CliRunner().invoke(main.cli, ["lint", "-f", str(deep)])
    assert result.exit_code != 0
    assert "nested too deeply to read" in result.output, result.output
    assert "Traceback" not in result.output
