"""The models accept what the design allows and reject the rest with a message that says why."""

from __future__ import annotations

import copy
from typing import Any

import pydantic
import pytest

from sundial.api import job_run, scheduled_job, validate


def hello_job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": {"schedule": "*/5 * * * *", "handler": {"name": "examples.hello"}, **spec},
    }


def one_shot(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": "once", "namespace": "default"},
        "spec": {"jobRef": {"name": "hello"}, **spec},
    }


POD_TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def rejection(model: type[pydantic.BaseModel], manifest: dict[str, Any]) -> str:
    with pytest.raises(pydantic.ValidationError) as caught:
        model.model_validate(manifest)
    return str(caught.value)


def test_a_minimal_scheduled_job_gets_the_documented_defaults() -> None:
    job = scheduled_job.ScheduledJob.model_validate(hello_job())
    assert job.spec.concurrency_policy == "Forbid"
    assert job.spec.missed_fire_policy == "Coalesce"
    assert job.spec.suspend is False
    assert (job.spec.successful_runs_history_limit, job.spec.failed_runs_history_limit) == (3, 1)
    # Not set: the handler's registration decides (api.execution_model); no default here.
    assert job.spec.handler is not None and job.spec.handler.execution_model is None
    assert (job.spec.queue, job.spec.priority, job.spec.spread_seconds) == ("default", 1, 0)


def test_a_pod_jobs_oom_settings_have_documented_defaults_and_kubernetes_names() -> None:
    spec = scheduled_job.ScheduledJobSpec.model_validate(
        {"schedule": "@hourly", "template": POD_TEMPLATE, "oom": {"maxMemory": "1.5Gi"}}
    )
    assert spec.oom is not None
    assert (spec.oom.max_retries, spec.oom.memory_increase_percent) == (2, None)
    assert spec.oom.max_memory_bytes == 3 * 2**29
    assert spec.pod_deletion_policy is None  # the store reads absent as Retry
    assert spec.to_manifest()["oom"] == {"maxRetries": 2, "maxMemory": "1.5Gi"}


def test_snake_case_names_work_in_python_and_camel_case_on_the_wire() -> None:
    spec = scheduled_job.ScheduledJobSpec(
        schedule="@hourly",
        time_zone="Europe/Paris",
        template=POD_TEMPLATE,
        start_timeout_seconds=60,
    )
    wire = spec.to_manifest()
    assert wire["timeZone"] == "Europe/Paris"
    assert wire["startTimeoutSeconds"] == 60
    assert "time_zone" not in wire


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"template": POD_TEMPLATE}, "exactly one of handler or template must be set"),
        ({"handler": None}, "exactly one of handler or template must be set"),
        ({"maxBackfill": 3}, "maxBackfill is only valid with missedFirePolicy Backfill"),
        ({"startTimeoutSeconds": 30}, "startTimeoutSeconds applies only to Pod jobs"),
        ({"oom": {"maxRetries": 1}}, "oom applies only to Pod jobs"),
        ({"podDeletionPolicy": "Cancel"}, "podDeletionPolicy applies only to Pod jobs"),
        (
            {"handler": None, "template": POD_TEMPLATE, "podDeletionPolicy": "Ignore"},
            "'Retry' or 'Cancel'",
        ),
        (
            {"handler": None, "template": POD_TEMPLATE, "oom": {"maxRetries": -1}},
            "greater than or equal to 0",
        ),
        (
            {"handler": None, "template": POD_TEMPLATE, "oom": {"memoryIncreasePercent": 1001}},
            "less than or equal to 1000",
        ),
        (
            {"handler": None, "template": POD_TEMPLATE, "oom": {"maxMemory": "lots"}},
            "should match pattern",
        ),
        (
            {"handler": None, "template": POD_TEMPLATE, "oom": {"maxMemory": "0Gi"}},
            "is not a positive memory quantity: write it like 512Mi or 4Gi",
        ),
        ({"retry": {"backoffBaseSeconds": 60, "backoffCapSeconds": 10}}, "backoffCapSeconds must"),
        ({"schedule": "every minute"}, "should match pattern"),
        ({"schedule": "* * * *"}, "should match pattern"),
        ({"timeZone": "Europe Paris"}, "should match pattern"),
        ({"concurrencyPolicy": "Sometimes"}, "'Allow', 'Replace' or 'BufferOne'"),
        ({"priority": 10}, "less than or equal to 9"),
        ({"spreadSeconds": 3601}, "less than or equal to 3600"),
        ({"queue": "Not A Label"}, "should match pattern"),
        ({"shedule": "* * * * *"}, "Extra inputs are not permitted"),
        ({"handler": {"name": "x", "executionModel": "goroutine"}}, "'subprocess' or 'pod'"),
        (
            {"failurePolicy": {"rules": [{"action": "Retry"}]}},
            "needs exactly one of onExitCodes, onPodConditions or onOOMKilled",
        ),
        (
            {
                "failurePolicy": {
                    "rules": [
                        {
                            "action": "Fail",
                            "onOOMKilled": True,
                            "onExitCodes": {"operator": "In", "values": [1]},
                        }
                    ]
                }
            },
            "needs exactly one of onExitCodes, onPodConditions or onOOMKilled",
        ),
        (
            {"failurePolicy": {"rules": [{"action": "Retry", "onOOMKilled": False}]}},
            "onOOMKilled, when set, must be true",
        ),
        (
            {
                "failurePolicy": {
                    "rules": [
                        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [0, 1]}}
                    ]
                }
            },
            "exit code 0 means success",
        ),
        ({"failurePolicy": {"rules": []}}, "at least 1 item"),
    ],
)
def test_invalid_scheduled_job_spec_is_rejected_with_its_reason(
    spec: dict[str, Any], message: str
) -> None:
    assert message in rejection(scheduled_job.ScheduledJob, hello_job(**spec))


def test_a_pod_job_with_backfill_and_failure_rules_is_accepted() -> None:
    manifest = hello_job(
        handler=None,
        template=POD_TEMPLATE,
        missedFirePolicy="Backfill",
        maxBackfill=5,
        startTimeoutSeconds=120,
        failurePolicy={
            "rules": [
                {"action": "Retry", "onOOMKilled": True},
                {"action": "Fail", "onExitCodes": {"operator": "NotIn", "values": [0, 2]}},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            ]
        },
    )
    del manifest["spec"]["handler"]
    job = scheduled_job.ScheduledJob.model_validate(manifest)
    assert job.spec.failure_policy is not None
    assert job.spec.failure_policy.rules[0].on_oom_killed is True
    assert job.to_manifest()["spec"]["failurePolicy"]["rules"][0] == {
        "action": "Retry",
        "onOOMKilled": True,
    }


def test_scheduled_job_names_leave_room_for_derived_names() -> None:
    manifest = hello_job()
    manifest["metadata"]["name"] = "x" * 53
    assert "at most 52 characters" in rejection(scheduled_job.ScheduledJob, manifest)


def test_a_pod_template_without_containers_is_rejected() -> None:
    manifest = hello_job(template={"spec": {"containers": []}})
    del manifest["spec"]["handler"]
    assert "at least 1 item" in rejection(scheduled_job.ScheduledJob, manifest)


def test_oversized_handler_args_are_rejected_with_the_limit() -> None:
    big = {"blob": "x" * validate.MAX_ARGS_BYTES}
    message = rejection(
        scheduled_job.ScheduledJob, hello_job(handler={"name": "examples.hello", "args": big})
    )
    assert f"more than the limit of {validate.MAX_ARGS_BYTES} bytes" in message


def test_a_one_shot_run_of_a_scheduled_job_is_accepted() -> None:
    run = job_run.JobRun.model_validate(
        one_shot(runAt="2026-11-30T08:00:00Z", args={"n": 1}, dependsOn=["a", "b"])
    )
    assert run.spec.job_ref is not None and run.spec.job_ref.name == "hello"
    assert run.spec.cancel is False
    assert run.to_manifest()["spec"]["runAt"] == "2026-11-30T08:00:00Z"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"job": {"handler": {"name": "x"}}}, "exactly one of jobRef or job must be set"),
        (
            {"runAt": "2026-11-30T08:00:00Z", "delaySeconds": 5},
            "at most one of runAt or delaySeconds",
        ),
        ({"runAt": "2026-11-30T08:00:00"}, "RFC 3339 date-time with an offset"),
        ({"delaySeconds": -1}, "greater than or equal to 0"),
        ({"dependsOn": [f"run-{n}" for n in range(33)]}, "at most 32 items"),
        ({"dependsOn": ["a", "a"]}, "dependsOn must not name a JobRun twice"),
        ({"dependsOn": ["Not_A_Name"]}, "should match pattern"),
        ({"idempotencyKey": "with space"}, "should match pattern"),
        ({"args": {f"k{n}": n for n in range(65)}}, "at most 64 items"),
    ],
)
def test_invalid_job_run_spec_is_rejected_with_its_reason(
    spec: dict[str, Any], message: str
) -> None:
    assert message in rejection(job_run.JobRun, one_shot(**spec))


def test_an_inline_job_needs_exactly_one_of_handler_or_template() -> None:
    manifest = one_shot(job={"retry": {"maxRetries": 1}})
    del manifest["spec"]["jobRef"]
    assert "exactly one of handler or template must be set" in rejection(job_run.JobRun, manifest)


def test_a_job_run_cannot_depend_on_itself() -> None:
    assert "cannot depend on itself" in rejection(job_run.JobRun, one_shot(dependsOn=["once"]))


def test_job_run_status_round_trips_in_metav1_shape() -> None:
    manifest = one_shot()
    manifest["status"] = {
        "phase": "Failed",
        "attempt": 2,
        "reason": "OOMKilled",
        "exitCode": 137,
        "startedAt": "2026-11-30T08:00:00Z",
        "finishedAt": "2026-11-30T08:01:23Z",
        "duration": "1m23s",
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "OOMKilled",
                "message": "the container ran out of memory",
                "lastTransitionTime": "2026-11-30T08:01:23Z",
                "observedGeneration": 1,
            }
        ],
    }
    run = job_run.JobRun.model_validate(copy.deepcopy(manifest))
    assert run.to_manifest() == {**manifest, "spec": {**manifest["spec"], "cancel": False}}


def test_an_unknown_phase_is_rejected() -> None:
    manifest = one_shot()
    manifest["status"] = {"phase": "Done"}
    assert "'DeadLettered'" in rejection(job_run.JobRun, manifest)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (45.9, "45s"),
        (83, "1m23s"),
        (120, "2m"),
        (7500, "2h5m"),
        (3 * 86400 + 4 * 3600, "3d4h"),
    ],
)
def test_durations_print_like_kubectl(seconds: float, shown: str) -> None:
    assert job_run.format_duration(seconds) == shown


@pytest.mark.parametrize("schedule", ["*/5 * * * *", "@hourly", "@every 10s", "@every 1h30m"])
def test_schedule_accepts_cron_macros_and_intervals(schedule: str) -> None:
    manifest = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": "tick"},
        "spec": {"schedule": schedule, "handler": {"name": "examples.hello"}},
    }
    assert scheduled_job.ScheduledJob.model_validate(manifest).spec.schedule == schedule


@pytest.mark.parametrize("schedule", ["@every", "@every 10x", "@reboot", "* * * *"])
def test_schedule_shape_errors_are_rejected_by_the_schema(schedule: str) -> None:
    manifest = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": "tick"},
        "spec": {"schedule": schedule, "handler": {"name": "examples.hello"}},
    }
    with pytest.raises(pydantic.ValidationError, match="schedule"):
        scheduled_job.ScheduledJob.model_validate(manifest)
