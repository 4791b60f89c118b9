"""Input that used to crash past the models: deep JSON, NUL characters, coerced types.

Each is refused by the models with a message that names the field, never with
``RecursionError`` or a database error later (docs/adr/0015).
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pydantic
import pytest

from sundial.api import job_run, json_values, messages, scheduled_job

POD = {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def job(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"schedule": "@daily", "handler": {"name": "examples.hello"}}
    return {**base, **spec}


def nested(depth: int, leaf: Any = 1) -> Any:
    """``{"a": {"a": … leaf}}`` with ``depth`` objects, built without recursion."""
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def refusal(
    spec: dict[str, Any], model: type[pydantic.BaseModel] = scheduled_job.ScheduledJobSpec
) -> str:
    with pytest.raises(pydantic.ValidationError) as caught:
        model.model_validate(spec)
    return messages.describe(caught.value)


@pytest.mark.parametrize("depth", [json_values.MAX_DEPTH + 1, 1_000, 5_000, 100_000])
def test_deep_args_are_refused_naming_the_field(depth: int) -> None:
    message = refusal(job(handler={"name": "h", "args": nested(depth)}))
    assert message.startswith("spec.handler.args: nested deeper than 32 levels; flatten it")


def test_args_at_the_depth_bound_are_accepted() -> None:
    spec = scheduled_job.ScheduledJobSpec.model_validate(
        job(handler={"name": "h", "args": nested(json_values.MAX_DEPTH)})
    )
    assert spec.handler is not None and spec.handler.args == nested(json_values.MAX_DEPTH)


def test_deep_lists_count_as_levels_too() -> None:
    deep: Any = 1
    for _ in range(3_000):
        deep = [deep]
    assert "nested deeper than 32" in refusal(
        {"jobRef": {"name": "x"}, "args": {"k": deep}}, job_run.JobRunSpec
    )


def test_wide_args_are_refused_by_size_not_by_a_crash() -> None:
    wide = {"k": {f"key{n}": n for n in range(100_000)}}
    assert "more than the limit of 65536 bytes" in refusal(job(handler={"name": "h", "args": wide}))


def test_deep_pod_template_fields_are_refused_naming_the_field() -> None:
    template = copy.deepcopy(POD)
    template["spec"]["affinity"] = nested(2_000)
    message = refusal(job(handler=None, template=template))
    assert message.startswith("spec.template.spec: nested deeper than 32 levels")
    template = copy.deepcopy(POD)
    template["metadata"] = {"labels": nested(2_000)}
    assert refusal(job(handler=None, template=template)).startswith(
        "spec.template.metadata: nested deeper than 32 levels"
    )


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (job(handler={"name": "h", "args": {"k": "a\x00b"}}), "spec.handler.args: at k:"),
        (job(handler={"name": "h", "args": {"k\x00": 1}}), "spec.handler.args: key 'k\\x00'"),
        (
            job(handler={"name": "h", "args": {"a": [{"b": ["ok", "x\x00"]}]}}),
            "spec.handler.args: at a[0].b[1]:",
        ),
        (
            job(handler=None, template={"spec": {"containers": [{"name": "m", "image": "b\x00"}]}}),
            "spec.template.spec.containers[0].image:",
        ),
        (
            job(
                handler=None,
                template={
                    "spec": {"containers": [{"name": "m", "image": "b", "command": ["sh\x00"]}]}
                },
            ),
            "spec.template.spec.containers[0]: at command[0]:",
        ),
        (
            job(handler=None, template={**POD, "metadata": {"labels": {"a": "\x00"}}}),
            "spec.template.metadata: at labels.a:",
        ),
        (
            job(handler=None, template={**POD, "metadata": {"annotations": {"\x00": "v"}}}),
            "spec.template.metadata: at annotations: key '\\x00'",
        ),
        (
            job(
                failurePolicy={
                    "rules": [{"action": "Ignore", "onPodConditions": [{"type": "Disruption\x00"}]}]
                }
            ),
            "spec.failurePolicy.rules[0].onPodConditions[0].type:",
        ),
    ],
)
def test_a_nul_anywhere_is_refused_naming_the_field(spec: dict[str, Any], field: str) -> None:
    message = refusal(spec)
    assert message.startswith(field), message
    assert "NUL" in message or "should match" in message


@pytest.mark.parametrize("character", ["\x01", "\x1b", "\n", "\x7f"])
def test_control_characters_are_refused_in_one_line_fields(character: str) -> None:
    template = {"spec": {"containers": [{"name": "m", "image": f"busybox{character}"}]}}
    assert refusal(job(handler=None, template=template)).startswith(
        "spec.template.spec.containers[0].image: Invalid value"
    )


@pytest.mark.parametrize("character", ["\x00", "\x01", "\t", "\n", "\x7f"])
@pytest.mark.parametrize(
    ("field", "entry"),
    [
        ("exclusions", "0 0 0 0 {}"),
        ("exclusions", "12-25{}"),
        ("additionalSchedules", "* * * * {}"),
        ("schedule", "0 0 * * {}"),
        ("schedule", "{}0 0 * * *"),
    ],
)
def test_control_characters_are_refused_in_schedule_entries(
    field: str, entry: str, character: str
) -> None:
    """Each entry is kept as a line of one text in PostgreSQL, which cannot store a NUL: the
    model refuses what the store could not keep (found by the hostile-manifest test)."""
    if field == "schedule":
        message = refusal(job(schedule=entry.format(character)))
        assert message.startswith("spec.schedule: Invalid value"), message
        return
    message = refusal(job(**{field: [entry.format(character)]}))
    assert message.startswith(f"spec.{field}[0]: Invalid value"), message


def test_tabs_and_newlines_stay_legitimate_in_free_form_data() -> None:
    template = {"spec": {"containers": [{"name": "m", "image": "b", "command": ["a\n\tb"]}]}}
    spec = scheduled_job.ScheduledJobSpec.model_validate(
        job(handler=None, template=template, queue="default")
    )
    assert spec.template is not None
    args = {"csv": "a,b\r\nc,d\x1b[0m"}
    assert job_run.JobRunSpec.model_validate({"jobRef": {"name": "x"}, "args": args}).args == args


def test_a_lone_surrogate_is_refused() -> None:
    message = refusal(job(handler={"name": "h", "args": {"k": "\ud800"}}))
    assert message.startswith("spec.handler.args: at k:") and "surrogate" in message


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), {1, 2}, b"bytes", datetime.date(2026, 1, 1)]
)
def test_python_values_that_are_not_json_are_refused(value: Any) -> None:
    assert refusal(job(handler={"name": "h", "args": {"k": value}})).startswith(
        "spec.handler.args: at k:"
    )


def test_metadata_with_a_nul_is_refused() -> None:
    manifest = {
        "metadata": {"name": "x", "labels": {"a": "b\x00"}},
        "spec": job(),
    }
    with pytest.raises(pydantic.ValidationError) as caught:
        scheduled_job.ScheduledJob.model_validate(manifest)
    assert messages.describe(caught.value, root="").startswith("metadata.labels.a:")


STRICT_CASES = [
    ({"priority": "5"}, "spec.priority", 'Invalid value: "string": must be of type integer'),
    ({"priority": True}, "spec.priority", 'Invalid value: "boolean": must be of type integer'),
    ({"priority": 5.0}, "spec.priority", 'Invalid value: "number": must be of type integer'),
    ({"suspend": 1}, "spec.suspend", 'Invalid value: "integer": must be of type boolean'),
    ({"suspend": "true"}, "spec.suspend", 'Invalid value: "string": must be of type boolean'),
    ({"spreadSeconds": "10"}, "spec.spreadSeconds", "must be of type integer"),
    ({"schedule": 5}, "spec.schedule", 'Invalid value: "integer": must be of type string'),
    ({"queue": ["default"]}, "spec.queue", 'Invalid value: "array": must be of type string'),
    ({"retry": {"maxRetries": "3"}}, "spec.retry.maxRetries", "must be of type integer"),
    ({"retry": "3"}, "spec.retry", 'Invalid value: "string": must be of type object'),
    ({"priority": 10}, "spec.priority", "Invalid value: 10: should be less than or equal to 9"),
    (
        {"concurrencyPolicy": "Sometimes"},
        "spec.concurrencyPolicy",
        'Unsupported value: "Sometimes"',
    ),
]


@pytest.mark.parametrize(("change", "field", "message"), STRICT_CASES)
def test_the_models_refuse_what_the_crd_refuses_in_its_words(
    change: dict[str, Any], field: str, message: str
) -> None:
    described = refusal(job(**change))
    assert described.startswith(f"{field}: "), described
    assert message in described


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"runAt": 5}, "spec.runAt"),
        ({"runAt": "2026-11-30"}, "spec.runAt"),
        ({"runAt": "2026-11-30T08:00:00"}, "spec.runAt"),
        ({"delaySeconds": "60"}, "spec.delaySeconds"),
        ({"cancel": 0}, "spec.cancel"),
        ({"dependsOn": "a"}, "spec.dependsOn"),
        ({"ttlSecondsAfterFinished": 1.5}, "spec.ttlSecondsAfterFinished"),
    ],
)
def test_job_run_fields_are_strict_too(change: dict[str, Any], field: str) -> None:
    assert refusal({"jobRef": {"name": "x"}, **change}, job_run.JobRunSpec).startswith(field)


@pytest.mark.parametrize(
    "text", ["2026-11-30T08:00:00Z", "2026-11-30T08:00:00.123456+01:00", "2026-11-30t08:00:00z"]
)
def test_rfc3339_text_is_still_a_time(text: str) -> None:
    spec = job_run.JobRunSpec.model_validate({"jobRef": {"name": "x"}, "runAt": text})
    assert spec.run_at is not None and spec.run_at.tzinfo is not None


def test_python_callers_still_pass_python_values() -> None:
    moment = datetime.datetime(2026, 11, 30, 8, tzinfo=datetime.UTC)
    spec = job_run.JobRunSpec(job_ref=job_run.JobRef(name="x"), run_at=moment, priority=3)
    assert (spec.run_at, spec.priority) == (moment, 3)


def test_an_explicit_null_is_an_absent_field_as_the_apiserver_prunes_it() -> None:
    spec = scheduled_job.ScheduledJobSpec.model_validate(job(priority=None, suspend=None))
    assert (spec.priority, spec.suspend) == (1, False)
    assert refusal({"schedule": None, "handler": {"name": "h"}}).startswith(
        "spec.schedule: Required value"
    )
