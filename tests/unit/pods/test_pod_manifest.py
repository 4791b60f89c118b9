"""The Pod of an attempt: names, labels, restricted defaults, environment, memory bump."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sundial.pods import manifests
from sundial.runner import exec_command

DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
FIRE = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def template(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"team": "data"}, "annotations": {"note": "x"}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec},
    }


def launch(**changes: Any) -> manifests.LaunchSpec:
    values: dict[str, Any] = {
        "run_id": 42,
        "attempt": 3,
        "job_id": "4f1c2b7e-0000-4000-8000-000000000001",
        "job_namespace": "team-a",
        "job_name": "nightly-report",
        "handler": "pod:team-a/nightly-report",
        "template": template(),
        "args": {"day": "2026-11-29"},
        "idempotency_key": "run:42",
        "fire_time": FIRE,
        "run_at": FIRE + timedelta(seconds=7),
        "timeout_seconds": 600,
    }
    values.update(changes)
    return manifests.LaunchSpec(**values)


SETTINGS = manifests.ManifestSettings(instance="prod", service_account_name="sundial-job")


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {variable["name"]: variable.get("value") for variable in container["env"]}


def test_name_is_deterministic_dns_1123_and_differs_per_attempt_and_run() -> None:
    name = manifests.pod_name("prod", "nightly-report", 42, 3)
    assert name == manifests.pod_name("prod", "nightly-report", 42, 3)
    assert name.startswith("nightly-report-") and name.endswith("-3")
    assert DNS_1123_LABEL.match(name)
    others = {
        manifests.pod_name("prod", "nightly-report", 42, 4),
        manifests.pod_name("prod", "nightly-report", 43, 3),
        manifests.pod_name("staging", "nightly-report", 42, 3),
    }
    assert name not in others and len(others) == 3


@pytest.mark.parametrize(
    "job_name", ["x" * 253, "Weird_Name.with.dots", "-leading-and-trailing-", "a.b" * 80, "..."]
)
def test_name_is_a_dns_label_of_at_most_63_characters_for_any_job_name(job_name: str) -> None:
    name = manifests.pod_name("prod", job_name, 123456789012, 100)
    assert len(name) <= 63
    assert DNS_1123_LABEL.match(name), name


def test_manifest_carries_labels_owner_deadline_and_never_restarts() -> None:
    owner = {"apiVersion": "sundial.dev/v1alpha1", "kind": "JobRun", "name": "r", "uid": "u"}
    pod = manifests.pod_manifest(launch(owner=owner), SETTINGS)
    labels = pod["metadata"]["labels"]
    assert labels["team"] == "data"
    assert labels[manifests.LABEL_JOB] == "nightly-report"
    assert labels[manifests.LABEL_RUN_ID] == "42"
    assert labels[manifests.LABEL_ATTEMPT] == "3"
    assert labels[manifests.LABEL_INSTANCE] == "prod"
    assert pod["metadata"]["annotations"]["note"] == "x"
    assert pod["metadata"]["namespace"] == "team-a"
    assert pod["metadata"]["ownerReferences"] == [owner]
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["activeDeadlineSeconds"] == 600


def test_owner_reference_to_the_scheduled_job_only_when_configured() -> None:
    assert "ownerReferences" not in manifests.pod_manifest(launch(), SETTINGS)["metadata"]
    settings = manifests.ManifestSettings(owner_references=True)
    [owner] = manifests.pod_manifest(launch(), settings)["metadata"]["ownerReferences"]
    assert owner["kind"] == "ScheduledJob"
    assert owner["uid"] == "4f1c2b7e-0000-4000-8000-000000000001"
    assert owner["name"] == "nightly-report"


def test_restricted_defaults_apply_where_the_template_is_silent() -> None:
    spec = manifests.pod_manifest(launch(), SETTINGS)["spec"]
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert spec["automountServiceAccountToken"] is False
    assert spec["serviceAccountName"] == "sundial-job"
    [container] = spec["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }


def test_explicit_template_choices_are_kept() -> None:
    chosen = template(
        securityContext={"runAsNonRoot": False, "runAsUser": 0},
        automountServiceAccountToken=True,
        serviceAccountName="mine",
    )
    chosen["spec"]["containers"][0]["securityContext"] = {"readOnlyRootFilesystem": False}
    spec = manifests.pod_manifest(launch(template=chosen), SETTINGS)["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is False
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is True
    assert spec["serviceAccountName"] == "mine"
    security = spec["containers"][0]["securityContext"]
    assert security["readOnlyRootFilesystem"] is False
    assert security["allowPrivilegeEscalation"] is False


def test_every_container_gets_the_run_environment_equal_to_sundial_exec() -> None:
    chosen = template()
    chosen["spec"]["initContainers"] = [{"name": "init", "image": "busybox:1.36"}]
    pod = manifests.pod_manifest(launch(template=chosen), SETTINGS)
    expected = exec_command.environment_for(
        run_id="42",
        attempt=3,
        idempotency_key="run:42",
        fire_time=FIRE,
        args={"day": "2026-11-29"},
        namespace=launch().job_namespace,
        run_at=launch().run_at,
    )
    assert expected["SUNDIAL_NAMESPACE"]  # the handler learns whose run it is
    for container in pod["spec"]["containers"] + pod["spec"]["initContainers"]:
        assert env_of(container) == expected


def test_a_hot_queue_token_reaches_every_container() -> None:
    token = (5 << 32) | 3  # attempt 3 under epoch 5
    pod = manifests.pod_manifest(launch(fencing_token=token), SETTINGS)
    env = env_of(pod["spec"]["containers"][0])
    assert (env["SUNDIAL_ATTEMPT"], env["SUNDIAL_FENCING_TOKEN"]) == ("3", str(token))


def test_the_template_cannot_forge_the_fencing_token_and_no_credential_is_added() -> None:
    chosen = template()
    chosen["spec"]["containers"][0]["env"] = [
        {"name": "SUNDIAL_ATTEMPT", "value": "999"},
        {"name": "SUNDIAL_FENCING_TOKEN", "value": "999"},
        {"name": "SUNDIAL_DSN", "value": "postgresql://sundial:secret@db/sundial"},
        {"name": "GREETING", "value": "hello"},
    ]
    pod = manifests.pod_manifest(launch(template=chosen), SETTINGS)
    env = env_of(pod["spec"]["containers"][0])
    assert env["SUNDIAL_ATTEMPT"] == "3" and env["SUNDIAL_FENCING_TOKEN"] == "3"
    assert env["GREETING"] == "hello"
    assert "SUNDIAL_DSN" not in env
    rendered = repr(pod)
    assert "postgresql://" not in rendered and "secret" not in rendered
    assert not any(name.startswith("PG") for name in env)


def test_the_launcher_environment_never_leaks_into_the_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUNDIAL_DSN", "postgresql://launcher:pw@db/sundial")
    monkeypatch.setenv("PGPASSWORD", "pw")
    pod = manifests.pod_manifest(launch(), SETTINGS)
    assert "pw@" not in repr(pod) and "PGPASSWORD" not in repr(pod)


def test_a_handler_job_runs_sundial_exec_in_the_runner_image() -> None:
    settings = manifests.ManifestSettings(runner_image="registry/runner:1")
    pod = manifests.pod_manifest(launch(template={}, handler="reports.nightly"), settings)
    [container] = pod["spec"]["containers"]
    assert container["image"] == "registry/runner:1"
    assert container["command"] == ["sundial", "exec", "reports.nightly"]
    assert env_of(container)["SUNDIAL_RUN_ID"] == "42"


def test_the_input_template_is_not_modified() -> None:
    chosen = template()
    before = repr(chosen)
    manifests.pod_manifest(launch(template=chosen), SETTINGS)
    assert repr(chosen) == before


def test_memory_is_bumped_after_oom_kills_and_capped() -> None:
    chosen = template()
    chosen["spec"]["containers"][0]["resources"] = {
        "requests": {"memory": "64Mi", "cpu": "100m"},
        "limits": {"memory": "128Mi"},
    }
    settings = manifests.ManifestSettings(oom_memory_factor=2.0, oom_memory_cap_bytes=300 * 2**20)
    first = manifests.pod_manifest(launch(template=chosen), settings)
    assert first["spec"]["containers"][0]["resources"]["limits"]["memory"] == "128Mi"
    once = manifests.pod_manifest(launch(template=chosen, oom_kills_before=1), settings)
    resources = once["spec"]["containers"][0]["resources"]
    assert resources["limits"]["memory"] == str(256 * 2**20)
    assert resources["requests"] == {"memory": str(128 * 2**20), "cpu": "100m"}
    many = manifests.pod_manifest(launch(template=chosen, oom_kills_before=5), settings)
    assert many["spec"]["containers"][0]["resources"]["limits"]["memory"] == str(300 * 2**20)


def test_no_bump_without_a_factor_and_unreadable_quantities_are_kept() -> None:
    assert manifests.bump_memory({"limits": {"memory": "lots"}}, 2.0, 2**40) == {
        "limits": {"memory": "lots"}
    }
    assert manifests.bump_memory({"limits": {"memory": "1Gi"}}, 2.0, 2**20) == {
        "limits": {"memory": str(2**30)}
    }
    chosen = template()
    chosen["spec"]["containers"][0]["resources"] = {"limits": {"memory": "128Mi"}}
    pod = manifests.pod_manifest(launch(template=chosen, oom_kills_before=3), SETTINGS)
    assert pod["spec"]["containers"][0]["resources"]["limits"]["memory"] == "128Mi"


def limits_after(kills: int, settings: manifests.ManifestSettings, **job: Any) -> str:
    chosen = template()
    chosen["spec"]["containers"][0]["resources"] = {"limits": {"memory": "100Mi"}}
    pod = manifests.pod_manifest(launch(template=chosen, oom_kills_before=kills, **job), settings)
    return str(pod["spec"]["containers"][0]["resources"]["limits"]["memory"])


def test_the_jobs_memory_increase_overrides_the_installation_default() -> None:
    # No bump configured for the installation (factor 1): the job's 50% still applies.
    assert limits_after(1, SETTINGS, oom_memory_increase_percent=50) == str(150 * 2**20)
    assert limits_after(2, SETTINGS, oom_memory_increase_percent=50) == str(225 * 2**20)
    assert limits_after(0, SETTINGS, oom_memory_increase_percent=50) == "100Mi"
    # The job's 0% switches off an installation-wide bump.
    doubling = manifests.ManifestSettings(oom_memory_factor=2.0)
    assert limits_after(1, doubling) == str(200 * 2**20)
    assert limits_after(1, doubling, oom_memory_increase_percent=0) == "100Mi"


def test_the_jobs_max_memory_caps_the_bump_but_never_lowers_the_template() -> None:
    cap = 180 * 2**20
    job = {"oom_memory_increase_percent": 100, "oom_max_memory_bytes": cap}
    assert limits_after(1, SETTINGS, **job) == str(cap)
    assert limits_after(3, SETTINGS, **job) == str(cap)
    small = {"oom_memory_increase_percent": 100, "oom_max_memory_bytes": 50 * 2**20}
    assert limits_after(1, SETTINGS, **small) == str(100 * 2**20)  # asked for 100Mi: kept
    # The installation's cap applies when the job sets none.
    capped = manifests.ManifestSettings(oom_memory_cap_bytes=120 * 2**20)
    assert limits_after(1, capped, oom_memory_increase_percent=100) == str(120 * 2**20)


def test_memory_bump_reports_the_factor_and_cap_it_applies() -> None:
    spec = launch(oom_kills_before=2, oom_memory_increase_percent=10, oom_max_memory_bytes=2**30)
    factor, cap = manifests.memory_bump(spec, SETTINGS)
    assert (round(factor, 6), cap) == (1.21, 2**30)
    assert manifests.memory_bump(launch(), SETTINGS) == (1.0, SETTINGS.oom_memory_cap_bytes)


def test_the_launch_id_is_the_launchers_and_a_template_cannot_set_it() -> None:
    claimed = template()
    claimed["metadata"]["annotations"][manifests.ANNOTATION_LAUNCH_ID] = "chosen-by-the-template"
    pod = manifests.pod_manifest(launch(template=claimed, launch_id="3f9a"), SETTINGS)
    assert pod["metadata"]["annotations"][manifests.ANNOTATION_LAUNCH_ID] == "3f9a"
    assert pod["metadata"]["annotations"]["note"] == "x"
    # Without one (a manifest built for a preview), the template's value is dropped all the same.
    preview = manifests.pod_manifest(launch(template=claimed), SETTINGS)
    assert manifests.ANNOTATION_LAUNCH_ID not in preview["metadata"]["annotations"]
