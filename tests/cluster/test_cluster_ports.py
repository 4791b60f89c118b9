"""``hack/cluster/up`` when another process binds a port between its pick and the bind.

Ports are picked free at start, but only probed: another cluster on the machine once took the
kube-controller-manager's port first ("bind: address already in use") and the cluster did not
come up. A component that exits for a taken port is started again on a new one.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sundial.localdev import cluster


@contextlib.contextmanager
def listening_socket() -> Iterator[int]:
    """A port someone else holds for the block: bound and listening on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def cluster_env(state_dir: Path) -> dict[str, str]:
    lines = (state_dir / "cluster.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


@pytest.mark.timeout(600)  # a second control plane on a loaded machine
def test_components_whose_ports_were_taken_start_on_new_ones(
    local_cluster: cluster.LocalCluster,
) -> None:
    """The session's cluster runs meanwhile: the two coexist."""
    state_dir = Path(tempfile.mkdtemp(prefix="sundial-cluster-ports-"))
    with listening_socket() as apiserver_port, listening_socket() as controller_manager_port:
        taken = {
            "SUNDIAL_CLUSTER_APISERVER_PORT": str(apiserver_port),
            "SUNDIAL_CLUSTER_CONTROLLER_MANAGER_PORT": str(controller_manager_port),
        }
        try:
            second = cluster.start(state_dir, owner_pid=os.getpid(), environment=taken)
            ports = cluster_env(state_dir)
            assert ports["APISERVER_PORT"] not in (str(apiserver_port), "")
            assert ports["CONTROLLER_MANAGER_PORT"] not in (str(controller_manager_port), "")
            assert f":{ports['APISERVER_PORT']}" in second.kubeconfig.read_text()
            for name in ("kube-apiserver", "kube-controller-manager"):
                first_try = state_dir / "logs" / f"{name}.port-taken-1.log"
                assert "address already in use" in first_try.read_text(), name
            nodes = second.kubectl("get", "nodes", "-o", "name").stdout.split()
            assert len(nodes) == 3, nodes
            # The session's cluster still answers.
            local_cluster.kubectl("get", "--raw", "/readyz")
        finally:  # also when `up` did not finish: its watchdog starts only at the end
            stopping = cluster.LocalCluster(
                kubeconfig=state_dir / "kubeconfig",
                kubectl_path=local_cluster.kubectl_path,
                state_dir=state_dir,
                hack_dir=cluster.find_hack_dir(),
            )
            stopping.stop()
