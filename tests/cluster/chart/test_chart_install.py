"""``helm install`` into the local control plane, then ``helm uninstall``.

kwok's Nodes play the kubelet: the operator's and runners' Pods carry
``sundial.dev/kwok-outcome: run-forever`` so kwok keeps them Running and Ready, and the
migrate hook's Pod succeeds as kwok's Pods do by default, which lets Helm go on. The CRDs the
session applied from crds/ are adopted by the release, as a user who applied crds/ by hand
would adopt them, and kept on uninstall (``crds.keep``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from support.chart import CHART

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(300)]

CRDS = ("scheduledjobs.sundial.dev", "jobruns.sundial.dev")
RUN_FOREVER = {"sundial.dev/kwok-outcome": "run-forever"}


def _get(kubectl: Callable[..., Any], *args: str) -> Any:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


@pytest.fixture
def crds_adoptable(kubectl: Callable[..., Any], namespace: str) -> Iterator[str]:
    """The CRDs exist (as the session's operator tests applied them) and carry the metadata
    with which Helm adopts an existing object into release ``release`` of ``namespace``."""
    repository = CHART.parents[1]
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(repository / "crds"))
    release = f"sundial-{uuid.uuid4().hex[:6]}"
    for crd in CRDS:
        kubectl("label", "--overwrite", "crd", crd, "app.kubernetes.io/managed-by=Helm")
        kubectl(
            "annotate", "--overwrite", "crd", crd,
            f"meta.helm.sh/release-name={release}", f"meta.helm.sh/release-namespace={namespace}",
        )  # fmt: skip
    yield release


def test_helm_install_runs_migrations_then_the_components_and_uninstall_keeps_the_crds(
    helm: Callable[..., Any],
    kubectl: Callable[..., Any],
    kubeconfig: Path,
    core_api: client.CoreV1Api,
    namespace: str,
    crds_adoptable: str,
    tmp_path: Path,
) -> None:
    release = crds_adoptable
    values = {
        "operator": {"podAnnotations": RUN_FOREVER},
        "historyApi": {"podAnnotations": RUN_FOREVER},
        "runner": {"podAnnotations": RUN_FOREVER, "replicas": 2},
    }
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
    core_api.create_namespaced_secret(
        namespace,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="sundial-postgresql"),
            string_data={"dsn": "postgresql://sundial@postgresql.example:5432/sundial"},
        ),
    )
    installed = helm(
        "install", release, str(CHART), "--kubeconfig", str(kubeconfig), "--namespace", namespace,
        "--values", str(tmp_path / "values.yaml"), "--wait", "--timeout", "180s",
    )  # fmt: skip
    assert "kubectl wait --for=condition=Complete" in installed.stdout  # NOTES.txt
    status = json.loads(
        helm(
            "status", release, "--kubeconfig", str(kubeconfig), "-n", namespace, "-o", "json"
        ).stdout
    )
    assert status["info"]["status"] == "deployed"
    [hook] = [h for h in status["hooks"] if h["kind"] == "Job"]
    assert hook["last_run"]["phase"] == "Succeeded"
    # hook-succeeded: the migrate Job is gone once it succeeded, and its ServiceAccount too
    # (Helm never deletes a hook on uninstall).
    jobs = _get(kubectl, "-n", namespace, "jobs")["items"]
    assert jobs == []
    accounts = _get(kubectl, "-n", namespace, "serviceaccounts")["items"]
    assert f"{release}-migrate" not in {a["metadata"]["name"] for a in accounts}

    pods = _get(kubectl, "-n", namespace, "pods", "-l", f"app.kubernetes.io/instance={release}")
    by_component: dict[str, list[Any]] = {}
    for pod in pods["items"]:
        component = pod["metadata"]["labels"]["app.kubernetes.io/component"]
        by_component.setdefault(component, []).append(pod)
    assert sorted(by_component) == ["history-api", "operator", "runner"]
    assert len(by_component["runner"]) == 2
    assert len(by_component["history-api"]) == 2
    for pod in pods["items"]:
        assert pod["status"]["phase"] == "Running"
        ready = [c for c in pod["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    [operator] = by_component["operator"]
    assert operator["spec"]["serviceAccountName"] == f"{release}-operator"
    for pod in by_component["history-api"]:
        assert pod["spec"]["serviceAccountName"] == f"{release}-history-api"
    for crd in CRDS:
        body = _get(kubectl, "crd", crd)
        assert body["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert body["metadata"]["annotations"]["meta.helm.sh/release-name"] == release

    helm("uninstall", release, "--kubeconfig", str(kubeconfig), "-n", namespace, "--wait")
    deployments = _get(kubectl, "-n", namespace, "deployments")["items"]
    assert deployments == []
    for kind in ("serviceaccounts", "services"):
        left = _get(kubectl, "-n", namespace, kind, "-l", f"app.kubernetes.io/instance={release}")
        assert left["items"] == [], kind
    roles = _get(kubectl, "clusterroles", "-l", f"app.kubernetes.io/instance={release}")
    assert roles["items"] == []
    for crd in CRDS:
        assert _get(kubectl, "crd", crd)["metadata"]["name"] == crd  # kept
