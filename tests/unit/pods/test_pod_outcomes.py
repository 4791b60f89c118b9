"""Classifying Pods onto the failure table, from status dicts shaped like a kubelet's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client

from sundial.pods import failure_policy, outcomes
from sundial.pods.outcomes import PodState
from sundial.scheduling.failures import FailureClass

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
    assert outcome.state is PodState.SUCCEEDED and outcome.state.ended
    assert outcome.exit_code == 0


def test_running_and_pending_have_not_ended() -> None:
    assert outcomes.classify(pod("Running", RUNNING)).state is PodState.RUNNING
    pending = outcomes.classify(pod("Pending", waiting("ContainerCreating")))
    assert pending.state is PodState.PENDING and not pending.state.ended


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
    assert outcome.state is PodState.GONE and outcome.state.ended


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


DELETED = {"deletionTimestamp": "2026-11-29T12:00:06Z", "deletionGracePeriodSeconds": 1}
"""Deleted at 12:00:05 with a grace period of 1 s: the kubelet SIGKILLs at 12:00:06."""


def deleted_pod(phase: str, *containers: dict[str, Any], **status: Any) -> dict[str, Any]:
    body = pod(phase, *containers, **status)
    body["metadata"].update(DELETED)
    return body


FINALLY_DELETED = {"deletionTimestamp": "2026-11-29T12:00:09Z", "deletionGracePeriodSeconds": 0}
"""The same Pod once the kubelet, its containers stopped, deleted it again with a grace of 0:
the apiserver moved ``deletionTimestamp`` to that moment (the finalizer keeps the object), so
the first delete's moment (12:00:05) is no longer on the Pod. As a real kubelet left it."""


def finally_deleted_pod(*containers: dict[str, Any]) -> dict[str, Any]:
    body = pod("Failed", *containers)
    body["metadata"].update(FINALLY_DELETED)
    return body


def killed(exit_code: int, reason: str, finished: str = "2026-11-29T12:00:06Z") -> dict[str, Any]:
    container = terminated(exit_code, reason)
    container["state"]["terminated"]["finishedAt"] = finished
    return container


DISRUPTION = [{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}]

# The whole failure table (docs/failure-modes.md), one row per rule and per way past it:
# (what the Pod looks like, the state, the reason, the exit code).
TABLE = [
    ("succeeded", pod("Succeeded", terminated(0, "Completed")), PodState.SUCCEEDED, "Completed", 0),
    (
        "succeeded while being deleted (exited 0 on SIGTERM)",
        deleted_pod("Succeeded", killed(0, "Completed")),
        PodState.SUCCEEDED,
        "Completed",
        0,
    ),
    (
        "activeDeadlineSeconds",
        pod("Failed", terminated(137, "Error"), reason="DeadlineExceeded"),
        PodState.DEADLINE_EXCEEDED,
        "DeadlineExceeded",
        None,
    ),
    (
        "the runtime reports an OOM kill",
        pod("Failed", terminated(137, "OOMKilled")),
        PodState.OOM_KILLED,
        "OOMKilled",
        137,
    ),
    (
        "an OOM kill is one even while the Pod is being deleted",
        deleted_pod("Failed", killed(137, "OOMKilled")),
        PodState.OOM_KILLED,
        "OOMKilled",
        137,
    ),
    (
        "evicted: DisruptionTarget, its container SIGKILLed",
        deleted_pod("Failed", killed(137, "Error"), reason="Evicted", conditions=DISRUPTION),
        PodState.DISRUPTED,
        "Evicted",
        None,
    ),
    (
        "evicted through the Eviction API: the condition alone",
        deleted_pod("Failed", killed(137, "Error"), conditions=DISRUPTION),
        PodState.DISRUPTED,
        "EvictionByEvictionAPI",
        None,
    ),
    ("node lost", pod("Failed", reason="NodeLost"), PodState.DISRUPTED, "NodeLost", None),
    (
        "deleted by someone else, SIGKILLed after its grace period: 137 Error, no DisruptionTarget",
        deleted_pod("Failed", killed(137, "Error")),
        PodState.GONE,
        "PodDeleted",
        137,
    ),
    (
        "deleted by someone else, exited on SIGTERM",
        deleted_pod("Failed", killed(143, "Error")),
        PodState.GONE,
        "PodDeleted",
        143,
    ),
    (
        "deleted, SIGKILLed, then the kubelet's own last delete overwrote the first's record",
        finally_deleted_pod(killed(137, "Error", finished="2026-11-29T12:00:08Z")),
        PodState.GONE,
        "PodDeleted",
        137,
    ),
    (
        "deleted, stopped by SIGTERM, then the kubelet's own last delete",
        finally_deleted_pod(killed(143, "Error", finished="2026-11-29T12:00:08Z")),
        PodState.GONE,
        "PodDeleted",
        143,
    ),
    (
        "failed on its own (exit 1) before a delete the kubelet then finished",
        finally_deleted_pod(killed(1, "Error", finished="2026-11-29T12:00:02Z")),
        PodState.FAILED,
        "Error",
        1,
    ),
    (
        "deleted, no finish time reported",
        deleted_pod("Failed", {**killed(137, "Error"), "state": {"terminated": {"exitCode": 137}}}),
        PodState.GONE,
        "PodDeleted",
        137,
    ),
    (
        "exit 137 without a deletion is a SIGKILL from inside (a crash), not an OOM kill",
        pod("Failed", terminated(137, "Error")),
        PodState.FAILED,
        "Error",
        137,
    ),
    (
        "exit 137 with no reason at all",
        pod("Failed", terminated(137, "")),
        PodState.FAILED,
        "Error",
        137,
    ),
    (
        "failed on its own before someone deleted it",
        deleted_pod("Failed", killed(1, "Error", finished="2026-11-29T12:00:02Z")),
        PodState.FAILED,
        "Error",
        1,
    ),
    ("a non-zero exit", pod("Failed", terminated(3, "Error")), PodState.FAILED, "Error", 3),
    ("failed with no container status", pod("Failed"), PodState.FAILED, "Failed", None),
    (
        "an image that is not there",
        pod("Pending", waiting("ErrImageNeverPull")),
        PodState.NEVER_STARTED,
        "ErrImageNeverPull",
        None,
    ),
    (
        "running while being deleted has not ended yet",
        deleted_pod("Running", RUNNING),
        PodState.RUNNING,
        "Terminating",
        None,
    ),
    ("gone", None, PodState.GONE, "PodDeleted", None),
]


@pytest.mark.parametrize(
    ("body", "state", "reason", "exit_code"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_failure_table(
    body: dict[str, Any] | None, state: PodState, reason: str, exit_code: int | None
) -> None:
    outcome = outcomes.classify(body)
    assert (outcome.state, outcome.reason, outcome.exit_code) == (state, reason, exit_code)


def test_only_the_runtimes_oom_reason_is_an_oom_kill() -> None:
    """Oracle over every terminated reason and exit code: OOM_KILLED iff reason OOMKilled."""
    for reason in ("OOMKilled", "Error", "", "Completed", "ContainerCannotRun"):
        for code in (1, 2, 137, 139, 143, 255):
            outcome = outcomes.classify(pod("Failed", terminated(code, reason)))
            assert (outcome.state is PodState.OOM_KILLED) == (reason == "OOMKilled"), (reason, code)


def test_the_earliest_delete_request_seen_decides_once_the_kubelet_overwrote_it() -> None:
    """A container whose SIGTERM handler exits 1 (not a signal's code): only the delete request
    the launcher read before the kubelet's last delete tells it was stopped by the deletion."""
    body = finally_deleted_pod(killed(1, "Error", finished="2026-11-29T12:00:06Z"))
    assert outcomes.classify(body).state is PodState.FAILED
    first = outcomes.latest_delete_request(deleted_pod("Running", RUNNING)["metadata"])
    assert first == datetime(2026, 11, 29, 12, 0, 5, tzinfo=UTC)
    outcome = outcomes.classify(body, delete_requested_at=first)
    assert (outcome.state, outcome.exit_code) == (PodState.GONE, 1)
    # Seen only after the kubelet's delete, the later record changes nothing.
    later = outcomes.latest_delete_request(body["metadata"])
    assert outcomes.classify(body, delete_requested_at=later).state is PodState.FAILED


def test_a_deleted_pods_sigkill_follows_pod_deletion_policy_not_the_oom_path() -> None:
    outcome = outcomes.classify(deleted_pod("Failed", killed(137, "Error")))
    oom_rule = [{"action": "Fail", "onOOMKilled": True}]
    assert failure_policy.decide(oom_rule, outcome).failure is FailureClass.CRASH
    cancelled = failure_policy.decide(oom_rule, outcome, pod_deletion_policy="Cancel")
    assert cancelled.failure is FailureClass.CANCELLED
    assert "137" in outcome.describe()


def test_started_at_is_the_pods_start_time_and_none_before_the_kubelet_took_it() -> None:
    started = pod("Pending", startTime="2026-11-29T12:03:00Z")
    assert outcomes.started_at(started) == CREATED + timedelta(minutes=3)
    as_v1 = client.V1Pod(status=client.V1PodStatus(start_time=CREATED + timedelta(minutes=3)))
    assert outcomes.started_at(as_v1) == CREATED + timedelta(minutes=3)
    assert outcomes.started_at(pod("Pending")) is None  # unscheduled, or held by a gate
    assert outcomes.started_at({"metadata": {"name": "job-abc-1"}}) is None
    assert outcomes.started_at(None) is None  # gone
