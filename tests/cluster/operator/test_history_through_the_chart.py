"""``kubectl sundial history`` through the chart's own APIService, by a user who holds only the
built-in ``view`` role in one namespace: ``helm install`` makes the APIService, its serving
certificate, the Service and the roles, and nothing here makes another Service, Endpoints,
APIService or Role.

``sundial history-api`` runs as a process on this host, with the chart's serving certificate
and under the chart's own history-api ServiceAccount (its token, so the chart's bindings are
all it has): a Pod carrying the chart's history-api labels, bound to a Node object no kubelet
serves and with this host's IP in its status, stands in for its Pod (the chart's Deployment
has 0 replicas), so the endpoints controller puts this host behind the chart's Service and the
API server's aggregation layer dials it.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from support import history_api
from support.operator import (
    OperatorProcess,
    StoreWorker,
    apply,
    get_json,
    running,
    scheduled_job_manifest,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)

REPOSITORY = Path(__file__).resolve().parents[3]
CHART = REPOSITORY / "charts" / "sundial"
PLUGIN = Path(sys.executable).parent / "kubectl-sundial"


def _host_address() -> str | None:
    """This host's address on its default route (a UDP connect sends no packet)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.254.254.254", 9))
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


def _plugin(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PLUGIN), *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, KUBECONFIG=str(config)),
        timeout=60,
        check=False,
    )


def _viewer_kubeconfig(kubeconfig: Path, kubectl: Any, namespace: str, path: Path) -> Path:
    kubectl("create", "serviceaccount", "-n", namespace, "viewer")
    return _account_kubeconfig(kubeconfig, kubectl, namespace, "viewer", path)


def _account_kubeconfig(
    kubeconfig: Path, kubectl: Any, namespace: str, account: str, path: Path
) -> Path:
    """A kubeconfig whose user is ServiceAccount ``account`` of ``namespace``."""
    token = kubectl("create", "token", "-n", namespace, account).stdout.strip()
    config = yaml.safe_load(kubeconfig.read_text())
    context = config["contexts"][0]
    context["context"]["user"] = account
    context["context"]["namespace"] = namespace
    config["users"] = [{"name": account, "user": {"token": token}}]
    config["current-context"] = context["name"]
    path.write_text(yaml.safe_dump(config))
    return path


def _stand_in(kubectl: Any, namespace: str, release: str, address: str, history_port: int) -> None:
    """A Ready Pod with the chart's history-api labels whose IP is this host's."""
    node = f"history-host-{namespace}"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    kubectl(
        "create", "-f", "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}),
    )  # fmt: skip
    # Ready now, so the node lifecycle controller leaves its Pods Ready for the test's length.
    ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": now, "reason": "Test"}
    kubectl(
        "patch", "node", node, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"conditions": [ready]}}),
    )  # fmt: skip
    labels = {
        "app.kubernetes.io/name": "sundial",
        "app.kubernetes.io/instance": release,
        "app.kubernetes.io/component": "history-api",
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "history-host", "labels": labels},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "history-api",
                    "image": "sundial-operator",
                    "ports": [{"name": "history", "containerPort": history_port}],
                }
            ],
        },
    }
    apply(kubectl, namespace, json.dumps(pod))
    status = {
        "phase": "Running",
        "podIP": address,
        "podIPs": [{"ip": address}],
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
    }
    kubectl(
        "patch", "-n", namespace, "pod", "history-host", "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def test_history_through_the_charts_api_service_with_only_the_view_role(
    helm: Callable[..., Any],
    sundial_crds_applied: None,
    operator_dsn: str,
    kubectl: Any,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    address = _host_address()
    if address is None:
        pytest.skip("no non-loopback IPv4 address: the API server cannot reach this host")
    release = f"history-{uuid.uuid4().hex[:6]}"
    values = {
        "crds": {"enabled": False},  # the session applied them
        "operator": {"replicas": 0},  # processes on this host play the operator
        "historyApi": {"replicas": 0},  # and the history API
        "runner": {"enabled": False},
        "migrations": {"enabled": False},
    }
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
    base = ("--kubeconfig", str(kubeconfig), "--namespace", namespace)
    # Deleted before anything else on the way out: an unavailable APIService stalls discovery.
    request.addfinalizer(
        lambda: kubectl("delete", "apiservice", history_api.API_SERVICE, "--ignore-not-found")
    )
    helm("install", release, str(CHART), *base, "--values", str(tmp_path / "values.yaml"))
    request.addfinalizer(lambda: helm("uninstall", release, *base, "--wait"))
    node = f"history-host-{namespace}"
    request.addfinalizer(lambda: kubectl("delete", "node", node, "--wait=false", check=False))

    # The serving certificate the chart made, for the history API process.
    secret = get_json(kubectl, "-n", namespace, "secret", f"{release}-sundial-history-api-tls")
    for key in ("tls.crt", "tls.key"):
        (tmp_path / key).write_bytes(base64.b64decode(secret["data"][key]))
    api_service = get_json(kubectl, "apiservice", history_api.API_SERVICE)
    assert api_service["spec"]["caBundle"] == secret["data"]["ca.crt"]

    # The account the history API runs as can review access and nothing of the operator's.
    who = f"--as=system:serviceaccount:{namespace}:{release}-sundial-history-api"
    for verb, resource, allowed in (
        ("create", "subjectaccessreviews.authorization.k8s.io", "yes"),
        ("create", "tokenreviews.authentication.k8s.io", "yes"),
        ("create", "pods", "no"),
        ("patch", "jobruns.sundial.dev", "no"),
        ("list", "secrets", "no"),
        ("list", "scheduledjobs.sundial.dev", "no"),
    ):
        answer = kubectl("auth", "can-i", verb, resource, "-A", who, check=False)
        assert answer.stdout.strip() == allowed, (verb, resource, answer)

    history_port = _free_port()
    account = _account_kubeconfig(
        kubeconfig, kubectl, namespace, f"{release}-sundial-history-api", tmp_path / "sa.yaml"
    )
    history = history_api.HistoryApiProcess(
        operator_dsn, account, tmp_path, history_port, tmp_path / "tls.crt", tmp_path / "tls.key"
    )
    operator = OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path)
    with running(operator), running(history):
        apply(kubectl, namespace, scheduled_job_manifest("nightly", schedule="0 0 1 1 *"))
        names = []
        with StoreWorker(operator_dsn):
            for _ in range(2):
                made = _plugin(kubeconfig, "run", "nightly", "-n", namespace, "-o", "name")
                assert made.returncode == 0, made
                names.append(made.stdout.strip().split("/")[1])
            for name in names:
                waited = _plugin(kubeconfig, "wait", name, "-n", namespace, "--timeout", "60s")
                assert waited.returncode == 0, waited
        run_ids = {
            get_json(kubectl, "-n", namespace, "jr", name)["status"]["runId"] for name in names
        }

        _stand_in(kubectl, namespace, release, address, history_port)
        with history_api.registered(kubectl, None):
            viewer = _viewer_kubeconfig(kubeconfig, kubectl, namespace, tmp_path / "viewer.yaml")
            forbidden = _plugin(viewer, "history", "nightly")
            assert forbidden.returncode == 6, forbidden
            assert "runs.history.sundial.dev" in forbidden.stderr

            # The built-in view role in this namespace, which the chart's history role joins.
            kubectl(
                "create", "rolebinding", "-n", namespace, "viewer", "--clusterrole=view",
                f"--serviceaccount={namespace}:viewer",
            )  # fmt: skip

            def listed() -> Any:
                result = _plugin(viewer, "history", "nightly", "-o", "json")
                return result.returncode == 0 and result

            allowed = wait_until(listed, within=60, what="the view role to read the history")
            items = json.loads(allowed.stdout)["items"]
            assert {item["runId"] for item in items} == run_ids
            assert {item["state"] for item in items} == {"completed"}
            # view in this namespace is not view in another one.
            assert _plugin(viewer, "history", "nightly", "-n", "default").returncode == 6
