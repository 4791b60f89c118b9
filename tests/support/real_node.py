"""Helpers for tests on the real node: Pod templates that land there, and its containerd."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from sundial.localdev import real_node as real_nodes

#: The numeric non-root user every test Pod runs as (the busybox image names it "nonroot").
NONROOT = 65532


def template(
    node: real_nodes.RealNode,
    command: list[str],
    *,
    image: str = "BUSYBOX",
    grace_seconds: int = 1,
    **container: Any,
) -> dict[str, Any]:
    """A pod template for the real node: its image imported there (never pulled), a numeric
    non-root user, and the last log lines as the termination message of a failed container
    (the launcher puts that message in the run's error)."""
    return {
        "spec": {
            **real_nodes.placement(),
            "terminationGracePeriodSeconds": grace_seconds,
            "securityContext": {"runAsUser": NONROOT, "runAsGroup": NONROOT},
            "containers": [
                {
                    "name": "main",
                    "image": node.images[image],
                    "imagePullPolicy": "Never",
                    "command": command,
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                    **container,
                }
            ],
        }
    }


def attempt_exits(codes: dict[int, int], *, default: int = 0) -> list[str]:
    """A shell command that exits ``codes[attempt]`` (``SUNDIAL_ATTEMPT``), else ``default``."""
    cases = " ".join(f"{attempt}) exit {code} ;;" for attempt, code in codes.items())
    script = (
        f'echo "attempt $SUNDIAL_ATTEMPT"; case "$SUNDIAL_ATTEMPT" in {cases} esac; exit {default}'
    )
    return ["sh", "-c", script]


def running_tasks(state_dir: Path) -> set[str]:
    """The container ids containerd of the node in ``state_dir`` runs a task for."""
    socket = state_dir / "node" / "containerd" / "containerd.sock"
    result = subprocess.run(
        ["ctr", "--address", str(socket), "-n", "k8s.io", "tasks", "ls", "-q"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(result.stdout.split())


def container_id(pod: Any) -> str:
    """The containerd id of a Pod's first container (``containerd://<id>``)."""
    return str(pod.status.container_statuses[0].container_id).removeprefix("containerd://")
