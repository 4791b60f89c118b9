"""``kubectl wait`` on JobRuns, as on Jobs: Complete when the run succeeds, Failed when it fails.

kubectl reads the Job-style conditions the operator writes (``status.job_run_conditions``);
a kwok Pod plays the job (hack/cluster/kwok/stages.yaml), so the run really ends.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sundial.localdev import cluster
from support.operator import OperatorProcess, apply, condition, get_json, pod_job_run

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(150)]


def _wait(
    kubeconfig: Path, namespace: str, name: str, wanted: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(cluster.bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig),
            "-n", namespace, "wait", f"--for=condition={wanted}", "--timeout=90s", f"jobrun/{name}",
        ],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def test_kubectl_wait_for_complete_returns_when_the_run_succeeds(
    pod_operator: OperatorProcess, kubectl: Any, kubeconfig: Path, namespace: str
):
    apply(kubectl, namespace, pod_job_run("report", "succeed"))
    waited = _wait(kubeconfig, namespace, "report", "Complete")
    assert waited.returncode == 0, waited.stderr
    assert "condition met" in waited.stdout
    body = get_json(kubectl, "-n", namespace, "jr", "report")
    assert body["status"]["phase"] == "Succeeded"
    assert (condition(body, "Failed") or {}).get("status") == "False"
    assert (condition(body, "Reconciling") or {}).get("status") == "False"
    assert (condition(body, "Stalled") or {}).get("status") == "False"


def test_kubectl_wait_for_failed_returns_when_the_run_fails_and_it_is_stalled(
    pod_operator: OperatorProcess, kubectl: Any, kubeconfig: Path, namespace: str
):
    manifest = json.loads(pod_job_run("broken", "fail", retry={"maxRetries": 0}))
    apply(kubectl, namespace, json.dumps(manifest))
    waited = _wait(kubeconfig, namespace, "broken", "Failed")
    assert waited.returncode == 0, waited.stderr
    body = get_json(kubectl, "-n", namespace, "jr", "broken")
    assert body["status"]["phase"] in {"Failed", "DeadLettered"}
    stalled = condition(body, "Stalled") or {}
    assert stalled.get("status") == "True"
    assert stalled.get("reason") == body["status"]["phase"]
    assert (condition(body, "Complete") or {}).get("status") == "False"
    generation = body["metadata"]["generation"]
    assert body["status"]["observedGeneration"] == generation
    assert all(c["observedGeneration"] == generation for c in body["status"]["conditions"])


def test_a_running_job_run_is_reconciling(
    pod_operator: OperatorProcess, kubectl: Any, kubeconfig: Path, namespace: str
):
    apply(kubectl, namespace, pod_job_run("long", "run-forever"))
    waited = _wait(kubeconfig, namespace, "long", "Reconciling")
    assert waited.returncode == 0, waited.stderr
    body = get_json(kubectl, "-n", namespace, "jr", "long")
    assert (condition(body, "Complete") or {}).get("status") == "False"
    kubectl(
        "-n", namespace, "patch", "jr", "long", "--type=merge", "-p", '{"spec":{"cancel":true}}'
    )
    waited = _wait(kubeconfig, namespace, "long", "Failed")
    assert waited.returncode == 0, (waited.stderr, get_json(kubectl, "-n", namespace, "jr", "long"))
    body = get_json(kubectl, "-n", namespace, "jr", "long")
    assert body["status"]["phase"] == "Cancelled"
    assert (condition(body, "Failed") or {}).get("reason") == "Cancelled"
