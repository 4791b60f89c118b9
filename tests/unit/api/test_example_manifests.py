"""The manifests a new user applies first parse into the models."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from sundial.api import job_run, scheduled_job

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples"
MODELS = {"ScheduledJob": scheduled_job.ScheduledJob, "JobRun": job_run.JobRun}


def manifests() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for number, document in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            if document and document.get("apiVersion") == "sundial.dev/v1alpha1":
                found.append((f"{path.name}#{number}", document))
    return found


def test_the_named_examples_exist() -> None:
    names = {name.split("#")[0] for name, _ in manifests()}
    expected = {"scheduledjob-hello.yaml", "scheduledjob-pod.yaml", "jobrun-oneshot.yaml"}
    assert expected <= names


@pytest.mark.parametrize(("name", "manifest"), manifests(), ids=[n for n, _ in manifests()])
def test_example_parses_and_round_trips(name: str, manifest: dict[str, Any]) -> None:
    model = MODELS[manifest["kind"]].model_validate(manifest)
    assert model.to_manifest() == model.model_validate(model.to_manifest()).to_manifest()
    assert model.to_manifest()["metadata"]["name"] == manifest["metadata"]["name"]


def test_hello_runs_an_async_handler() -> None:
    [(_, manifest)] = [m for m in manifests() if m[0] == "scheduledjob-hello.yaml#0"]
    job = scheduled_job.ScheduledJob.model_validate(manifest)
    assert job.spec.handler is not None
    assert job.spec.handler.execution_model == "async"
    assert job.spec.template is None


def test_pod_example_keeps_the_whole_pod_template() -> None:
    [(_, manifest)] = [m for m in manifests() if m[0] == "scheduledjob-pod.yaml#0"]
    job = scheduled_job.ScheduledJob.model_validate(manifest)
    dumped = job.to_manifest()["spec"]["template"]
    assert dumped == manifest["spec"]["template"]
    assert dumped["spec"]["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
