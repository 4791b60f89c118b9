"""The real node itself: Ready beside kwok's nodes, labelled and tainted so that only Pods
that ask land there, and a kubelet that serves the apiserver (its client certificate) and no
one anonymous, authorizing each caller through the apiserver (webhook)."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from sundial.localdev import real_node as real_nodes

pytestmark = pytest.mark.timeout(120)


def test_the_real_node_is_ready_labelled_tainted_and_beside_kwok(core_api, real_node, kwok_nodes):
    node = core_api.read_node(real_node.name)
    assert node.metadata.labels[real_nodes.NODE_KIND_LABEL] == "real"
    [taint] = node.spec.taints
    assert (taint.key, taint.value, taint.effect) == (real_nodes.TAINT_KEY, "true", "NoSchedule")
    ready = {c.type: c.status for c in node.status.conditions}["Ready"]
    assert ready == "True"
    assert node.status.node_info.container_runtime_version.startswith("containerd://")
    assert kwok_nodes and real_node.name not in kwok_nodes


def kubelet_get(node: real_nodes.RealNode, path: str, certificate: tuple[Path, Path] | None) -> int:
    """The HTTP status of a GET on the kubelet's own port, with ``certificate`` or none."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the kubelet's serving certificate is self-signed
    if certificate is not None:
        context.load_cert_chain(*map(str, certificate))
    url = f"https://127.0.0.1:{node.setting('KUBELET_PORT')}{path}"
    try:
        with urllib.request.urlopen(url, context=context, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_the_kubelet_serves_the_apiserver_and_refuses_anyone_else(
    real_node: real_nodes.RealNode,
):
    if real_node.state_dir is None:
        pytest.skip("the real node was not started by this session")
    pki = real_node.state_dir / "pki"
    apiserver = (pki / "apiserver-kubelet-client.crt", pki / "apiserver-kubelet-client.key")
    node_identity = (
        real_node.state_dir / "node/kubelet/pki/node.crt",
        real_node.state_dir / "node/kubelet/pki/node.key",
    )

    assert kubelet_get(real_node, "/pods", None) == 401  # anonymous: not authenticated
    # Authenticated (the cluster CA signed it) yet refused: the kubelet asks the apiserver
    # (webhook), and a node may not use nodes/proxy. Authorization is real, not AlwaysAllow.
    assert kubelet_get(real_node, "/pods", node_identity) == 403
    assert kubelet_get(real_node, "/pods", apiserver) == 200
    # (kubectl logs and exec ride on that certificate: see the launcher tests' logs.)
