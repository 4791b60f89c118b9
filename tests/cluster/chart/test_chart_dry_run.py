"""Every object the chart renders is accepted by the apiserver (server-side dry run).

The apiserver checks each object against its real schema (built-in kinds, the Sundial CRDs)
and runs admission, without persisting anything. prometheus-operator is not installed here:
its two kinds get CRDs that accept any spec, so only their apiVersion, kind and metadata are
checked.
"""

from __future__ import annotations

import json
import pathlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client

from sundial.localdev import crds as localdev_crds
from support import crds as support_crds
from support.chart import EVERYTHING

PROMETHEUS_KINDS = {"PodMonitor": "podmonitors", "PrometheusRule": "prometheusrules"}


@pytest.fixture(scope="module")
def prometheus_crds(kubectl: Callable[..., Any]) -> Iterator[None]:
    crds = [
        support_crds.open_definition("monitoring.coreos.com", plural, kind)
        for kind, plural in PROMETHEUS_KINDS.items()
    ]
    listing = json.dumps({"apiVersion": "v1", "kind": "List", "items": crds})
    kubectl("apply", "-f", "-", stdin=listing)
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    localdev_crds.wait_established(kubectl, names)
    try:
        yield
    finally:
        kubectl("delete", "--wait=false", *names)


@pytest.fixture
def watched(core_api: client.CoreV1Api) -> Iterator[list[str]]:
    names = [f"t-watch-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for name in names:
        core_api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        yield names
    finally:
        for name in names:
            core_api.delete_namespace(name)


def _dry_run(kubectl: Callable[..., Any], objects: list[Any], path: pathlib.Path) -> str:
    path.write_text(yaml.safe_dump_all(objects))
    # Server-side: the CRDs are larger than client-side apply's last-applied annotation allows.
    result = kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=chart-dry-run",
        "--dry-run=server", "-f", str(path), check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


def test_the_default_installation_is_accepted_by_the_apiserver(
    render: Callable[..., Any], kubectl: Callable[..., Any], namespace: str, tmp_path: pathlib.Path
) -> None:
    objects = render(namespace=namespace)
    output = _dry_run(kubectl, objects, tmp_path / "default.yaml")
    assert output.count("(server dry run)") == len(objects)


def test_every_optional_part_is_accepted_by_the_apiserver(
    render: Callable[..., Any],
    kubectl: Callable[..., Any],
    namespace: str,
    watched: list[str],
    prometheus_crds: None,
    tmp_path: pathlib.Path,
) -> None:
    values = {**EVERYTHING, "watchNamespaces": watched}
    objects = render(values, namespace=namespace)
    kinds = {o["kind"] for o in objects}
    assert {"StatefulSet", "HorizontalPodAutoscaler", "PodMonitor", "Role", "Secret"} <= kinds
    output = _dry_run(kubectl, objects, tmp_path / "everything.yaml")
    assert output.count("(server dry run)") == len(objects)


def test_a_release_of_runners_only_is_accepted_from_a_user_with_rights_in_its_namespace_alone(
    render: Callable[..., Any], kubectl: Callable[..., Any], namespace: str, tmp_path: pathlib.Path
) -> None:
    """A team installs its own runners with the built-in `admin` role in its namespace and
    nothing cluster-wide; the apiserver authorizes a server-side dry run as that user."""
    user = f"team-admin-{uuid.uuid4().hex[:6]}"
    kubectl("create", "rolebinding", user, "-n", namespace, "--clusterrole=admin", f"--user={user}")
    objects = render(
        {"operator": {"enabled": False}, "postgresql": {"existingSecret": {"name": "team-db"}}},
        namespace=namespace,
    )
    path = tmp_path / "runners.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    result = kubectl(
        "apply", "--server-side", "--field-manager=chart-dry-run", "--dry-run=server",
        f"--as={user}", "-f", str(path), check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # The runner Deployment, its ServiceAccount and NetworkPolicy, and `helm test`'s Pod.
    assert result.stdout.count("(server dry run)") == len(objects) == 4
    # The same user may not install the whole chart: it holds nothing cluster-wide.
    everything = tmp_path / "everything.yaml"
    everything.write_text(yaml.safe_dump_all(render(namespace=namespace)))
    refused = kubectl(
        "apply", "--server-side", "--field-manager=chart-dry-run", "--dry-run=server",
        f"--as={user}", "-f", str(everything), check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "forbidden" in refused.stderr, refused.stderr
