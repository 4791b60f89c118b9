"""A namespace at its active-run quota: a new JobRun waits (Reconciling, QuotaExceeded, one
Warning Event) and is submitted on its own once a run of the namespace has ended."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.operator import (
    OperatorProcess,
    apply,
    condition,
    events_for,
    get_json,
    pod_job_run,
    running,
)
from support.polling import wait_until

pytestmark = [pytest.mark.usefixtures("sundial_crds_applied"), pytest.mark.timeout(120)]


def _delayed(name: str) -> str:
    body = json.loads(pod_job_run(name, "succeed"))
    body["spec"]["delaySeconds"] = 3600  # active (scheduled) until deleted
    return json.dumps(body)


def test_a_jobrun_past_the_quota_waits_and_is_submitted_once_room_is_made(
    operator_dsn: str, kubeconfig: Path, namespace: str, tmp_path: Path, kubectl: Any
) -> None:
    quota = ["--namespace-active-runs", f"{namespace}=1", "--pod-instance", namespace]
    with running(OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path, extra_args=quota)):
        apply(kubectl, namespace, _delayed("first"))
        wait_until(
            lambda: (get_json(kubectl, "-n", namespace, "jr", "first").get("status") or {}).get(
                "runId"
            ),
            within=60,
            what="the first JobRun to be submitted",
        )
        apply(kubectl, namespace, pod_job_run("second", "succeed"))

        def waiting() -> dict[str, Any] | None:
            body = get_json(kubectl, "-n", namespace, "jr", "second")
            found = condition(body, "Reconciling") or {}
            return body if found.get("reason") == "QuotaExceeded" else None

        body = wait_until(waiting, within=30, what="the second JobRun to wait for the quota")
        assert (body.get("status") or {}).get("runId") is None
        reconciling = condition(body, "Reconciling") or {}
        assert reconciling["status"] == "True"
        assert (
            f"namespace {namespace} holds as many active runs as its quota allows (1)"
            in (reconciling["message"])
        )
        assert (condition(body, "Stalled") or {}).get("status") != "True"
        # Events are posted by a queue of their own, so the Event may trail the condition.
        warnings = wait_until(
            lambda: _quota_warnings(kubectl, namespace, "second"),
            within=15,
            what="the QuotaExceeded Warning Event",
        )
        assert len(warnings) == 1 and warnings[0]["type"] == "Warning"

        # Deleting the first JobRun cancels its run; the maintainer counts again (every 5 s)
        # and a mirror pass submits the second.
        kubectl("delete", "-n", namespace, "jr", "first", "--wait=false")
        wait_until(
            lambda: (get_json(kubectl, "-n", namespace, "jr", "second").get("status") or {}).get(
                "runId"
            ),
            within=45,
            what="the second JobRun to be submitted once the first ended",
        )
        warnings = _quota_warnings(kubectl, namespace, "second")
        # A repeat would be aggregated into the same Event's count, so count the occurrences.
        occurrences = sum(e.get("count") or 1 for e in warnings)
        assert occurrences == 1, "one Warning Event per wait, not one per mirror pass"


def _quota_warnings(kubectl: Any, namespace: str, name: str) -> list[dict[str, Any]]:
    return [e for e in events_for(kubectl, namespace, name) if e["reason"] == "QuotaExceeded"]
