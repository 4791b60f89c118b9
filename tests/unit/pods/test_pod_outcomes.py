"""Classifying Pods onto the failure table, from status dicts shaped like a kubelet's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client

from sundial.pods import outcomes
from sundial.pods.outcomes import PodState

CREATED = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def pod(phase: str, *containers: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "job-abc-1", "creationTimestamp": "2026-11-29T12:00:00Z"},
        "status": {"phase": phase, "containerStatuses": list(containers), **status},
    }


def terminated(exit_code: int, reason: str, name: str = "main") -> dict[str, Any]:
    return {
        "name": name,
        "ready": False,
        "restartCount": 0,
        "image": "busybox:1.36",
        "state": {
            "terminated": {
                "exitCode": exit_code,
                "reason": reason,
                "startedAt": "2026-11-29T12:00:01Z",
                "finishedAt": "2026-11-29T12:00:02Z",
            }
        },
    }


def waiting(reason: str, message: str = "", name: str = "main") -> dict[str, Any]:
    return {
        "name": name,
        "ready": False,
        "state": {"waiting": {"reason": reason, "message": message}},
    }


RUNNING = {
    "name": "main",
    "ready": True,
    "state": {"running": {"startedAt": "2026-11-29T12:00:01Z"}},
}


def test_succeeded() -> None:
    outcome = outcomes.classify(pod("Succeeded", terminated(0, "Completed")))
    assert outcome.state is PodState.SUCCEEDED and outcome.state.terminal
    assert outcome.exit_code == 0


def test_running_and_pending_are_not_terminal() -> None:
    assert outcomes.classify(pod("Running", RUNNING)).state is PodState.RUNNING
    pending = outcomes.classify(pod("Pending", waiting("ContainerCreating")))
    assert pending.state is PodState.PENDING and not pending.state.terminal


def test_non_zero_exit_code_with_container_name() -> None:
    outcome = outcomes.classify(
        pod("Failed", terminated(0, "Completed", "sidecar"), terminated(3, "Error"))
    )
    assert outcome.state is PodState.FAILED
    assert (outcome.exit_code, outcome.container, outcome.reason) == (3, "main", "Error")
    assert outcome.exit_codes == (("sidecar", 0), ("main", 3))
    assert "exit code 3" in outcome.describe()


def test_oom_killed_by_reason() -> None:
    outcome = outcomes.classify(pod("Failed", terminated(137, "OOMKilled")))
    assert (outcome.state, outcome.reason, outcome.exit_code) == (
        PodState.OOM_KILLED,
        "OOMKilled",
        137,
    )


def test_exit_137_without_a_reason_is_read_as_oom() -> None:
    outcome = outcomes.classify(pod("Failed", terminated(137, "Error")))
    assert outcome.state is PodState.OOM_KILLED


def test_evicted_pod_is_disrupted_not_oom_although_its_container_reports_137() -> None:
    evicted = pod(
        "Failed",
        terminated(137, "Error"),
        reason="Evicted",
        message="The node was low on resource: memory.",
        conditions=[
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"},
            {"type": "Ready", "status": "False"},
        ],
    )
    outcome = outcomes.classify(evicted)
    assert (outcome.state, outcome.reason) == (PodState.DISRUPTED, "Evicted")
    assert ("DisruptionTarget", "True") in outcome.conditions


def test_disruption_target_condition_alone_is_a_disruption() -> None:
    preempted = pod(
        "Failed",
        terminated(143, "Error"),
        conditions=[
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ],
    )
    outcome = outcomes.classify(preempted)
    assert (outcome.state, outcome.reason) == (PodState.DISRUPTED, "PreemptionByScheduler")


@pytest.mark.parametrize(
    "reason", ["ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "InvalidImageName"]
)
def test_containers_that_cannot_start_fail_fast(reason: str) -> None:
    outcome = outcomes.classify(pod("Pending", waiting(reason, "Back-off pulling image")))
    assert (outcome.state, outcome.reason) == (PodState.NEVER_STARTED, reason)
    assert outcome.message == "Back-off pulling image"


def test_unschedulable_fails_only_after_the_start_timeout() -> None:
    unschedulable = pod(
        "Pending",
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient cpu.",
            }
        ],
    )
    before = outcomes.classify(
        unschedulable, now=CREATED + timedelta(seconds=20), start_timeout=timedelta(seconds=30)
    )
    assert before.state is PodState.PENDING
    after = outcomes.classify(
        unschedulable, now=CREATED + timedelta(seconds=31), start_timeout=timedelta(seconds=30)
    )
    assert (after.state, after.reason) == (PodState.NEVER_STARTED, "Unschedulable")
    assert "Insufficient cpu" in after.message


def test_a_pod_pending_past_its_start_timeout_for_another_reason() -> None:
    outcome = outcomes.classify(
        pod("Pending", waiting("ContainerCreating")),
        now=CREATED + timedelta(minutes=5),
        start_timeout=timedelta(seconds=60),
    )
    assert (outcome.state, outcome.reason) == (PodState.NEVER_STARTED, "StartTimeout")


def test_a_running_pod_never_hits_the_start_timeout() -> None:
    outcome = outcomes.classify(
        pod("Running", RUNNING),
        now=CREATED + timedelta(hours=1),
        start_timeout=timedelta(seconds=1),
    )
    assert outcome.state is PodState.RUNNING


def test_deadline_exceeded() -> None:
    outcome = outcomes.classify(
        pod(
            "Failed",
            terminated(137, "Error"),
            reason="DeadlineExceeded",
            message="Pod was active on the node longer than the specified deadline",
        )
    )
    assert (outcome.state, outcome.reason) == (PodState.DEADLINE_EXCEEDED, "DeadlineExceeded")


def test_a_missing_pod_is_gone() -> None:
    outcome = outcomes.classify(None)
    assert outcome.state is PodState.GONE and outcome.state.terminal


def test_a_v1pod_object_is_classified_like_its_json() -> None:
    v1 = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p", creation_timestamp=CREATED),
        status=client.V1PodStatus(
            phase="Failed",
            container_statuses=[
                client.V1ContainerStatus(
                    name="main",
                    image="busybox:1.36",
                    image_id="",
                    ready=False,
                    restart_count=0,
                    state=client.V1ContainerState(
                        terminated=client.V1ContainerStateTerminated(
                            exit_code=137, reason="OOMKilled"
                        )
                    ),
                )
            ],
        ),
    )
    outcome = outcomes.classify(v1)
    assert (outcome.state, outcome.container) == (PodState.OOM_KILLED, "main")
