"""The models accept exactly what the real kube-apiserver admits (plus ADR 0015's checks).

The same generated manifests as tests/unit/api/test_models_match_the_crd.py (the CRD's own
schema with mutations), sent to the apiserver as server-side dry-run creates: admitted, or
refused with causes naming fields. The models must agree, naming a field the apiserver named
(or one of the checks ADR 0015 lists as the models' own).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from kubernetes import client
from kubernetes.client.rest import ApiException

from sundial.api import common, job_run, messages, scheduled_job
from support import crd_admission
from support.crds import apply_sundial_crds

REPOSITORY = Path(__file__).resolve().parents[2]
MODELS: dict[str, tuple[type[pydantic.BaseModel], str]] = {
    "ScheduledJob": (scheduled_job.ScheduledJob, "scheduledjobs"),
    "JobRun": (job_run.JobRun, "jobruns"),
}


@pytest.fixture(scope="module")
def custom(kubectl: Any, api_client: client.ApiClient) -> Iterator[client.CustomObjectsApi]:
    apply_sundial_crds(kubectl, REPOSITORY / "crds")
    yield client.CustomObjectsApi(api_client)


def apiserver_refusal(
    custom: client.CustomObjectsApi, namespace: str, manifest: dict[str, Any]
) -> list[str] | None:
    """The fields the apiserver names when it refuses ``manifest``; None if it admits it."""
    plural = MODELS[manifest["kind"]][1]
    try:
        # The client serialises the body recursively, two frames a level: a hostile manifest
        # nested 1,500 levels deep needs more than Python's default limit to reach the apiserver.
        with crd_admission.deep_recursion():
            custom.create_namespaced_custom_object(
                common.GROUP, common.VERSION, namespace, plural, manifest, dry_run="All"
            )
    except ApiException as error:
        assert error.status in (400, 422), error
        details = json.loads(error.body or "{}").get("details") or {}
        return [str(cause.get("field", "")) for cause in details.get("causes") or []] or [""]
    return None


def model_refusal(manifest: dict[str, Any]) -> list[str] | None:
    try:
        MODELS[manifest["kind"]][0].model_validate(manifest)
    except pydantic.ValidationError as error:
        return [messages.field_path(detail["loc"], root="") for detail in error.errors()]
    return None


def date_time_quirks(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """Where the apiserver admits what its own schema refuses: any list in a ``format:
    date-time`` field (``runAt: []``, ``[1]``, ``["x"]`` are admitted and stored as given;
    ``{}``, booleans and numbers are refused). The models refuse them (ADR 0015), and
    reconcile reports Stalled."""
    schema = crd_admission.SCHEMAS[manifest["kind"]]
    return [
        (path, "a list is not a date-time")
        for path, value in date_time_values(schema, manifest, "")
        if isinstance(value, list)
    ]


def date_time_values(schema: dict[str, Any], data: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every value ``data`` holds where ``schema`` says ``format: date-time``, with its path."""
    if schema.get("format") == "date-time":
        yield path, data
    elif isinstance(data, dict):
        for name, child in (schema.get("properties") or {}).items():
            if name in data:
                yield from date_time_values(child, data[name], f"{path}.{name}".lstrip("."))
    elif isinstance(data, list) and "items" in schema:
        for index, item in enumerate(data):
            yield from date_time_values(schema["items"], item, f"{path}[{index}]")


def related(one: str, other: str) -> bool:
    return one == other or one.startswith(other) or other.startswith(one)


@pytest.mark.parametrize("kind", sorted(MODELS))
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
@given(data=crd_admission.st.data())
def test_models_and_the_apiserver_agree_on_generated_manifests(
    custom: client.CustomObjectsApi, namespace: str, kind: str, data: Any
) -> None:
    manifest = data.draw(crd_admission.manifests(kind))
    apiserver = apiserver_refusal(custom, namespace, manifest)
    own = crd_admission.sundial_only_errors(manifest) + date_time_quirks(manifest)
    models = model_refusal(manifest)
    if apiserver is None and not own:
        assert models is None, f"the apiserver admits it, the models refuse {models}"
        return
    assert models is not None, f"the apiserver refuses {apiserver} / ADR 0015 {own}; models admit"
    blamable = [*(apiserver or []), *(path for path, _ in own)]
    blamable += [path for path, _ in crd_admission.admission_errors(manifest, every_rule=True)]
    for path in models:
        assert any(related(path, other) for other in blamable), (path, apiserver, own)
