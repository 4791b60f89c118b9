"""The CEL rules in the CRDs compile, name declared fields, and agree with the models.

No apiserver runs here, so the rules are evaluated with cel-python after applying the schema's
defaults the way the apiserver does before validation. cel-python is not the apiserver's CEL
(no cost estimation, no Kubernetes library functions), so tests/cluster still has to exercise
the rules for real; this catches typos, inverted logic and drift between CEL and pydantic.
"""

from __future__ import annotations

import copy
import pathlib
import re
from collections.abc import Iterator
from typing import Any

import celpy
import pydantic
import pytest
import yaml

from sundial.api import crd, job_run, scheduled_job

SCHEMAS = {
    resource.kind: crd.crd(resource)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for resource in crd.RESOURCES
}
MODELS: dict[str, type[pydantic.BaseModel]] = {
    "ScheduledJob": scheduled_job.ScheduledJob,
    "JobRun": job_run.JobRun,
}
EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples"
ENVIRONMENT = celpy.Environment()


def rules_with_paths(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for rule in node.get("x-kubernetes-validations", []):
        yield path or "<root>", rule
    for name, child in node.get("properties", {}).items():
        yield from rules_with_paths(child, f"{path}.{name}")
    if "items" in node:
        yield from rules_with_paths(node["items"], f"{path}[]")


ALL_RULES = [
    (kind, path, rule) for kind in SCHEMAS for path, rule in rules_with_paths(SCHEMAS[kind])
]


def node_at(kind: str, path: str) -> dict[str, Any]:
    node = SCHEMAS[kind]
    for part in filter(None, re.split(r"\.|(?=\[\])", path.removeprefix("<root>"))):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


def with_defaults(schema: dict[str, Any], data: Any) -> Any:
    """``data`` with the schema's defaults filled in, as the apiserver does before validating."""
    data = copy.deepcopy(data)
    if isinstance(data, dict):
        for name, child in schema.get("properties", {}).items():
            if name not in data and "default" in child:
                data[name] = copy.deepcopy(child["default"])
            if name in data:
                data[name] = with_defaults(child, data[name])
    elif isinstance(data, list) and "items" in schema:
        data = [with_defaults(schema["items"], item) for item in data]
    return data


def evaluate(rule: str, self: Any, old_self: Any = None) -> Any:
    activation = {"self": celpy.json_to_cel(self)}
    if old_self is not None:
        activation["oldSelf"] = celpy.json_to_cel(old_self)
    return ENVIRONMENT.program(ENVIRONMENT.compile(rule)).evaluate(activation)


def cel_rejections(schema: dict[str, Any], data: Any, old: Any = None) -> list[str]:
    """The messages of every rule ``data`` breaks (transition rules only when ``old`` is given)."""
    found: list[str] = []
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"] and old is None:
            continue
        result = evaluate(rule["rule"], data, old)
        assert isinstance(result, celpy.celtypes.BoolType), f"{rule['rule']} gave {result!r}"
        if not result:
            found.append(rule["message"])
    if isinstance(data, dict):
        for name, child in schema.get("properties", {}).items():
            if name in data:
                previous = old.get(name) if isinstance(old, dict) else None
                found += cel_rejections(child, data[name], previous)
    elif isinstance(data, list) and "items" in schema:
        for item in data:
            found += cel_rejections(schema["items"], item)
    return found


def admit(manifest: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    schema = SCHEMAS[manifest["kind"]]
    return cel_rejections(
        schema, with_defaults(schema, manifest), with_defaults(schema, old) if old else None
    )


@pytest.mark.parametrize(
    ("kind", "path", "rule"), ALL_RULES, ids=[f"{k}{p}" for k, p, _ in ALL_RULES]
)
def test_rule_compiles_and_names_only_declared_fields(
    kind: str, path: str, rule: dict[str, Any]
) -> None:
    ENVIRONMENT.compile(rule["rule"])
    node = node_at(kind, path)
    for _, chain in re.findall(r"\b(self|oldSelf)((?:\.\w+\b(?!\())+)", rule["rule"]):
        current = node
        for field in chain.strip(".").split("."):
            if field == "metadata" and current is SCHEMAS[kind]:
                break  # only metadata.name/generateName are visible; both always exist
            assert field in current.get("properties", {}), f"{rule['rule']}: no field {field}"
            current = current["properties"][field]
    assert rule["message"] and len(rule["message"]) < 128
    if "fieldPath" in rule:  # the apiserver requires a path through declared properties
        current = node
        for field in rule["fieldPath"].strip(".").split("."):
            assert field in current.get("properties", {}), f"fieldPath {rule['fieldPath']}"
            current = current["properties"][field]


def test_every_rule_message_is_unique_per_node() -> None:
    for kind in SCHEMAS:
        for path in {p for k, p, _ in ALL_RULES if k == kind}:
            messages = [r["message"] for k, p, r in ALL_RULES if (k, p) == (kind, path)]
            assert len(messages) == len(set(messages)), path


def example_manifests() -> list[dict[str, Any]]:
    documents = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        documents += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    return documents


@pytest.mark.parametrize("manifest", example_manifests(), ids=lambda m: m["metadata"]["name"])
def test_examples_pass_every_rule(manifest: dict[str, Any]) -> None:
    assert admit(manifest) == []


def scheduled(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"schedule": "@daily", "handler": {"name": "examples.hello"}}
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": "hello"},
        "spec": {key: value for key, value in {**base, **spec}.items() if value is not None},
    }


def run(name: str = "once", **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"jobRef": {"name": "hello"}}
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": name},
        "spec": {key: value for key, value in {**base, **spec}.items() if value is not None},
    }


def submitted(manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` as it is once the operator submitted its run."""
    return {**manifest, "status": {"runId": "7"}}


POD = {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}

CASES = [
    (scheduled(), None),
    (scheduled(template=POD), "exactly one of handler or template must be set"),
    (scheduled(handler=None), "exactly one of handler or template must be set"),
    (scheduled(handler=None, template=POD, startTimeoutSeconds=5), None),
    (scheduled(handler={"name": "h", "executionModel": "pod"}, startTimeoutSeconds=5), None),
    (scheduled(startTimeoutSeconds=5), "startTimeoutSeconds applies only to Pod jobs"),
    (
        scheduled(
            handler=None,
            template=POD,
            oom={"maxRetries": 3, "memoryIncreasePercent": 50, "maxMemory": "4Gi"},
            podDeletionPolicy="Cancel",
        ),
        None,
    ),
    (scheduled(handler={"name": "h", "executionModel": "pod"}, oom={}), None),
    (scheduled(oom={"maxRetries": 1}), "oom applies only to Pod jobs"),
    (scheduled(podDeletionPolicy="Retry"), "podDeletionPolicy applies only to Pod jobs"),
    (run(jobRef=None, job={"template": POD, "oom": {"maxRetries": 0}}), None),
    (run(jobRef=None, job={"handler": {"name": "h"}, "oom": {}}), "oom applies only to Pod jobs"),
    (scheduled(missedFirePolicy="Backfill", maxBackfill=2), None),
    (scheduled(maxBackfill=2), "maxBackfill is only valid with missedFirePolicy Backfill"),
    (scheduled(slo={"maxDurationSeconds": 60}), None),
    (scheduled(slo={"freshnessSeconds": 3600, "startLatenessSeconds": 30}), None),
    (scheduled(slo={}), "slo promises nothing: set freshnessSeconds"),
    (scheduled(retry={"backoffBaseSeconds": 5, "backoffCapSeconds": 5}), None),
    (scheduled(retry={"backoffBaseSeconds": 500}), "must be at least retry.backoffBaseSeconds"),
    (
        scheduled(failurePolicy={"rules": [{"action": "Retry"}]}),
        "a failurePolicy rule needs exactly one of",
    ),
    (scheduled(failurePolicy={"rules": [{"action": "Retry", "onOOMKilled": True}]}), None),
    (
        scheduled(failurePolicy={"rules": [{"action": "Retry", "onOOMKilled": False}]}),
        "onOOMKilled, when set, must be true",
    ),
    (
        scheduled(
            failurePolicy={
                "rules": [{"action": "Fail", "onExitCodes": {"operator": "In", "values": [0]}}]
            }
        ),
        "exit code 0 means success",
    ),
    (
        scheduled(
            failurePolicy={
                "rules": [{"action": "Fail", "onExitCodes": {"operator": "NotIn", "values": [0]}}]
            }
        ),
        None,
    ),
    (run(), None),
    (run(jobRef=None, job={"handler": {"name": "h"}}), None),
    (run(job={"handler": {"name": "h"}}), "exactly one of jobRef or job must be set"),
    (run(jobRef=None), "exactly one of jobRef or job must be set"),
    (run(jobRef=None, job={"retry": {}}), "exactly one of handler or template must be set"),
    (run(runAt="2026-11-30T08:00:00Z", delaySeconds=3), "set at most one of runAt or delaySeconds"),
    (run(dependsOn=["a", "b"]), None),
    (run(dependsOn=["a", "once"]), "a JobRun cannot depend on itself"),
]


@pytest.mark.parametrize(("manifest", "message"), CASES)
def test_cel_and_pydantic_agree(manifest: dict[str, Any], message: str | None) -> None:
    cel = admit(manifest)
    if message is None:
        assert cel == []
        MODELS[manifest["kind"]].model_validate(manifest)
        return
    assert len(cel) == 1 and message in cel[0], cel
    with pytest.raises(pydantic.ValidationError) as caught:
        MODELS[manifest["kind"]].model_validate(manifest)
    assert cel[0] in str(caught.value)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (run(cancel=False), run(cancel=True), None),
        (run(cancel=True), run(cancel=True, ttlSecondsAfterFinished=60), None),
        (run(cancel=True), run(cancel=False), "a cancelled JobRun cannot be un-cancelled"),
        (run(), run(jobRef={"name": "other"}), "this field is immutable"),
        (run(idempotencyKey="a"), run(idempotencyKey="b"), "this field is immutable"),
        (
            run(runAt="2026-11-30T08:00:00Z"),
            run(runAt="2026-11-30T09:00:00Z"),
            "this field is immutable",
        ),
        # dependsOn is editable until the run is submitted (to break a cycle), fixed after.
        (run(dependsOn=["a"]), run(dependsOn=["a", "b"]), None),
        (run(dependsOn=["a"]), run(), None),
        (
            submitted(run(dependsOn=["a"])),
            submitted(run(dependsOn=["a", "b"])),
            "dependsOn cannot change once the run is submitted",
        ),
        (
            submitted(run(dependsOn=["a"])),
            submitted(run()),
            "dependsOn cannot change once the run is submitted",
        ),
        (submitted(run()), submitted(run(dependsOn=["a"])), "dependsOn cannot change once"),
        (submitted(run(dependsOn=["a", "b"])), submitted(run(dependsOn=["b", "a"])), None),
        (submitted(run(dependsOn=["a"])), submitted(run(dependsOn=["a"], cancel=True)), None),
        (
            run(),
            run(jobRef=None, job={"handler": {"name": "h"}}),
            "a JobRun cannot switch between jobRef and job",
        ),
    ],
)
def test_job_run_updates_follow_the_transition_rules(
    old: dict[str, Any], new: dict[str, Any], message: str | None
) -> None:
    found = admit(new, old)
    if message is None:
        assert found == []
    else:
        assert len(found) == 1 and message in found[0], found
