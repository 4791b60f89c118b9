"""What a real node changes on the machine, and that ``down`` (or the watchdog, when the owner
dies) puts every bit of it back: the kubelet's sysctls, mounts, links, cgroups, the paths the
kubelet and containerd hard-code, and the processes.

Each test starts a cluster of its own in a fresh directory and takes its footprint before
``up``, while a Pod runs, and after the teardown. Other work goes on meanwhile on this
machine (other sessions' clusters, image builds with buildah, maybe their real nodes), so a
footprint holds what is this node's: mounts under its state directory, its bridge and the
veths on it (or on no bridge: a leftover), its cgroup root, and the processes in that cgroup
root or naming its directory. The machine-wide part (six sysctls, the paths the kubelet and
containerd hard-code) is compared only when no other real node ran at any point, because the
last node out restores it; the tests say when they could not. This file sorts first in
realnode/, so its first test runs before the session's real node starts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from kubernetes import client, config

from sundial.localdev import cluster
from sundial.localdev import real_node as real_nodes
from support.real_node import NONROOT

pytestmark = pytest.mark.timeout(240)

SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
)
SHARED_PATHS = (
    "/var/log/containers",
    "/var/lib/kubelet",
    "/run/containerd",
    "/run/sundial-real-nodes",
    "/opt/containerd",
    "/var/lib/containerd",
    "/etc/cni/net.d",
)
REGISTRY = Path("/run/sundial-real-nodes")


@dataclasses.dataclass(frozen=True)
class Footprint:
    """What of the machine belongs to the real node of one state directory."""

    mounts: frozenset[str]
    links: frozenset[str]
    cgroups: frozenset[str]
    processes: frozenset[str]  # "pid name"
    #: Machine-wide: the sysctls a kubelet sets and the paths it or containerd hard-code.
    shared: tuple[tuple[str, str], ...]


def node_id(state_dir: Path) -> str:
    """As hack/cluster/node.sh names it: the first 8 hex digits of sha256(state dir)."""
    return hashlib.sha256(str(state_dir).encode()).hexdigest()[:8]


def footprint(state_dir: Path) -> Footprint:
    ours = node_id(state_dir)
    bridge = f"sdbr-{ours}"
    mounts = frozenset(
        point
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if (point := line.split()[4]).startswith(f"{state_dir}/")
    )
    links = set()
    for link in Path("/sys/class/net").iterdir():
        master = link / "master"
        on = os.path.basename(os.readlink(master)) if master.is_symlink() else None
        if link.name == bridge or (link.name.startswith("veth") and on in (bridge, None)):
            links.add(link.name)
    cgroups = frozenset(
        str(root)
        for hierarchy in Path("/sys/fs/cgroup").iterdir()
        for root in (hierarchy / f"sundial-{ours}", hierarchy.parent / f"sundial-{ours}")
        if root.is_dir()
    )
    processes = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cgroup = (entry / "cgroup").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            name = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if f"/sundial-{ours}/" in cgroup or str(state_dir) in command:
            processes.add(f"{entry.name} {name}")
    shim_sockets = Path("/run/containerd/s")  # every containerd 1.6's, on any socket
    shared = tuple(
        [(name, Path("/proc/sys", *name.split(".")).read_text().strip()) for name in SYSCTLS]
        + [(path, str(os.path.lexists(path))) for path in SHARED_PATHS]
        + [("shim sockets", str(len(list(shim_sockets.iterdir())) if shim_sockets.is_dir() else 0))]
    )
    return Footprint(mounts, frozenset(links), cgroups, frozenset(processes), shared)


def other_real_nodes(state_dir: Path) -> list[str]:
    mine = f"{node_id(state_dir)}.node"
    if not REGISTRY.is_dir():
        return []
    return sorted(entry.name for entry in REGISTRY.glob("*.node") if entry.name != mine)


def start_cluster_with_node(
    state_dir: Path, images_env: Path, *, owner_pid: int
) -> tuple[cluster.LocalCluster, real_nodes.RealNode]:
    local = cluster.start(state_dir, owner_pid=owner_pid)
    try:
        return local, real_nodes.start(local, images_env, images=("BUSYBOX",))
    except BaseException:
        local.stop()
        raise


def run_sleeping_pod(local: cluster.LocalCluster, node: real_nodes.RealNode) -> client.V1Pod:
    """A Pod that keeps a container, a tmpfs volume and a network namespace alive."""
    api = config.new_client_from_config(config_file=str(local.kubeconfig))
    try:
        return sleeping_pod(client.CoreV1Api(api), node, "sleeper")
    finally:
        api.close()


def sleeping_pod(core: client.CoreV1Api, node: real_nodes.RealNode, name: str) -> client.V1Pod:
    """A Pod named ``name`` in ``default`` on ``node``, once Running."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            **real_nodes.placement(),
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,  # node-down deletes with 1 s and never waits 30
            "securityContext": {"runAsUser": NONROOT},
            "volumes": [{"name": "scratch", "emptyDir": {"medium": "Memory"}}],
            "containers": [
                {
                    "name": "main",
                    "image": node.images["BUSYBOX"],
                    "imagePullPolicy": "Never",
                    "command": ["sleep", "600"],
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                }
            ],
        },
    }
    core.create_namespaced_pod("default", pod)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        found = core.read_namespaced_pod(name, "default")
        if found.status.phase == "Running":
            return found
        time.sleep(0.3)
    pytest.fail(f"Pod {name} is not Running after 90s: {found.status}")


def leftovers(before: Footprint, after: Footprint, *, compare_shared: bool) -> dict[str, object]:
    """What ``after`` holds that ``before`` did not (and what went), field by field."""
    found: dict[str, object] = {}
    for field in ("mounts", "links", "cgroups", "processes"):
        was, now = getattr(before, field), getattr(after, field)
        if was != now:
            found[field] = {"left": sorted(now - was), "gone": sorted(was - now)}
    if compare_shared and before.shared != after.shared:
        found["shared"] = {"before": dict(before.shared), "after": dict(after.shared)}
    return found


def long_lived(print_: Footprint) -> Footprint:
    """``print_`` without short-lived helpers a running node spawns (runc, mount, ...)."""
    kept = frozenset(
        process
        for process in print_.processes
        if process.split()[1].startswith(("containerd", "kubelet", "pause", "sleep"))
    )
    return dataclasses.replace(print_, processes=kept)


def assert_node_seen(during: Footprint, node: real_nodes.RealNode) -> None:
    """The footprint really sees the node: otherwise "nothing left" would prove nothing."""
    assert node.setting("BRIDGE") in during.links
    assert any(link.startswith("veth") for link in during.links)  # the Pod's, on our bridge
    assert f"/sys/fs/cgroup/memory{node.setting('CGROUP_ROOT')}" in during.cgroups
    assert any(mount.startswith(f"{node.state_dir}/node/") for mount in during.mounts)
    names = {process.split()[1] for process in during.processes}
    assert {"containerd", "kubelet", "pause", "sleep"} <= names, names
    assert any(name.startswith("containerd-shim") for name in names), names


def test_down_leaves_the_machine_as_it_found_it(real_node_images_env: Path):
    state_dir = Path(tempfile.mkdtemp(prefix="sundial-machine-"))
    others = set(other_real_nodes(state_dir))
    before = footprint(state_dir)
    local, node = start_cluster_with_node(state_dir, real_node_images_env, owner_pid=os.getpid())
    try:
        run_sleeping_pod(local, node)
        during = footprint(state_dir)
        others |= set(other_real_nodes(state_dir))
    finally:
        local.stop()
    after = footprint(state_dir)
    others |= set(other_real_nodes(state_dir))

    assert_node_seen(during, node)
    alone = not others
    if alone:  # the kubelet changed its sysctls (kernel.panic 1 -> 10, ...) and paths
        assert during.shared != before.shared
    else:
        print(f"other real nodes ran ({sorted(others)}): the last of them restores the sysctls")
    assert leftovers(before, after, compare_shared=alone) == {}
    assert not state_dir.exists()


def test_the_watchdog_removes_the_node_when_its_owner_dies_beside_another_node(
    real_node: real_nodes.RealNode, real_node_images_env: Path, core_api: client.CoreV1Api
):
    """Two clusters' real nodes coexist (their own cgroup roots, bridges, subnets, sockets);
    the owner of one is SIGKILLed, and its watchdog tears that node down alone, leaving the
    other one and its running Pod alone."""
    if real_node.state_dir is None:
        pytest.skip("the session's real node was not started by this session")
    session_pod = f"session-sleeper-{os.getpid()}"
    sleeping_pod(core_api, real_node, session_pod)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    state_dir = Path(tempfile.mkdtemp(prefix="sundial-watchdog-"))
    before = footprint(state_dir)
    session_before = footprint(real_node.state_dir)
    try:
        local, node = start_cluster_with_node(state_dir, real_node_images_env, owner_pid=owner.pid)
        run_sleeping_pod(local, node)
        assert_node_seen(footprint(state_dir), node)
        for key in ("CONTAINERD_SOCKET", "CGROUP_ROOT", "BRIDGE", "SUBNET"):
            assert real_node.setting(key) != node.setting(key), key

        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 90
        while state_dir.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if state_dir.exists():
            cluster.LocalCluster(
                kubeconfig=state_dir / "kubeconfig",
                kubectl_path=cluster.bin_dir() / "kubectl",
                state_dir=state_dir,
                hack_dir=cluster.find_hack_dir(),
            ).stop()
    assert not state_dir.exists(), "the watchdog did not run down within 90s"
    assert leftovers(before, footprint(state_dir), compare_shared=False) == {}
    # The session's node was never touched: the same processes, mounts, links, cgroups.
    session_after = footprint(real_node.state_dir)
    assert (
        leftovers(long_lived(session_before), long_lived(session_after), compare_shared=False) == {}
    )
    ready = {c.type: c.status for c in core_api.read_node(real_node.name).status.conditions}
    assert ready["Ready"] == "True"
    assert core_api.read_namespaced_pod(session_pod, "default").status.phase == "Running"
    core_api.delete_namespaced_pod(session_pod, "default", grace_period_seconds=0)


def test_down_cleans_up_after_a_kubelet_and_containerd_killed_with_their_containers_running(
    real_node_images_env: Path,
):
    """A crash, not a shutdown: SIGKILL leaves the shim, the container (now an orphan), its
    cgroups, mounts and network namespace behind, and nobody to tear them down but down."""
    state_dir = Path(tempfile.mkdtemp(prefix="sundial-crash-"))
    others = set(other_real_nodes(state_dir))
    before = footprint(state_dir)
    local, node = start_cluster_with_node(state_dir, real_node_images_env, owner_pid=os.getpid())
    try:
        run_sleeping_pod(local, node)
        others |= set(other_real_nodes(state_dir))
        for name in ("kubelet", "containerd"):
            os.kill(int((state_dir / "pids" / f"{name}.pid").read_text()), signal.SIGKILL)
        time.sleep(1)
        crashed = footprint(state_dir)
    finally:
        local.stop()
    others |= set(other_real_nodes(state_dir))

    names = {process.split()[1] for process in crashed.processes}
    assert "sleep" in names and "kubelet" not in names, names  # the container outlived both
    assert any(name.startswith("containerd-shim") for name in names), names
    # Alone, the machine-wide part is compared too: a killed shim leaves its socket behind.
    assert leftovers(before, footprint(state_dir), compare_shared=not others) == {}
    assert not state_dir.exists()
