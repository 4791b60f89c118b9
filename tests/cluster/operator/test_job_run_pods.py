"""The Pods of a user JobRun's run belong to the JobRun: they are owned by it (deleting the
JobRun, by hand or by its TTL, garbage-collects them, as a Job's Pods go with the Job) and
their Events are on it.

The operator is a subprocess with its pod launcher; kwok plays the kubelet, and the
controller-manager's garbage collector does the deleting. Everything is asserted through the
API.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from support.operator import (
    OperatorProcess,
    apply,
    attempts_of,
    get_json,
    pod_job,
    pod_job_run,
    warnings_once,
)
from support.polling import wait_until

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(150)]


def run_pods(kubectl: Any, namespace: str, job_run: str) -> list[dict[str, Any]]:
    """The Pods of the run of the JobRun ``job_run`` (none before it has a run)."""
    body = get_json(kubectl, "-n", namespace, "jr", job_run)
    run_id = (body.get("status") or {}).get("runId")
    if run_id is None:
        return []
    listing = get_json(kubectl, "-n", namespace, "pod", "-l", f"sundial.dev/run-id={run_id}")
    return list(listing["items"])


def owned_by(pod: dict[str, Any], job_run: dict[str, Any]) -> bool:
    references = [
        (reference["kind"], reference["name"], reference["uid"])
        for reference in pod["metadata"].get("ownerReferences") or ()
    ]
    metadata = job_run["metadata"]
    # The only owner: the garbage collector deletes a dependent once every owner is gone.
    return references == [("JobRun", metadata["name"], metadata["uid"])]


def pod_gone(kubectl: Any, namespace: str, name: str) -> bool:
    result = kubectl("get", "-n", namespace, "pod", name, check=False)
    return result.returncode != 0 and "NotFound" in result.stderr


def test_deleting_an_inline_pod_job_run_garbage_collects_its_running_pod(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str
):
    # retry.maxRetries 0: the Pod's deletion ends the run, so no later attempt starts a Pod.
    apply(kubectl, namespace, pod_job_run("forever", "run-forever", retry={"maxRetries": 0}))

    def running_pod() -> Any:
        pod_operator.assert_alive()
        pods = run_pods(kubectl, namespace, "forever")
        return pods[0] if pods and pods[0]["status"].get("phase") == "Running" else None

    pod = wait_until(running_pod, within=60, what="the Running Pod of the JobRun forever")
    job_run = get_json(kubectl, "-n", namespace, "jr", "forever")
    assert owned_by(pod, job_run), pod["metadata"].get("ownerReferences")

    kubectl("delete", "-n", namespace, "jr", "forever", "--wait=false")

    name = pod["metadata"]["name"]
    wait_until(
        lambda: pod_gone(kubectl, namespace, name),
        within=60,
        what=f"Pod {name} to be garbage-collected with its JobRun",
    )


def test_a_job_run_deleted_by_its_ttl_takes_its_finished_pod(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str
):
    manifest = json.loads(pod_job_run("brief", "succeed"))
    manifest["spec"]["ttlSecondsAfterFinished"] = 2
    apply(kubectl, namespace, json.dumps(manifest))

    def finished_pod() -> Any:
        pod_operator.assert_alive()
        pods = run_pods(kubectl, namespace, "brief")
        return pods[0] if pods and pods[0]["status"].get("phase") == "Succeeded" else None

    pod = wait_until(finished_pod, within=60, what="the Succeeded Pod of the JobRun brief")
    job_run = get_json(kubectl, "-n", namespace, "jr", "brief")
    assert owned_by(pod, job_run), pod["metadata"].get("ownerReferences")

    name = pod["metadata"]["name"]
    wait_until(
        lambda: pod_gone(kubectl, namespace, name),
        within=60,
        what=f"Pod {name} to go with its JobRun after ttlSecondsAfterFinished",
    )
    result = kubectl("get", "-n", namespace, "jr", "brief", check=False)
    assert "NotFound" in result.stderr


def test_the_pod_of_a_job_ref_job_run_is_owned_by_the_job_run_not_the_scheduled_job(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str
):
    apply(kubectl, namespace, pod_job("template", "run-forever", run_now=False))
    body = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": "by-ref"},
        "spec": {"jobRef": {"name": "template"}, "idempotencyKey": "by-ref-1"},
    }
    apply(kubectl, namespace, json.dumps(body))

    def running_pod() -> Any:
        pod_operator.assert_alive()
        pods = run_pods(kubectl, namespace, "by-ref")
        return pods[0] if pods and pods[0]["status"].get("phase") == "Running" else None

    pod = wait_until(running_pod, within=60, what="the Running Pod of the JobRun by-ref")
    job_run = get_json(kubectl, "-n", namespace, "jr", "by-ref")
    assert owned_by(pod, job_run), pod["metadata"].get("ownerReferences")


def test_pod_events_of_an_inline_job_run_are_on_the_job_run(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str
):
    apply(
        kubectl,
        namespace,
        pod_job_run("hungry-once", "oom", oom={"maxRetries": 0}, retry={"maxRetries": 0}),
    )

    def dead_lettered() -> Any:
        pod_operator.assert_alive()
        body = get_json(kubectl, "-n", namespace, "jr", "hungry-once")
        status = body.get("status") or {}
        return status if status.get("phase") == "DeadLettered" else None

    status = wait_until(dead_lettered, within=60, what="the JobRun hungry-once dead-lettered")
    assert (status["attempt"], status["reason"]) == (1, "OOMKilled")
    run_id = status["runId"]
    warnings_once(kubectl, namespace, "hungry-once", "OOMKilled", attempts_of(run_id, 1))
    # Reported by the launcher and by the JobRun's reconcile, keyed by (run, attempt): one.
    warnings_once(kubectl, namespace, "hungry-once", "DeadLettered", [f"run {run_id} used"])
