"""``helm install`` of the chart on the real node: the operator, a runner and the bundled
PostgreSQL run as Pods from the images built here (``localdev.install``), a ScheduledJob for
the runner and a pod-mode JobRun run to Succeeded, and ``helm uninstall`` leaves nothing of
the release but the CRDs it was asked to keep."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sundial.localdev import cluster
from sundial.localdev import install as installs
from sundial.localdev import real_node as real_nodes

pytestmark = pytest.mark.timeout(600)


def _get(kubectl: Any, *args: str) -> Any:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def _phases(kubectl: Any, namespace: str) -> dict[str, str]:
    runs = _get(kubectl, "-n", namespace, "jobruns")["items"]
    return {r["metadata"]["name"]: (r.get("status") or {}).get("phase", "") for r in runs}


def test_the_chart_runs_sundial_as_pods_on_the_real_node_and_uninstall_leaves_nothing(
    local_cluster: cluster.LocalCluster,
    real_node: real_nodes.RealNode,
    real_node_images_env: Path,
    kubectl: Any,
    namespace: str,
) -> None:
    if local_cluster.state_dir is None:
        pytest.skip("installs onto the session's own real node (not SUNDIAL_TEST_KUBECONFIG)")
    node = real_nodes.start(local_cluster, real_node_images_env, images=installs.IMAGES)
    release = f"sd-{uuid.uuid4().hex[:6]}"
    installation = installs.install(
        local_cluster, node, release=release, namespace=f"{release}-system",
        job_namespaces=[namespace],
    )  # fmt: skip
    print(f"chart installed to Ready on the real node in {installation.ready_seconds:.1f}s")
    try:
        pods = _get(kubectl, "-n", installation.namespace, "pods")["items"]
        components = sorted(p["metadata"]["labels"]["app.kubernetes.io/component"] for p in pods)
        assert components == ["history-api", "operator", "postgresql", "runner"]
        for pod in pods:
            assert pod["spec"]["nodeName"] == node.name
            assert pod["status"]["phase"] == "Running"
            image = pod["spec"]["containers"][0]["image"]
            assert image in node.images.values(), image  # the images built here

        scheduled = {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": "hello", "annotations": {"sundial.dev/run-now": "1"}},
            "spec": {
                "schedule": "0 0 1 1 *",
                "handler": {"name": "examples.hello", "args": {"name": "chart"}},
            },
        }
        as_pod = {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": "hello-as-pod"},
            "spec": {
                "job": {"handler": {"name": "examples.hello", "executionModel": "pod"}},
                "args": {"name": "pod"},
            },
        }
        for manifest in (scheduled, as_pod):
            kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(manifest))

        deadline = time.monotonic() + 180
        phases: dict[str, str] = {}
        while time.monotonic() < deadline:
            phases = _phases(kubectl, namespace)
            done = [n for n, p in phases.items() if p in ("Succeeded", "Failed")]
            if len(done) >= 2 and "hello-as-pod" in done:
                break
            time.sleep(1)
        assert phases.get("hello-as-pod") == "Succeeded", phases
        mirrored = [n for n in phases if n != "hello-as-pod"]
        assert mirrored and all(phases[n] == "Succeeded" for n in mirrored), phases
        listed = kubectl("get", "jobruns", "-n", namespace).stdout
        assert "Succeeded" in listed, listed

        [job_pod] = _get(kubectl, "-n", namespace, "pods")["items"]
        assert job_pod["spec"]["nodeName"] == node.name  # the chart's jobPods placement
        assert job_pod["spec"]["containers"][0]["image"] == node.images["EXAMPLES"]
        logs = kubectl("logs", "-n", namespace, job_pod["metadata"]["name"]).stdout
        assert "Hello, pod" in logs, logs
    finally:
        # While the operator runs: it removes its finalizers from what is deleted.
        kubectl("delete", "scheduledjobs,jobruns", "--all", "-n", namespace, "--timeout=120s",
                check=False)  # fmt: skip
        remaining = installs.uninstall(installation)
    assert remaining == []
    for crd in installs.CRDS:
        assert _get(kubectl, "crd", crd)["metadata"]["name"] == crd  # kept (crds.keep)
