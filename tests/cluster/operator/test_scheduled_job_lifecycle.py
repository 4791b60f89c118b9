"""A ScheduledJob becomes a schedule in PostgreSQL; its runs show up as JobRuns and succeed."""

from __future__ import annotations

import json
from typing import Any

from operator_testing import OperatorProcess, StoreWorker, get_json, wait_until


def scheduled_job(name: str, **spec: Any) -> str:
    body = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {"schedule": "*/1 * * * *", "handler": {"name": "tests.ok"}, **spec},
    }
    return json.dumps(body)


def condition(body: dict[str, Any], condition_type: str) -> dict[str, Any] | None:
    for found in (body.get("status") or {}).get("conditions") or ():
        if found["type"] == condition_type:
            return dict(found)
    return None


def test_scheduled_job_becomes_ready_and_run_now_runs(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str
):
    kubectl("apply", "-n", namespace, "-f", "-", stdin=scheduled_job("hello"))

    def ready() -> Any:
        sundial_operator.assert_alive()
        body = get_json(kubectl, "-n", namespace, "sj", "hello")
        found = condition(body, "Ready")
        return body if found and found["status"] == "True" else None

    body = wait_until(ready, timeout=30, what="Ready=True")
    assert body["status"]["nextScheduleTime"]
    assert body["status"]["observedGeneration"] == body["metadata"]["generation"]
    assert "sundial.dev/finalizer" in body["metadata"]["finalizers"]
