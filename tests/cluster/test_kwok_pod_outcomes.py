"""kwok drives Pods through the lifecycles Sundial must handle, chosen per Pod.

The annotations (see hack/cluster/kwok/stages.yaml) pick the outcome; each test asserts
the exact status fields a kubelet would have written, because Sundial's failure
classification reads exactly those fields.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client, watch

OUTCOME = "sundial.dev/kwok-outcome"
EXIT_CODE = "sundial.dev/kwok-exit-code"
RUNNING_SECONDS = "sundial.dev/kwok-running-seconds"

pytestmark = pytest.mark.usefixtures("kwok_nodes")


def _has_ended(pod: Any) -> bool:
    return bool(pod.status.phase in ("Succeeded", "Failed"))


def _is_running(pod: Any) -> bool:
    statuses = pod.status.container_statuses or []
    return bool(
        pod.status.phase == "Running"
        and statuses
        and all(status.state.running for status in statuses)
    )


@pytest.fixture
def create_pod(
    core_api: client.CoreV1Api,
    namespace: str,
    make_pod_template: Callable[..., client.V1PodTemplateSpec],
) -> Callable[..., str]:
    def create(annotations: dict[str, str] | None = None, **metadata: Any) -> str:
        template = make_pod_template(annotations)
        name = f"pod-{uuid.uuid4().hex[:8]}"
        template.metadata.name = name
        for key, value in metadata.items():
            setattr(template.metadata, key, value)
        core_api.create_namespaced_pod(
            namespace, client.V1Pod(metadata=template.metadata, spec=template.spec)
        )
        return name

    return create


@pytest.fixture
def wait_for_pod(
    core_api: client.CoreV1Api, namespace: str, wait_for: Callable[..., Any]
) -> Callable[..., Any]:
    def wait(name: str, condition: Callable[[Any], bool], timeout: float = 60) -> Any:
        return wait_for(
            core_api.list_namespaced_pod,
            namespace=namespace,
            name=name,
            condition=condition,
            timeout=timeout,
        )

    return wait


def test_pod_runs_then_succeeds(create_pod, wait_for_pod):
    name = create_pod({RUNNING_SECONDS: "3"})

    running = wait_for_pod(name, _is_running)
    assert running.spec.node_name.startswith("kwok-node-")
    assert running.status.pod_ip
    assert running.status.start_time is not None

    done = wait_for_pod(name, _has_ended)
    assert done.status.phase == "Succeeded"
    [container] = done.status.container_statuses
    assert container.state.terminated.exit_code == 0
    assert container.state.terminated.reason == "Completed"
    ran_for = (
        done.status.container_statuses[0].state.terminated.finished_at - running.status.start_time
    )
    assert ran_for.total_seconds() >= 3


def test_failed_pod_reports_the_chosen_exit_code(create_pod, wait_for_pod):
    name = create_pod({OUTCOME: "fail", EXIT_CODE: "3"})

    pod = wait_for_pod(name, _has_ended)

    assert pod.status.phase == "Failed"
    [container] = pod.status.container_statuses
    assert container.state.terminated.exit_code == 3
    assert container.state.terminated.reason == "Error"


def test_oom_killed_pod_reports_reason_and_exit_code_137(create_pod, wait_for_pod):
    name = create_pod({OUTCOME: "oom"})

    pod = wait_for_pod(name, _has_ended)

    assert pod.status.phase == "Failed"
    [container] = pod.status.container_statuses
    assert container.state.terminated.reason == "OOMKilled"
    assert container.state.terminated.exit_code == 137


@pytest.mark.parametrize(("attempt", "reason"), [("1", "OOMKilled"), ("2", "Completed")])
def test_oom_first_attempt_kills_only_attempt_one(create_pod, wait_for_pod, attempt, reason):
    name = create_pod({OUTCOME: "oom-first-attempt"}, labels={"sundial.dev/attempt": attempt})

    pod = wait_for_pod(name, _has_ended)

    assert pod.status.phase == ("Failed" if attempt == "1" else "Succeeded")
    [container] = pod.status.container_statuses
    assert container.state.terminated.reason == reason


def test_evicted_pod_has_reason_evicted_and_a_disruption_target_condition(create_pod, wait_for_pod):
    name = create_pod({OUTCOME: "evict"})

    pod = wait_for_pod(name, _has_ended)

    assert pod.status.phase == "Failed"
    assert pod.status.reason == "Evicted"
    conditions = {condition.type: condition for condition in pod.status.conditions}
    assert conditions["DisruptionTarget"].status == "True"
    assert conditions["DisruptionTarget"].reason == "TerminationByKubelet"


def test_image_pull_backoff_pod_stays_pending_waiting(create_pod, wait_for_pod):
    name = create_pod({OUTCOME: "image-pull-backoff"})

    pod = wait_for_pod(
        name,
        lambda p: any(
            s.state.waiting and s.state.waiting.reason == "ImagePullBackOff"
            for s in p.status.container_statuses or []
        ),
    )

    assert pod.status.phase == "Pending"
    [container] = pod.status.container_statuses
    assert container.state.waiting.reason == "ImagePullBackOff"
    assert "busybox:1.36" in container.state.waiting.message


def test_run_forever_pod_stays_running(create_pod, wait_for_pod, core_api, namespace):
    name = create_pod({OUTCOME: "run-forever", RUNNING_SECONDS: "1"})
    wait_for_pod(name, _is_running)

    # Watch well past the one-second running period: no change may leave Running.
    phases = [
        event["object"].status.phase
        for event in watch.Watch().stream(
            core_api.list_namespaced_pod,
            namespace,
            field_selector=f"metadata.name={name}",
            timeout_seconds=4,
        )
    ]

    assert phases, "the watch saw nothing"
    assert set(phases) == {"Running"}


def test_outcome_lands_on_time_while_another_writer_patches_the_pod(
    create_pod, wait_for_pod, core_api, namespace
):
    name = create_pod({OUTCOME: "fail", EXIT_CODE: "7", RUNNING_SECONDS: "3"})
    wait_for_pod(name, _is_running)

    # Another writer (Sundial's operator, say) keeps patching labels and annotations. If
    # each change restarted kwok's timer the Pod would never finish while this goes on.
    deadline = time.monotonic() + 20
    pod = core_api.read_namespaced_pod(name, namespace)
    patches = 0
    while not _has_ended(pod) and time.monotonic() < deadline:
        patches += 1
        body = {
            "metadata": {"labels": {"patched": str(patches)}, "annotations": {"n": str(patches)}}
        }
        pod = core_api.patch_namespaced_pod(name, namespace, body)
        time.sleep(0.5)
        pod = core_api.read_namespaced_pod(name, namespace)

    assert _has_ended(pod), f"still {pod.status.phase} after {patches} patches"
    assert patches >= 3
    assert pod.metadata.labels["patched"] == str(patches)
    [container] = pod.status.container_statuses
    assert container.state.terminated.exit_code == 7


def test_deleting_a_pod_completes(create_pod, wait_for_pod, core_api, namespace, wait_gone):
    name = create_pod({OUTCOME: "run-forever"})
    wait_for_pod(name, _is_running)

    core_api.delete_namespaced_pod(name, namespace)

    wait_gone(core_api.list_namespaced_pod, name=name, timeout=30, namespace=namespace)


def test_deletion_waits_for_a_finalizer_owned_by_someone_else(
    create_pod, wait_for_pod, core_api, namespace, wait_gone
):
    name = create_pod({OUTCOME: "run-forever"}, finalizers=["sundial.dev/test-hold"])
    wait_for_pod(name, _is_running)

    core_api.delete_namespaced_pod(name, namespace)
    held = wait_for_pod(name, lambda p: p.metadata.deletion_timestamp is not None)
    assert held.metadata.finalizers == ["sundial.dev/test-hold"]

    core_api.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})

    wait_gone(core_api.list_namespaced_pod, name=name, timeout=30, namespace=namespace)
