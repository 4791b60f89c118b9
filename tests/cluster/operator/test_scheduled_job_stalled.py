"""A quarantined ScheduledJob is Stalled, so kstatus readers (``kubectl wait``, Flux) see it fail.

(A quarantine by ``quarantineAfter`` is decided by the trigger at the job's next fire, so it is
covered by tests/unit/operator/test_status.py and tests/cluster/test_kstatus.py rather than
by waiting for a minute here.)

Its Pods are kwok's (hack/cluster/kwok/stages.yaml): they exit as the template's annotations
say; the run starts at once through ``sundial.dev/run-now``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from sundial.localdev import cluster
from support.operator import OperatorProcess, apply, condition, get_json, pod_job

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(200)]


def _wait_stalled(kubeconfig: Path, namespace: str, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(cluster.bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig), "-n", namespace,
            "wait", "--for=condition=Stalled", "--timeout=120s", f"scheduledjob/{name}",
        ],
        capture_output=True, text=True, check=False, timeout=150,
    )  # fmt: skip


def test_a_failure_policy_quarantine_makes_the_scheduled_job_stalled(
    pod_operator: OperatorProcess, kubectl: Any, kubeconfig: Path, namespace: str
):
    rules = {"rules": [{"action": "Quarantine", "onExitCodes": {"operator": "In", "values": [3]}}]}
    apply(
        kubectl,
        namespace,
        pod_job(
            "flaky",
            "fail",
            pod_annotations={"sundial.dev/kwok-exit-code": "3"},
            failurePolicy=rules,
        ),
    )
    waited = _wait_stalled(kubeconfig, namespace, "flaky")
    assert waited.returncode == 0, waited.stderr
    body = get_json(kubectl, "-n", namespace, "sj", "flaky")
    for condition_type in ("Stalled", "Quarantined", "Suspended"):
        found = condition(body, condition_type) or {}
        assert found.get("status") == "True", condition_type
        assert found.get("reason") == "QuarantineRule", condition_type
    assert (condition(body, "Ready") or {}).get("status") == "False"
    assert "exit code 3" in (condition(body, "Stalled") or {}).get("message", "")
