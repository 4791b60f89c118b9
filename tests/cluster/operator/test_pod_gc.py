"""Finished Pods go with their JobRun window (docs/adr/0011-finished-pod-gc.md).

The operator is a subprocess; kwok plays the kubelet. A pod-mode ScheduledJob fires every two
seconds and each Pod runs for three, so Pods are Running and Succeeded side by side while
the mirror sweeps, and most runs start and finish between two mirror passes.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest
from kubernetes import client

from support.operator import KWOK_RUNNING_SECONDS, OperatorProcess, apply, mirrored_runs, pod_job
from support.polling import wait_until

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(180)]

SUCCESSFUL_LIMIT = 2
FAILED_LIMIT = 1
RUNS = 12


def job_pods(core_api: client.CoreV1Api, namespace: str, job: str) -> list[client.V1Pod]:
    return list(
        core_api.list_namespaced_pod(namespace, label_selector=f"sundial.dev/job={job}").items
    )


def job_runs(dsn: str, job: str) -> list[tuple[int, str, int, str | None]]:
    """(id, state, attempt, failure reason) of every run of the job, from PostgreSQL, the
    last finished last (runs overlap, so they need not finish in the order they started)."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT r.id, r.state, r.attempt, r.failure_reason FROM job_runs r"
            " JOIN job_definitions j ON j.id = r.job_id WHERE j.name = %s"
            " ORDER BY r.finished_at NULLS LAST, r.id",
            (job,),
        ).fetchall()


def ticker(**changes: Any) -> str:
    """Fires every 2 s; its Pods run 3 s, so two overlap (concurrencyPolicy Allow)."""
    return pod_job(
        "ticker",
        "succeed",
        run_now=False,
        pod_annotations={KWOK_RUNNING_SECONDS: "3"},
        schedule="@every 2s",
        concurrencyPolicy="Allow",
        successfulRunsHistoryLimit=SUCCESSFUL_LIMIT,
        failedRunsHistoryLimit=FAILED_LIMIT,
        **changes,
    )


def test_finished_pods_are_deleted_with_their_window_and_running_ones_are_left(
    pod_operator: OperatorProcess,
    kubectl: Any,
    core_api: client.CoreV1Api,
    namespace: str,
    operator_dsn: str,
):
    apply(kubectl, namespace, ticker())

    most_pods = 0
    seen_running = 0
    deadline = time.monotonic() + 120
    while len([r for r in job_runs(operator_dsn, "ticker") if r[1] == "completed"]) < RUNS:
        pod_operator.assert_alive()
        assert time.monotonic() < deadline, f"fewer than {RUNS} runs completed in 120 s"
        pods = job_pods(core_api, namespace, "ticker")
        most_pods = max(most_pods, len(pods))
        seen_running = max(seen_running, sum(pod.status.phase == "Running" for pod in pods))
        time.sleep(0.3)

    # Stop firing, then let the runs that are still going finish.
    apply(kubectl, namespace, ticker(suspend=True))
    wait_until(
        lambda: all(run[1] == "completed" for run in job_runs(operator_dsn, "ticker")),
        within=30,
        what="every run of ticker to complete",
    )
    runs = job_runs(operator_dsn, "ticker")

    # A Pod deleted while it ran would have made its run a crash, retried as attempt 2.
    assert [(state, attempt, reason) for _, state, attempt, reason in runs] == [
        ("completed", 1, None)
    ] * len(runs)
    assert seen_running >= 1, "no Pod was ever seen Running: the test proves nothing"
    # The window: at most two runs overlap (2 s apart, 3 s long), plus the finished ones it
    # keeps, plus one run that finished since the last pass.
    assert most_pods <= SUCCESSFUL_LIMIT + FAILED_LIMIT + 3, most_pods

    def settled() -> Any:
        pod_runs = {
            pod.metadata.labels["sundial.dev/run-id"]
            for pod in job_pods(core_api, namespace, "ticker")
        }
        jobruns = mirrored_runs(kubectl, namespace, "ticker")
        mirrored = {run["status"].get("runId") for run in jobruns}
        final = len(jobruns) == SUCCESSFUL_LIMIT and all(
            run["status"].get("phase") == "Succeeded" for run in jobruns
        )
        return (pod_runs, mirrored) if final and pod_runs == mirrored else None

    pod_runs, _ = wait_until(
        settled, within=20, what="the Pods of ticker to be those of its last JobRuns", every=1
    )
    newest = {str(run_id) for run_id, *_ in runs[-SUCCESSFUL_LIMIT:]}
    assert pod_runs == newest
    assert len(runs) >= RUNS
    # Every sweep worked: a failed LIST or delete is logged and retried, which would hide here.
    errors = [line for line in pod_operator.logs().splitlines() if '"level": "error"' in line]
    assert not errors, errors[:3]
