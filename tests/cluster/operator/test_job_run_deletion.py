"""Deleting a user JobRun whose run has not finished cancels the run, as deleting a Job stops
its work (docs/adr/0013-job-run-owns-its-pods.md, amendment): the run stays in PostgreSQL,
cancelled and saying why; a pod-mode run's Pod goes and no later attempt starts one; a
finished run is left as it is; a deletion while the operator is down is handled when it is
back.

The operator (with its pod launcher) and the runner are subprocesses; kwok plays the kubelet
and the controller-manager's garbage collector deletes owned Pods. Runs are read from
PostgreSQL.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from support.operator import OperatorProcess, RunnerProcess, apply, get_json, pod_job_run
from support.polling import wait_until

pytestmark = pytest.mark.timeout(180)

#: The reason the operator's cancel writes on a run whose JobRun was deleted.
DELETED = "the JobRun was deleted"


def run_row(dsn: str, run_id: int) -> tuple[str, int, str | None, str | None]:
    """(state, attempt, failure_reason, last_error) of a run."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT state, attempt, failure_reason, last_error FROM job_runs WHERE id = %s",
            (run_id,),
        ).fetchone()
    assert row is not None, f"run {run_id} is not in job_runs"
    return (str(row[0]), int(row[1]), row[2], row[3])


def job_run_gone(kubectl: Any, namespace: str, name: str) -> bool:
    result = kubectl("get", "-n", namespace, "jr", name, check=False)
    return result.returncode != 0 and "NotFound" in result.stderr


def pods_of_run(kubectl: Any, namespace: str, run_id: int) -> list[dict[str, Any]]:
    listing = get_json(kubectl, "-n", namespace, "pod", "-l", f"sundial.dev/run-id={run_id}")
    return list(listing["items"])


def delete_job_run(kubectl: Any, namespace: str, name: str, propagation: str) -> None:
    """``kubectl delete --cascade=<propagation>`` without waiting for the object to go."""
    kubectl("delete", "-n", namespace, "jr", name, f"--cascade={propagation}", "--wait=false")


def running_pod_run(operator: OperatorProcess, kubectl: Any, namespace: str, name: str) -> int:
    """The run id of the JobRun ``name``, once its Pod is Running."""

    def found() -> Any:
        operator.assert_alive()
        run_id = (get_json(kubectl, "-n", namespace, "jr", name).get("status") or {}).get("runId")
        if run_id is None:
            return None
        pods = pods_of_run(kubectl, namespace, int(run_id))
        if pods and pods[0]["status"].get("phase") == "Running":
            return int(run_id)
        return None

    result: int = wait_until(found, within=60, what=f"the Running Pod of the JobRun {name}")
    return result


def assert_cancelled_without_another_pod(
    operator: OperatorProcess, kubectl: Any, namespace: str, dsn: str, run_id: int
) -> None:
    """The run ends cancelled at attempt 1 with the deletion as its reason, every Pod of the
    run goes, and no Pod of a later attempt appears while we watch (two launcher heartbeats)."""
    attempts_seen: set[str] = set()

    def cancelled_and_no_pod() -> Any:
        operator.assert_alive()
        pods = pods_of_run(kubectl, namespace, run_id)
        attempts_seen.update(p["metadata"]["labels"]["sundial.dev/attempt"] for p in pods)
        row = run_row(dsn, run_id)
        return row if row[0] == "cancelled" and not pods else None

    state, attempt, failure_reason, last_error = wait_until(
        cancelled_and_no_pod, within=60, what=f"run {run_id} cancelled and its Pod gone"
    )
    watch_until = time.monotonic() + 25
    while time.monotonic() < watch_until:
        pods = pods_of_run(kubectl, namespace, run_id)
        attempts_seen.update(p["metadata"]["labels"]["sundial.dev/attempt"] for p in pods)
        time.sleep(0.5)
    assert attempts_seen <= {"1"}, f"Pods of attempts {sorted(attempts_seen)} appeared"
    assert run_row(dsn, run_id) == (state, attempt, failure_reason, last_error)
    assert (state, attempt, failure_reason) == ("cancelled", 1, "cancelled")
    assert last_error is not None and DELETED in last_error, last_error
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT pod_reason FROM job_runs WHERE id = %s", (run_id,)).fetchone()
    # OwnerDeleted: the launcher saw the Pod gone with its JobRun before it heard of the cancel.
    print(f"run {run_id}: pod_reason {row[0] if row else None!r}")


@pytest.mark.usefixtures("kwok_nodes")
@pytest.mark.parametrize("propagation", ["background", "foreground"])
def test_deleting_a_pod_job_run_cancels_its_run_and_no_new_pod_starts(
    pod_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    propagation: str,
):
    # The default podDeletionPolicy (Retry) and retries left: a Pod deleted by someone else
    # would be retried with a new Pod, so only the cancel explains a run that ends.
    apply(kubectl, namespace, pod_job_run("forever", "run-forever", retry={"maxRetries": 3}))
    run_id = running_pod_run(pod_operator, kubectl, namespace, "forever")

    delete_job_run(kubectl, namespace, "forever", propagation)

    assert_cancelled_without_another_pod(pod_operator, kubectl, namespace, operator_dsn, run_id)
    wait_until(
        lambda: job_run_gone(kubectl, namespace, "forever"),
        within=30,
        what="the JobRun forever to be gone",
    )


def test_deleting_a_runner_job_run_cancels_its_running_handler(
    sundial_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    tmp_path: Path,
):
    body = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": "long"},
        "spec": {"job": {"handler": {"name": "tests.until_cancelled"}}},
    }
    # A short lease: the runner heartbeats (and so hears of the cancel) every 2 s.
    with RunnerProcess(operator_dsn, tmp_path, extra_args=["--lease-seconds", "6"]) as runner:
        apply(kubectl, namespace, json.dumps(body))

        def started() -> Any:
            sundial_operator.assert_alive()
            runner.assert_alive()
            return runner.ran()

        [(run_id, attempt)] = wait_until(started, within=60, what="the handler to start")
        assert attempt == 1
        assert run_row(operator_dsn, run_id)[0] == "running"

        deleted_at = time.monotonic()
        delete_job_run(kubectl, namespace, "long", "background")

        def ended() -> Any:
            runner.assert_alive()
            row = run_row(operator_dsn, run_id)
            return row if row[0] != "running" else None

        state, attempt, failure_reason, last_error = wait_until(
            ended, within=60, what=f"run {run_id} to end"
        )
        # The handler waits 120 s unless it is cancelled: it heard of it at a heartbeat.
        assert time.monotonic() - deleted_at < 30
        assert (state, attempt, failure_reason) == ("cancelled", 1, "cancelled")
        assert last_error is not None and DELETED in last_error, last_error
        assert runner.ran() == [(run_id, 1)]
    wait_until(
        lambda: job_run_gone(kubectl, namespace, "long"), within=30, what="the JobRun long gone"
    )


@pytest.mark.usefixtures("kwok_nodes")
def test_deleting_a_finished_job_run_leaves_its_run_and_the_object_goes_at_once(
    pod_operator: OperatorProcess, kubectl: Any, namespace: str, operator_dsn: str
):
    apply(kubectl, namespace, pod_job_run("brief", "succeed"))

    def succeeded() -> Any:
        pod_operator.assert_alive()
        status = get_json(kubectl, "-n", namespace, "jr", "brief").get("status") or {}
        return status if status.get("phase") == "Succeeded" else None

    run_id = int(wait_until(succeeded, within=60, what="the JobRun brief to succeed")["runId"])
    with psycopg.connect(operator_dsn) as conn:
        before = conn.execute("SELECT * FROM job_runs WHERE id = %s", (run_id,)).fetchone()
    assert before is not None

    started = time.monotonic()
    delete_job_run(kubectl, namespace, "brief", "background")
    wait_until(
        lambda: job_run_gone(kubectl, namespace, "brief"),
        within=10,
        what="the finished JobRun brief to be gone",
        every=0.1,
    )
    print(f"the finished JobRun was gone {time.monotonic() - started:.2f}s after the delete")
    with psycopg.connect(operator_dsn) as conn:
        after = conn.execute("SELECT * FROM job_runs WHERE id = %s", (run_id,)).fetchone()
    assert after == before


@pytest.mark.usefixtures("kwok_nodes")
@pytest.mark.parametrize("propagation", ["background", "foreground"])
def test_a_job_run_deleted_while_the_operator_is_down_is_cancelled_when_it_is_back(
    pod_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    propagation: str,
):
    apply(kubectl, namespace, pod_job_run("orphan", "run-forever", retry={"maxRetries": 3}))
    run_id = running_pod_run(pod_operator, kubectl, namespace, "orphan")

    assert pod_operator.stop() == 0
    delete_job_run(kubectl, namespace, "orphan", propagation)
    time.sleep(3)  # the garbage collector had its chance; nothing of ours is running
    assert run_row(operator_dsn, run_id)[0] == "running"

    pod_operator.start()
    assert_cancelled_without_another_pod(pod_operator, kubectl, namespace, operator_dsn, run_id)
    wait_until(
        lambda: job_run_gone(kubectl, namespace, "orphan"),
        within=30,
        what="the JobRun orphan to be gone",
    )
