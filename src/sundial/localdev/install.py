"""Sundial installed by its Helm chart on the local cluster's real node, driven from Python.

The operator, the history API, a runner and the chart's bundled PostgreSQL run as Pods from
the images built here (``hack/images/build``: ``operator``, ``examples`` (the runner image
with the example handlers) and ``postgres``, imported into the node's containerd,
``imagePullPolicy: Never``), and job Pods follow them there through the chart's ``jobPods``
placement. Used by the real-node tests, ``e2e/`` and ``make demo``; never in production.

Why the values look as they do: the real node has no kube-proxy and its Pods no route off
their bridge, and the apiserver listens on 127.0.0.1 (docs/adr/0017). So the components
run in the node's network namespace (``hostNetwork``) on ports picked free on this machine:
PostgreSQL listens on 127.0.0.1 only, with a password made for the installation; the operator
reaches the apiserver as ``KUBERNETES_SERVICE_HOST=127.0.0.1`` (in its serving certificate)
with its own ServiceAccount token, so RBAC is the chart's. Job Pods stay on the Pod network.

Guarantees: :func:`install` returns once the operator and runner Deployments and the
PostgreSQL StatefulSet are rolled out (or raises naming what is not ready, with its Pods'
state); :func:`uninstall` waits until the release's objects and Pods are gone, and says which
remain if any do.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from sundial.localdev import cluster, crds
from sundial.localdev import real_node as real_nodes

__all__ = [
    "IMAGES",
    "InstallError",
    "Installation",
    "chart_dir",
    "install",
    "leftovers",
    "real_node_values",
    "uninstall",
    "upgrade",
]

#: The images an installation on the real node runs (the env file's names).
IMAGES = ("OPERATOR", "EXAMPLES", "POSTGRES")
CRDS = crds.SUNDIAL_CRDS
#: Kinds a release creates; what :func:`leftovers` looks for after an uninstall.
_RELEASE_KINDS = (
    "deployments,statefulsets,pods,services,secrets,serviceaccounts,roles,rolebindings,"
    "networkpolicies,configmaps,jobs"
)
_CLUSTER_KINDS = "clusterroles,clusterrolebindings"


class InstallError(cluster.ClusterError):
    """The chart could not be installed, become ready, or be removed."""


@dataclasses.dataclass(frozen=True)
class Installation:
    """A release of the chart: where it is, how to reach it, and the values it was given."""

    release: str
    namespace: str
    kubeconfig: Path
    helm_path: Path
    kubectl_path: Path
    values: Mapping[str, Any]
    #: Seconds from ``helm install`` to every component rolled out.
    ready_seconds: float = 0.0

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        command = [str(self.kubectl_path), "--kubeconfig", str(self.kubeconfig), *args]
        return _run(command, check, stdin=stdin)

    def helm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _helm(self.helm_path, self.kubeconfig, *args, check=check)


def chart_dir() -> Path:
    """``charts/sundial`` of the source checkout (beside ``hack/``)."""
    return cluster.find_hack_dir().parents[1] / "charts" / "sundial"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the kernel's pick; another process may take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _split_ref(reference: str) -> dict[str, str]:
    repository, _, tag = reference.rpartition(":")
    if not repository or "/" in tag:
        raise InstallError(f"image reference {reference!r} has no tag")
    return {"repository": repository, "tag": tag, "pullPolicy": "Never"}


def real_node_values(
    node: real_nodes.RealNode,
    kubeconfig: Path,
    *,
    job_namespaces: Sequence[str],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Chart values that put Sundial on ``node`` (see the module docstring for why)."""
    missing = [name for name in IMAGES if name not in node.images]
    if missing:
        raise InstallError(
            f"the real node lacks the image(s) {', '.join(missing)}: build them with "
            "hack/images/build operator examples postgres, and import them "
            f"(real_node.start(..., images={IMAGES!r}))"
        )
    server = urlsplit(_server_of(kubeconfig))
    if server.hostname not in ("127.0.0.1", "localhost") or server.port is None:
        raise InstallError(
            f"the apiserver is at {server.geturl()}; a hostNetwork operator on the real node "
            "reaches only one on 127.0.0.1 with an explicit port"
        )
    placement = real_nodes.placement()
    on_node = {**placement, "hostNetwork": True}
    to_apiserver = [
        {"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
        {"name": "KUBERNETES_SERVICE_PORT", "value": str(server.port)},
    ]
    values: dict[str, Any] = {
        "watchNamespaces": list(job_namespaces),
        "crds": {"keep": True},
        "postgresql": {
            "port": free_port(),
            "bundled": {
                "enabled": True,
                "image": _split_ref(node.images["POSTGRES"]),
                "password": secrets.token_hex(16),
                "host": "127.0.0.1",
                "listenAddress": "127.0.0.1",
                **on_node,
            },
        },
        "operator": {
            "image": _split_ref(node.images["OPERATOR"]),
            "healthPort": free_port(),
            "metricsTls": {"port": free_port()},
            "extraEnv": to_apiserver,
            "mirrorSeconds": 1,
            **on_node,
        },
        # On the node's network too: the API server's aggregation layer dials the node's
        # address at this port. One replica: the node is one.
        "historyApi": {
            "port": free_port(),
            "replicas": 1,
            "extraEnv": to_apiserver,
            **on_node,
        },
        "runner": {
            "image": _split_ref(node.images["EXAMPLES"]),
            "replicas": 1,
            "metricsPort": free_port(),
            **on_node,
        },
        "jobPods": {"namespaces": list(job_namespaces), **placement},
    }
    # `helm test` reaches the operator where it listens: no Service routes on this node.
    values["helmTest"] = {
        "operatorUrl": f"http://127.0.0.1:{values['operator']['healthPort']}/healthz"
    }
    return _merged(values, extra or {})


#: Values of this checkout's chart that an earlier chart (the previous release's, which the
#: e2e session installs first) does not have, and its schema would refuse: (component, key).
_NEWER_VALUES = (("operator", "metricsTls"),)


def _for_chart(values: dict[str, Any], chart: Path) -> dict[str, Any]:
    """``values`` without the keys ``chart``'s own values.yaml does not know (``_NEWER_VALUES``)."""
    defaults = yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8"))
    kept = dict(values)
    for component, key in _NEWER_VALUES:
        if key in kept.get(component, {}) and key not in defaults.get(component, {}):
            kept[component] = {k: v for k, v in kept[component].items() if k != key}
    return kept


def _merged(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


def install(
    local: cluster.LocalCluster,
    node: real_nodes.RealNode,
    *,
    release: str = "sundial",
    namespace: str = "sundial-system",
    job_namespaces: Sequence[str] = ("default",),
    extra_values: Mapping[str, Any] | None = None,
    timeout_seconds: float = 240,
    chart: Path | None = None,
) -> Installation:
    """``helm install`` the chart (``chart``, else this checkout's) for ``node`` and wait until
    every component is rolled out."""
    helm_path = local.kubectl_path.parent / "helm"
    values = _for_chart(
        real_node_values(node, local.kubeconfig, job_namespaces=job_namespaces, extra=extra_values),
        chart or chart_dir(),
    )
    for job_namespace in job_namespaces:
        if local.kubectl("get", "namespace", job_namespace, check=False).returncode != 0:
            local.kubectl("create", "namespace", job_namespace)
    _adopt_crds(local, release, namespace)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump(values, handle)
    started = time.monotonic()
    try:
        _helm(
            helm_path, local.kubeconfig,
            "install", release, str(chart or chart_dir()), "--namespace", namespace,
            "--create-namespace",
            "--values", handle.name,
        )  # fmt: skip
    finally:
        os.unlink(handle.name)
    installation = Installation(
        release=release,
        namespace=namespace,
        kubeconfig=local.kubeconfig,
        helm_path=helm_path,
        kubectl_path=local.kubectl_path,
        values=values,
    )
    _rolled_out(installation, started + timeout_seconds, timeout_seconds)
    return dataclasses.replace(installation, ready_seconds=time.monotonic() - started)


def upgrade(
    installation: Installation,
    *,
    images: Mapping[str, str],
    chart: Path | None = None,
    timeout_seconds: float = 300,
) -> Installation:
    """``helm upgrade`` ``installation`` to ``chart`` (else this checkout's) with the same
    values but the images ``images`` (``{"OPERATOR": ref, "EXAMPLES": ref}``: the operator's
    and the runner's), as a platform team upgrades a release; returns once every component
    is rolled out again. The ports, the database and its password stay as they were.

    On the real node the runner and the history API listen on ports of the node
    (``hostNetwork``), so a new Pod fits beside its old one nowhere: they are replaced one at
    a time (the operator is replaced with ``Recreate`` anyway)."""
    one_at_a_time = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    values = _merged(
        dict(installation.values),
        {
            "runner": {"updateStrategy": one_at_a_time},
            "historyApi": {"updateStrategy": one_at_a_time},
        },
    )
    if "metricsTls" not in values.get("operator", {}):
        # Made by a release whose chart had no HTTPS metrics port: one of the node's, free.
        values = _merged(values, {"operator": {"metricsTls": {"port": free_port()}}})
    values = _for_chart(values, chart or chart_dir())
    values = _merged(
        values,
        {
            component: {"image": _split_ref(images[name])}
            for component, name in (("operator", "OPERATOR"), ("runner", "EXAMPLES"))
            if name in images
        },
    )
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump(values, handle)
    started = time.monotonic()
    try:
        installation.helm(
            "upgrade", installation.release, str(chart or chart_dir()),
            "--namespace", installation.namespace, "--values", handle.name,
            "--wait", "--timeout", f"{timeout_seconds:.0f}s",
        )  # fmt: skip
    finally:
        os.unlink(handle.name)
    upgraded = dataclasses.replace(installation, values=values)
    _rolled_out(upgraded, started + timeout_seconds, timeout_seconds)
    return dataclasses.replace(upgraded, ready_seconds=time.monotonic() - started)


def _rolled_out(installation: Installation, deadline: float, timeout_seconds: float) -> None:
    release, namespace = installation.release, installation.namespace
    # The chart's fullname: the release's name when it contains the chart's (as Helm's
    # convention has it), else <release>-sundial.
    fullname = release if "sundial" in release else f"{release}-sundial"
    for kind, name in (
        ("statefulset", f"{fullname}-postgresql"),
        ("deployment", f"{fullname}-operator"),
        ("deployment", f"{fullname}-history-api"),
        ("deployment", f"{fullname}-runner"),
    ):
        left = max(1, int(deadline - time.monotonic()))
        done = installation.kubectl(
            "rollout", "status", "-n", namespace, f"{kind}/{name}", f"--timeout={left}s",
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise InstallError(
                f"{kind}/{name} is not ready after {timeout_seconds:.0f}s: "
                f"{done.stderr.strip() or done.stdout.strip()}\n{_pods_state(installation)}"
            )


def _adopt_crds(local: cluster.LocalCluster, release: str, namespace: str) -> None:
    """CRDs already there (applied from crds/ by hand, or kept by an earlier release) get the
    metadata with which Helm adopts them into this release, instead of refusing to install."""
    for crd in CRDS:
        if local.kubectl("get", "crd", crd, check=False).returncode != 0:
            continue
        local.kubectl("label", "--overwrite", "crd", crd, "app.kubernetes.io/managed-by=Helm")
        local.kubectl(
            "annotate", "--overwrite", "crd", crd,
            f"meta.helm.sh/release-name={release}", f"meta.helm.sh/release-namespace={namespace}",
        )  # fmt: skip


def uninstall(
    installation: Installation, *, timeout_seconds: float = 120, delete_namespace: bool = True
) -> list[str]:
    """``helm uninstall --wait``, then the release's namespace (which :func:`install` created;
    Helm never deletes one), then wait for the release's objects to go; returns what remains
    of the release (empty: nothing; the CRDs, kept by ``crds.keep``, are not counted)."""
    installation.helm(
        "uninstall", installation.release, "--namespace", installation.namespace, "--wait",
        "--timeout", f"{int(timeout_seconds)}s",
    )  # fmt: skip
    if delete_namespace:
        installation.kubectl(
            "delete", "namespace", installation.namespace, "--ignore-not-found",
            f"--timeout={int(timeout_seconds)}s",
        )  # fmt: skip
    deadline = time.monotonic() + timeout_seconds
    while True:
        remaining = leftovers(installation)
        if not remaining or time.monotonic() > deadline:
            return remaining
        time.sleep(1)


def leftovers(installation: Installation) -> list[str]:
    """Objects labelled with the release, in every namespace and cluster-wide (CRDs aside)."""
    selector = f"app.kubernetes.io/instance={installation.release}"
    found: list[str] = []
    for kinds, scope in ((_RELEASE_KINDS, ["--all-namespaces"]), (_CLUSTER_KINDS, [])):
        listed = installation.kubectl("get", kinds, *scope, "-l", selector, "-o", "json")
        for item in json.loads(listed.stdout).get("items", []):
            metadata = item["metadata"]
            where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
            found.append(f"{item['kind']} {where}{metadata['name']}")
    return found


def _pods_state(installation: Installation) -> str:
    listed = installation.kubectl(
        "get", "pods", "-n", installation.namespace, "-o", "wide", check=False
    )
    events = installation.kubectl(
        "get", "events", "-n", installation.namespace, "--sort-by=.lastTimestamp", check=False
    )
    return f"{listed.stdout}\n{events.stdout[-3000:]}{_restarted_logs(installation)}"


def _restarted_logs(installation: Installation) -> str:
    """The last lines each restarted container wrote before it ended: why it crash-loops."""
    found = installation.kubectl(
        "get", "pods", "-n", installation.namespace, "-o", "json", check=False
    )
    if found.returncode != 0:
        return ""
    lines = []
    for pod in json.loads(found.stdout).get("items") or []:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            if not status.get("restartCount"):
                continue
            name = f"{pod['metadata']['name']}/{status['name']}"
            log = installation.kubectl(
                "logs", "-n", installation.namespace, pod["metadata"]["name"],
                "-c", status["name"], "--previous", "--tail=15", check=False,
            )  # fmt: skip
            lines.append(f"\n--- {name}, before its last restart:\n{log.stdout or log.stderr}")
    return "".join(lines)


def _server_of(kubeconfig: Path) -> str:
    config = yaml.safe_load(kubeconfig.read_text())
    clusters = config.get("clusters") or []
    if not clusters:
        raise InstallError(f"{kubeconfig} names no cluster")
    return str(clusters[0]["cluster"]["server"])


def _helm(
    helm_path: Path, kubeconfig: Path, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    home = Path(tempfile.gettempdir()) / f"sundial-helm-{os.getuid()}"
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    command = [str(helm_path), "--kubeconfig", str(kubeconfig), *args]
    return _run(command, check, environment)


def _run(
    command: list[str],
    check: bool,
    environment: dict[str, str] | None = None,
    *,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=600,
    )
    if check and result.returncode != 0:
        raise InstallError(
            f"{Path(command[0]).name} {' '.join(command[3:])} exited {result.returncode}: "
            f"{result.stderr.strip()}"
        )
    return result
