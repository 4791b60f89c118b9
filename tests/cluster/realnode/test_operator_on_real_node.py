"""The operator (``python -m sundial operator``, a subprocess) running pod-mode jobs on the real
node: ScheduledJobs and JobRuns whose templates select it, asserted through the JobRun status,
Events and PostgreSQL, as tests/cluster/operator does on kwok."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from sundial.localdev import real_node as real_nodes
from support.operator import (
    OperatorProcess,
    apply,
    attempts_of,
    finished_run,
    get_json,
    warnings_once,
)
from support.polling import wait_until
from support.real_node import template

pytestmark = pytest.mark.timeout(180)


def scheduled_job(name: str, pod_template: dict[str, Any], **spec: Any) -> str:
    """A ScheduledJob that fires once a year and now (``sundial.dev/run-now``)."""
    return json.dumps(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": name, "annotations": {"sundial.dev/run-now": "1"}},
            "spec": {"schedule": "0 0 1 1 *", "template": pod_template, **spec},
        }
    )


def test_a_scheduled_job_runs_on_the_real_node_and_its_jobrun_succeeds(
    pod_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    real_node: real_nodes.RealNode,
):
    apply(
        kubectl,
        namespace,
        scheduled_job(
            "report", template(real_node, ["sh", "-c", "echo report for $SUNDIAL_RUN_ID"])
        ),
    )

    run = finished_run(pod_operator, kubectl, namespace, "report", "Succeeded", timeout=120)
    status = run["status"]
    assert (status["exitCode"], status["attempt"]) == (0, 1)
    with psycopg.connect(operator_dsn) as conn:
        row = conn.execute(
            "SELECT state, pod_name, pod_reason FROM job_runs WHERE id = %s",
            (int(status["runId"]),),
        ).fetchone()
    assert row == ("completed", status["podName"], "Completed")
    events = get_json(kubectl, "-n", namespace, "events", "--field-selector",
                      f"involvedObject.name={status['podName']}")["items"]  # fmt: skip
    # The kubelet's own Events: a real container ran there (kwok posts none of these).
    scheduled = [e for e in events if e["reason"] == "Scheduled"]
    assert scheduled and real_node.name in scheduled[0]["message"]
    assert {"Created", "Started"} <= {e["reason"] for e in events}


def test_a_jobrun_oom_killed_on_the_real_node_succeeds_with_more_memory(
    pod_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    real_node: real_nodes.RealNode,
):
    hungry = template(
        real_node,
        ["dd", "if=/dev/zero", "of=/dev/null", "bs=48M", "count=1"],
        resources={"limits": {"memory": "32Mi"}},
    )
    job = {
        "template": hungry,
        "retry": {"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
        "oom": {"maxRetries": 1, "memoryIncreasePercent": 100},
    }
    manifest = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": "hungry"},
        "spec": {"job": job},
    }
    apply(kubectl, namespace, json.dumps(manifest))

    def succeeded() -> Any:
        pod_operator.assert_alive()
        found = get_json(kubectl, "-n", namespace, "jr", "hungry")
        status = found.get("status") or {}
        return found if status.get("phase") == "Succeeded" and "exitCode" in status else None

    run = wait_until(succeeded, within=120, what="JobRun hungry Succeeded")
    status = run["status"]
    assert (status["attempt"], status["exitCode"]) == (2, 0)
    # The first attempt was really OOMKilled by the kernel, and said so once.
    warnings_once(kubectl, namespace, "hungry", "OOMKilled", attempts_of(status["runId"], 1))
