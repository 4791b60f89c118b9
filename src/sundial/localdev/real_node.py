"""The local cluster's real node (``hack/cluster/node-up``), driven from Python.

kwok simulates Pods; a real node runs them: a kubelet built with the control plane, with a
private containerd, runc and the CNI bridge plugin from Debian. This module says what a
machine lacks to host one (so tests can skip with that message), finds the images' env file
(``hack/images/build``, or ``SUNDIAL_IMAGES_ENV``), and joins a node to a running
:class:`~sundial.localdev.cluster.LocalCluster`. ``hack/cluster/down`` removes it with the
cluster and leaves the machine as it found it.

Guarantees: the node's Pods only land there when they ask (label ``sundial.dev/node-kind:
real``, taint ``sundial.dev/real-node=true:NoSchedule``; see :func:`placement`); nothing is
pulled from a registry (images come from archives, ``imagePullPolicy: Never``). Used by the
tests and the demo, never in production.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from sundial.localdev import cluster

__all__ = [
    "NODE_KIND_LABEL",
    "TAINT_KEY",
    "RealNode",
    "RealNodeError",
    "images_env",
    "install_packages",
    "missing",
    "placement",
    "read_images",
    "start",
]

NODE_KIND_LABEL = "sundial.dev/node-kind"
TAINT_KEY = "sundial.dev/real-node"
_IMAGE_LINE = re.compile(r"^(?:export )?SUNDIAL_IMAGE_([A-Z0-9_]+?)=(.*)$")


class RealNodeError(cluster.ClusterError):
    """The real node could not be prepared or started."""


@dataclasses.dataclass(frozen=True)
class RealNode:
    """A real node of a running cluster: its name and the images its containerd holds."""

    name: str
    #: Image references by name (``PAUSE``, ``BUSYBOX``, ``PYTHON``, ``RUNNER``, ...).
    images: dict[str, str]
    #: The cluster's state directory (the node's own is ``node/`` in it); None: not ours.
    state_dir: Path | None = None
    #: The node's ``node.env`` as node-up wrote it (``CGROUP_ROOT``, ``BRIDGE``, ``SUBNET``...).
    settings: dict[str, str] = dataclasses.field(default_factory=dict)

    def setting(self, key: str) -> str:
        """One of :attr:`settings`; fails clearly for a node not started here."""
        if key not in self.settings:
            raise RealNodeError(f"node {self.name} has no setting {key} (not started here?)")
        return self.settings[key]


def missing(hack_dir: Path | None = None) -> list[str]:
    """What this machine lacks to run a real node (``node-up --check``); empty: nothing."""
    hack_dir = hack_dir or cluster.find_hack_dir()
    result = subprocess.run(
        [str(hack_dir / "node-up"), "--check"], capture_output=True, text=True, check=False
    )
    return [line for line in result.stdout.splitlines() if line.strip()]


def install_packages(hack_dir: Path | None = None) -> str | None:
    """Install the node's Debian packages when missing (``hack/ensure-node-packages``).

    Returns None when they are there afterwards, else what the script said is missing.
    """
    hack_dir = hack_dir or cluster.find_hack_dir()
    result = subprocess.run(
        [str(hack_dir.parent / "ensure-node-packages")], capture_output=True, text=True, check=False
    )
    if result.returncode == 0:
        return None
    return (result.stderr or result.stdout).strip() or f"exited {result.returncode}"


def images_env(
    *, log_path: Path, names: tuple[str, ...] = (), hack_dir: Path | None = None
) -> Path:
    """The env file of ``SUNDIAL_IMAGE_*`` lines: ``SUNDIAL_IMAGES_ENV``, or what
    ``hack/images/build`` prints on its last line (it builds what its cache lacks: the images
    ``names`` (``("pause", "busybox")``) and what they build on, or all of them)."""
    given = os.environ.get("SUNDIAL_IMAGES_ENV")
    if given:
        if not Path(given).is_file():
            raise RealNodeError(f"SUNDIAL_IMAGES_ENV names {given}, which does not exist")
        return Path(given)
    hack_dir = hack_dir or cluster.find_hack_dir()
    build = hack_dir.parent / "images" / "build"
    if not build.is_file():
        raise RealNodeError(
            f"no images: {build} does not exist; set SUNDIAL_IMAGES_ENV to an env file of "
            "SUNDIAL_IMAGE_<NAME>=<ref> and SUNDIAL_IMAGE_<NAME>_ARCHIVE=<OCI archive> lines"
        )
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        result = subprocess.run(
            [str(build), *names], stdout=subprocess.PIPE, stderr=log, text=True, check=False
        )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        tail = log_path.read_text()[-2000:]
        raise RealNodeError(f"{build} failed (exit {result.returncode}); see {log_path}:\n{tail}")
    return Path(lines[-1])


def read_images(env_file: Path) -> dict[str, str]:
    """Image references by name from an env file (the ``_ARCHIVE`` lines left out)."""
    images: dict[str, str] = {}
    for line in env_file.read_text().splitlines():
        match = _IMAGE_LINE.match(line.strip())
        if match and not match.group(1).endswith("_ARCHIVE"):
            images[match.group(1)] = match.group(2).strip().strip("'\"")
    return images


def start(
    local: cluster.LocalCluster, env_file: Path, *, images: tuple[str, ...] | None = None
) -> RealNode:
    """Join a real node to ``local`` (``hack/cluster/node-up``); idempotent.

    ``images`` names the images to import (``("BUSYBOX", "RUNNER")``; the sandbox image
    always comes too); None: every image of ``env_file``. Each 100 MB costs seconds.
    """
    if local.state_dir is None or local.hack_dir is None:
        raise RealNodeError("a real node joins only a cluster that hack/cluster/up started")
    result = subprocess.run(
        [str(local.hack_dir / "node-up")],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "SUNDIAL_CLUSTER_DIR": str(local.state_dir),
            "SUNDIAL_IMAGES_ENV": str(env_file),
            "SUNDIAL_NODE_IMAGES": " ".join(images or ()),
        },
        check=False,
    )
    if result.returncode != 0:
        raise RealNodeError(f"hack/cluster/node-up exited {result.returncode}:\n{result.stderr}")
    settings = dict(
        line.split("=", 1)
        for line in (local.state_dir / "node" / "node.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    available = read_images(env_file)
    imported = {
        name: ref for name, ref in available.items() if images is None or name in (*images, "PAUSE")
    }
    return RealNode(
        name=settings["NODE_NAME"],
        images=imported,
        state_dir=local.state_dir,
        settings=settings,
    )


def placement() -> dict[str, Any]:
    """The Pod spec fields that put a Pod on the real node and nowhere else."""
    return {
        "nodeSelector": {NODE_KIND_LABEL: "real"},
        "tolerations": [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
    }
