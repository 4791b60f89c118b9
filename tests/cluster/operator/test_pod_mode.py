"""Pod mode through the operator: its pod launcher runs ScheduledJobs with a ``template``.

The operator is a subprocess (``python -m sundial operator``); kwok plays the kubelet, steered
by the ``sundial.dev/kwok-outcome`` annotation on the template (hack/cluster/kwok/stages.yaml).
Runs start at once through the ``sundial.dev/run-now`` annotation. Everything is asserted
through the API (JobRun status, Pods, Events) and PostgreSQL.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sundial.scheduling import failures
from support.operator import (
    OperatorProcess,
    apply,
    attempts_of,
    finished_run,
    get_json,
    mirrored_runs,
    pod_job,
    warnings_once,
)
from support.polling import wait_until

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(150)]


def test_a_template_job_runs_as_an_owned_pod_and_its_jobrun_shows_the_pod(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str, operator_dsn: str
):
    apply(kubectl, namespace, pod_job("report", "succeed"))

    run = finished_run(pod_operator, kubectl, namespace, "report", "Succeeded")
    status = run["status"]
    assert status["exitCode"] == 0
    assert status["attempt"] == 1
    assert not status.get("reason")
    pod = get_json(kubectl, "-n", namespace, "pod", status["podName"])
    assert pod["status"]["phase"] == "Succeeded"
    assert pod["metadata"]["labels"]["sundial.dev/run-id"] == status["runId"]
    scheduled_job = get_json(kubectl, "-n", namespace, "sj", "report")
    [owner] = pod["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "ScheduledJob",
        "report",
        scheduled_job["metadata"]["uid"],
    )
    with psycopg.connect(operator_dsn) as conn:
        row = conn.execute(
            "SELECT state, lease_owner, pod_name FROM job_runs WHERE id = %s",
            (int(status["runId"]),),
        ).fetchone()
    # The operator's holder id is the launcher's worker id: a restart re-adopts its Pods.
    assert row == ("completed", pod_operator.holder, status["podName"])


def test_oom_killed_every_time_ends_dead_lettered_with_one_event_per_attempt(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str
):
    apply(
        kubectl,
        namespace,
        pod_job(
            "hungry",
            "oom",
            # OOM kills spend oom.maxRetries, never retry.maxRetries (ADR 0010).
            retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
            oom={"maxRetries": 1},
        ),
    )

    run = finished_run(pod_operator, kubectl, namespace, "hungry", "DeadLettered")
    status = run["status"]
    assert (status["attempt"], status["reason"], status["exitCode"]) == (2, "OOMKilled", 137)
    assert "OOMKilled" in status["lastError"]
    assert status["podName"].endswith("-2")

    warnings_once(kubectl, namespace, "hungry", "OOMKilled", attempts_of(status["runId"], 2))
    # Reported by the launcher and by the mirror, keyed by (run, attempt): one Event.
    warnings_once(kubectl, namespace, "hungry", "DeadLettered", [f"run {status['runId']} used"])


def test_a_pod_deleted_by_hand_cancels_its_run_under_pod_deletion_policy_cancel(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str, operator_dsn: str
):
    apply(kubectl, namespace, pod_job("doomed", "run-forever", podDeletionPolicy="Cancel"))

    def running_pod() -> Any:
        pod_operator.assert_alive()
        pods = get_json(kubectl, "-n", namespace, "pod", "-l", "sundial.dev/job=doomed")["items"]
        return pods[0] if pods and pods[0]["status"].get("phase") == "Running" else None

    pod = wait_until(running_pod, within=60, what="the Running Pod of doomed")
    kubectl("delete", "-n", namespace, "pod", pod["metadata"]["name"], "--wait=false")

    def cancelled() -> Any:
        pod_operator.assert_alive()
        for run in mirrored_runs(kubectl, namespace, "doomed"):
            if (run.get("status") or {}).get("phase") == "Cancelled":
                return run
        return None

    run = wait_until(cancelled, within=60, what="a Cancelled JobRun of doomed")
    status = run["status"]
    assert status["attempt"] == 1
    assert "podDeletionPolicy: Cancel" in status["lastError"]
    with psycopg.connect(operator_dsn) as conn:
        row = conn.execute(
            "SELECT state, failure_reason, pod_reason FROM job_runs WHERE id = %s",
            (int(status["runId"]),),
        ).fetchone()
    assert row == ("cancelled", "cancelled", "PodDeleted")
    assert get_json(kubectl, "-n", namespace, "pod", "-l", "sundial.dev/job=doomed")["items"] == []
    # One Normal Event says why the run ended: the deletion was asked for, not a failure.
    warnings_once(
        kubectl,
        namespace,
        "doomed",
        "PodDeleted",
        attempts_of(status["runId"], 1),
        event_type="Normal",
    )


def test_without_its_launcher_the_operator_leaves_pod_runs_to_sundial_pod_launcher(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    kubectl: Any,
):
    operator = OperatorProcess(
        operator_dsn,
        kubeconfig,
        namespace,
        tmp_path,
        extra_args=["--no-pod-launcher", "--pod-instance", namespace],
    )
    operator.start()
    try:
        apply(kubectl, namespace, pod_job("elsewhere", "succeed"))

        def pending_run() -> Any:
            operator.assert_alive()
            with psycopg.connect(operator_dsn) as conn:
                return conn.execute(
                    "SELECT r.id, r.state, r.lease_owner FROM job_runs r"
                    " JOIN job_definitions j ON j.id = r.job_id WHERE j.name = 'elsewhere'"
                ).fetchone()

        run_id, state, owner = wait_until(pending_run, within=30, what="the run-now run")
        assert (state, owner) == ("pending", None)
        running = json.loads(
            wait_until(
                lambda: [
                    line for line in operator.logs().splitlines() if '"operator running"' in line
                ],
                within=30,
                what="the operator to log its start",
            )[0]
        )
        assert running["pod_launcher"] is False

        launcher_log = tmp_path / "pod-launcher.log"
        command = [
            sys.executable, "-m", "sundial", "pod-launcher",
            "--dsn", operator_dsn,
            "--kubeconfig", str(kubeconfig),
            "--namespace", namespace,
            "--instance", namespace,
            "--worker", "standalone-launcher",
            "--poll-seconds", "0.2",
        ]  # fmt: skip
        with launcher_log.open("wb") as log:
            launcher = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            run = finished_run(operator, kubectl, namespace, "elsewhere", "Succeeded")
        finally:
            launcher.send_signal(signal.SIGTERM)
            code = launcher.wait(timeout=30)
        assert code == 0, launcher_log.read_text()
        assert run["status"]["runId"] == str(run_id)
        assert run["status"]["exitCode"] == 0
        with psycopg.connect(operator_dsn) as conn:
            row = conn.execute("SELECT lease_owner FROM job_runs WHERE id = %s", (run_id,))
            assert row.fetchone() == ("standalone-launcher",)
    finally:
        code = operator.stop()
        if code not in (0, None):
            print(operator.logs()[-5000:])


def test_an_evicted_pod_leaves_one_evicted_event_per_attempt_until_dead_lettered(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str
):
    # Evictions are retried outside maxRetries, up to the infrastructure retry limit.
    apply(
        kubectl,
        namespace,
        pod_job(
            "evicted",
            "evict",
            retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
        ),
    )

    run = finished_run(
        pod_operator, kubectl, namespace, "evicted", "DeadLettered", with_exit_code=False
    )
    status = run["status"]
    attempts = failures.INFRASTRUCTURE_RETRY_LIMIT + 1
    assert (status["attempt"], status["reason"]) == (attempts, "Evicted")
    assert status["podName"].endswith(f"-{attempts}")
    # The 137 of an evicted container is the kill's, not the job's: pod_outcomes records none.
    assert status.get("exitCode") is None
    warnings_once(kubectl, namespace, "evicted", "Evicted", attempts_of(status["runId"], attempts))
    warnings_once(kubectl, namespace, "evicted", "DeadLettered", [f"run {status['runId']} used"])


def test_a_pod_that_never_starts_fails_fast_with_one_failed_start_event(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str
):
    apply(kubectl, namespace, pod_job("unpulled", "image-pull-backoff"))

    run = finished_run(pod_operator, kubectl, namespace, "unpulled", "Failed", with_exit_code=False)
    status = run["status"]
    assert (status["attempt"], status["reason"]) == (1, "ImagePullBackOff")
    assert status["podName"].endswith("-1")
    assert status.get("exitCode") is None  # its container never ran
    assert "ImagePullBackOff" in status["lastError"]
    warnings_once(kubectl, namespace, "unpulled", "FailedStart", attempts_of(status["runId"], 1))


def test_a_pod_past_its_timeout_leaves_one_deadline_exceeded_event_per_attempt(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str
):
    apply(
        kubectl,
        namespace,
        pod_job(
            "sleepy",
            "run-forever",
            timeoutSeconds=2,
            retry={"maxRetries": 1, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
        ),
    )

    run = finished_run(pod_operator, kubectl, namespace, "sleepy", "TimedOut", with_exit_code=False)
    status = run["status"]
    # Timeout in either mode (the Pod's DeadlineExceeded is in the Event below).
    assert (status["attempt"], status["reason"]) == (2, "Timeout")
    assert status["podName"].endswith("-2")
    assert status.get("exitCode") is None  # deleted while it ran: no exit code
    run_id = status["runId"]
    warnings_once(kubectl, namespace, "sleepy", "DeadlineExceeded", attempts_of(run_id, 2))
    warnings_once(kubectl, namespace, "sleepy", "TimedOut", [f"run {run_id} "])
