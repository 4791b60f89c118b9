"""The outcome finalizer and the grace period on the Pods the launcher makes, and how a Pod
that is being deleted is read (docs/adr/0023-pod-outcome-finalizer.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sundial.pods import manifests, outcomes, pod_api
from sundial.pods.outcomes import PodState

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def launch(template: dict[str, Any] | None = None) -> manifests.LaunchSpec:
    return manifests.LaunchSpec(
        run_id=7,
        attempt=1,
        job_id="0b9f3f1e-0000-4000-8000-000000000000",
        job_namespace="team",
        job_name="report",
        handler="",
        template=template
        if template is not None
        else {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
        args={},
        idempotency_key="run:7",
        fire_time=None,
        timeout_seconds=60,
    )


def test_every_pod_is_created_tracked() -> None:
    pod = manifests.pod_manifest(launch(), manifests.ManifestSettings())
    assert pod["metadata"]["finalizers"] == [manifests.OUTCOME_FINALIZER]
    assert pod["metadata"]["labels"][manifests.LABEL_TRACKED] == "true"
    assert pod_api.tracked(pod)


def test_the_templates_own_finalizers_are_kept_and_ours_is_added_once() -> None:
    template = {
        "metadata": {"finalizers": ["example.com/audit", manifests.OUTCOME_FINALIZER]},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    pod = manifests.pod_manifest(launch(template), manifests.ManifestSettings())
    assert pod["metadata"]["finalizers"] == ["example.com/audit", manifests.OUTCOME_FINALIZER]


@pytest.mark.parametrize(("given", "expected"), [(None, 10), (0, 0), (45, 45)])
def test_the_grace_period_is_the_templates_else_sundials_default(
    given: int | None, expected: int
) -> None:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if given is not None:
        spec["terminationGracePeriodSeconds"] = given
    pod = manifests.pod_manifest(launch({"spec": spec}), manifests.ManifestSettings())
    assert pod["spec"]["terminationGracePeriodSeconds"] == expected


def deleting_pod(
    *, deleted_at: datetime, phase: str = "Running", disruption: bool = False
) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True"}]
    if disruption:
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
            }
        )
    return {
        "metadata": {
            "name": "report-1",
            "deletionTimestamp": deleted_at.isoformat().replace("+00:00", "Z"),
            "finalizers": [manifests.OUTCOME_FINALIZER],
        },
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"name": "main", "state": {"running": {}}}],
        },
    }


def test_an_eviction_is_read_at_once_from_its_disruption_condition() -> None:
    pod = deleting_pod(deleted_at=NOW + timedelta(seconds=30), disruption=True)
    outcome = outcomes.classify(pod, now=NOW)
    assert (outcome.state, outcome.reason) == (PodState.DISRUPTED, "EvictionByEvictionAPI")


@pytest.mark.parametrize("seconds_after", [-30, 0, 4.9, 6.9])
def test_a_deleted_pod_waits_for_the_kubelets_final_status(seconds_after: float) -> None:
    """Until the grace period (2 s at least: the kubelet's minimum) and the slack are over,
    the kubelet may still report the end."""
    pod = deleting_pod(deleted_at=NOW)
    outcome = outcomes.classify(pod, now=NOW + timedelta(seconds=seconds_after))
    assert (outcome.state, outcome.reason) == (PodState.RUNNING, "Terminating")


def test_a_deleted_pod_with_no_final_status_past_the_slack_is_gone() -> None:
    pod = deleting_pod(deleted_at=NOW)
    past = outcomes.KUBELET_MINIMUM_GRACE + outcomes.DELETION_SLACK + timedelta(seconds=0.1)
    outcome = outcomes.classify(pod, now=NOW + past)
    assert (outcome.state, outcome.reason) == (PodState.GONE, "PodDeleted")


def test_a_long_grace_period_is_waited_for_as_the_pod_says() -> None:
    pod = deleting_pod(deleted_at=NOW + timedelta(seconds=30))
    pod["metadata"]["deletionGracePeriodSeconds"] = 30
    waiting = outcomes.classify(pod, now=NOW + timedelta(seconds=34.9))
    assert waiting.state is PodState.RUNNING
    past = timedelta(seconds=30) + outcomes.DELETION_SLACK + timedelta(seconds=0.1)
    assert outcomes.classify(pod, now=NOW + past).state is PodState.GONE


def test_a_deleted_pod_that_finished_within_its_grace_succeeded() -> None:
    pod = deleting_pod(deleted_at=NOW, phase="Succeeded")
    assert outcomes.classify(pod, now=NOW + timedelta(minutes=5)).state is PodState.SUCCEEDED


def test_the_tracked_selector_names_the_installation_and_the_label() -> None:
    assert pod_api.tracked_selector("prod") == "sundial.dev/instance=prod,sundial.dev/tracked=true"
