"""The models accept exactly what the CRD accepts (plus the checks ADR 0015 lists).

Manifests are generated from the CRD's own OpenAPI schema with mutations
(``crd_admission.manifests``); the CRD's answer is computed from the schema and its CEL rules
(``crd_admission.admission_errors``), independently of the models. The two must agree on
every manifest: admitted and parsed, or refused by both with an error on the same field.
tests/cluster/test_models_match_the_apiserver.py asks a real kube-apiserver the same question.
"""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings

from sundial.api import job_run, messages, scheduled_job
from support import crd_admission

MODELS: dict[str, type[pydantic.BaseModel]] = {
    "ScheduledJob": scheduled_job.ScheduledJob,
    "JobRun": job_run.JobRun,
}


def model_errors(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        MODELS[manifest["kind"]].model_validate(manifest)
    except pydantic.ValidationError as error:
        return [
            (messages.field_path(detail["loc"], root=""), messages.phrase(detail))
            for detail in error.errors()
        ]
    return []


def related(one: str, other: str) -> bool:
    """The same field, or one inside the other (a rule on an object, a bound on its field)."""
    return one == other or one.startswith(other) or other.startswith(one)


def assert_agree(manifest: dict[str, Any]) -> None:
    """Both admit, or both refuse and every field the models blame is one the CRD (or an
    ADR 0015 check) blames too. The models may name fewer: pydantic skips a model's
    cross-field rules while one of its fields is wrong."""
    expected = crd_admission.admission_errors(manifest) + crd_admission.sundial_only_errors(
        manifest
    )
    found = model_errors(manifest)
    assert bool(expected) == bool(found), f"CRD: {expected}\nmodels: {found}"
    blamable = expected + crd_admission.admission_errors(manifest, every_rule=True)
    for path, message in found:
        assert any(related(path, other) for other, _ in blamable), (path, message, expected)


@pytest.mark.parametrize("kind", sorted(MODELS))
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=crd_admission.st.data())
def test_models_and_crd_agree_on_generated_manifests(kind: str, data: Any) -> None:
    assert_agree(data.draw(crd_admission.manifests(kind)))
