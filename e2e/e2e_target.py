"""Where the e2e stories run, and how it is set up: see conftest.py."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import upgrade_story
import yaml

from sundial.localdev import cluster, previous_release
from sundial.localdev import install as installs
from sundial.localdev import real_node as real_nodes

#: Namespace of the stories' ScheduledJobs, JobRuns and job Pods.
JOBS = "e2e-jobs"


@dataclass
class Target:
    """Where the stories run: a kubectl, and what a job Pod needs to land and start there."""

    kubectl: Callable[..., subprocess.CompletedProcess[str]]
    installation: installs.Installation
    busybox_image: str
    #: nodeSelector and tolerations a job Pod's template adds (the real node's), else {}.
    placement: dict[str, Any] = field(default_factory=dict)
    pull_policy: str = "Never"
    #: The upgrade from the previous release the session made first (None: it made none,
    #: on a cluster of yours).
    upgrade: upgrade_story.UpgradeStory | None = None
    #: The Redis image the node holds, for the chart's bundled Redis (None: on a cluster of
    #: yours, whose values file says what the hot queue uses).
    redis_image: str | None = None


def _local_reason() -> str | None:
    """Why this machine cannot run the local tier; None: it can."""
    if os.geteuid() != 0:
        return "the real node needs root (run as root, or set SUNDIAL_E2E_KUBECONFIG)"
    missing = cluster.missing_binaries()
    if missing and cluster.find_go() is None:
        return f"the control plane is not built ({', '.join(missing)}). {cluster.GO_INSTALL_HINT}"
    real_nodes.install_packages()
    lacking = real_nodes.missing()
    if lacking:
        return "this machine cannot run the real node: " + "; ".join(lacking)
    return None


#: The images the session's node holds (``hack/images/build`` names).
IMAGES = ("pause", "busybox", "examples", "operator", "postgres", "redis")


def prepare() -> None:
    """What a cold machine must build before the session's cluster starts: the control plane's
    binaries, this checkout's images and the previous release's, each into its cache outside
    the clone. Called once the tests are collected, before any test's timeout starts (a cold
    build takes longer than a test may: tests/cluster does the same); the ``target`` fixture
    then finds them built. Nothing here on a cluster of yours, or where the local tier skips;
    a build that fails is left for the fixture to report. The logs go beside the binaries'
    cache (``cluster.bin_dir()``'s parent), replaced at every build."""
    if os.environ.get("SUNDIAL_E2E_KUBECONFIG") or _local_reason():
        return
    log_dir = cluster.bin_dir().parent
    try:
        if cluster.missing_binaries():
            cluster.build(log_path=log_dir / "build.log")
        real_nodes.images_env(log_path=log_dir / "images.log", names=IMAGES)
        if previous_release.available():
            with previous_release.checkout() as previous:
                previous_release.images(previous, log_path=log_dir / "previous.log")
    except (cluster.ClusterError, real_nodes.RealNodeError, previous_release.PreviousReleaseError):
        return


def session_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """The session's Target (see the module docstring); the ``target`` fixture of conftest."""
    given = os.environ.get("SUNDIAL_E2E_KUBECONFIG")
    if given:
        yield from _given_cluster(given)
        return
    reason = _local_reason()
    if reason:
        pytest.skip(f"e2e: {reason}")
    work = tmp_path_factory.mktemp("e2e")
    if cluster.missing_binaries():
        cluster.build(log_path=work / "build.log")
    env_file = real_nodes.images_env(log_path=work / "images.log", names=IMAGES)
    state_dir = Path(tempfile.mkdtemp(prefix="sundial-e2e-"))
    local = cluster.start(state_dir, owner_pid=os.getpid())
    try:
        node = real_nodes.start(local, env_file, images=("BUSYBOX", "REDIS", *installs.IMAGES))
        upgraded = None
        if previous_release.available():
            installation, upgraded = _upgraded_from_the_previous_release(local, node, work)
        else:
            # A shallow clone: the stories run on this checkout, installed directly.
            print(f"\ne2e: no commit {previous_release.PREVIOUS[:7]} here; no upgrade story")
            installation = installs.install(
                local, node, release="sundial", namespace="sundial-system", job_namespaces=[JOBS]
            )
        yield Target(
            kubectl=installation.kubectl,
            installation=installation,
            busybox_image=node.images["BUSYBOX"],
            placement=real_nodes.placement(),
            upgrade=upgraded,
            redis_image=node.images["REDIS"],
        )
    finally:
        local.stop()


def _upgraded_from_the_previous_release(
    local: cluster.LocalCluster, node: real_nodes.RealNode, work: Path
) -> tuple[installs.Installation, upgrade_story.UpgradeStory]:
    """The previous release installed on ``node`` (its chart, its images), its work started,
    then upgraded to this checkout's chart and images (``node.images``)."""
    with previous_release.checkout() as previous:
        previous_env = previous_release.images(previous, log_path=work / "previous.log")
        real_nodes.start(local, previous_env, images=("OPERATOR", "EXAMPLES"))
        older = real_nodes.read_images(previous_env)
        started = time.monotonic()
        installation = installs.install(
            local,
            dataclasses.replace(
                node,
                images={
                    **node.images,
                    "OPERATOR": older["OPERATOR"],
                    "EXAMPLES": older["EXAMPLES"],
                },
            ),
            release="sundial",
            namespace="sundial-system",
            job_namespaces=[JOBS, upgrade_story.UPGRADE],
            chart=previous_release.chart_dir(previous),
        )
    print(
        f"\ne2e: the previous release ({previous_release.PREVIOUS[:7]}) installed to Ready in "
        f"{time.monotonic() - started:.1f}s"
    )
    upgrade_story.start(
        installation.kubectl,
        upgrade_story.workload(node.images["BUSYBOX"], real_nodes.placement(), "Never"),
    )
    before = upgrade_story.operator_pods(installation.kubectl, installation.namespace)
    upgrade_started = upgrade_story.now()
    installation = installs.upgrade(
        installation,
        images={"OPERATOR": node.images["OPERATOR"], "EXAMPLES": node.images["EXAMPLES"]},
    )
    print(f"e2e: upgraded to this checkout, Ready in {installation.ready_seconds:.1f}s")
    return installation, upgrade_story.UpgradeStory(
        previous=previous_release.PREVIOUS,
        started_at=upgrade_started,
        upgraded_at=upgrade_story.now(),
        operators_before=before,
        operators_after=upgrade_story.operator_pods(installation.kubectl, installation.namespace),
    )


def _given_cluster(given: str) -> Iterator[Target]:
    kubeconfig = Path.home() / ".kube" / "config" if given == "current" else Path(given)
    kubectl = shutil.which("kubectl") or str(cluster.bin_dir() / "kubectl")
    helm = shutil.which("helm") or str(cluster.bin_dir() / "helm")
    values_path = os.environ.get("SUNDIAL_E2E_VALUES")
    busybox = os.environ.get("SUNDIAL_E2E_BUSYBOX_IMAGE", "busybox:1.36")
    if not values_path:
        pytest.skip("e2e: SUNDIAL_E2E_KUBECONFIG needs SUNDIAL_E2E_VALUES (the chart's images)")
    values = yaml.safe_load(Path(values_path).read_text()) or {}
    values.setdefault("jobPods", {})["namespaces"] = [JOBS]
    values["watchNamespaces"] = [JOBS]
    release = f"sundial-e2e-{uuid.uuid4().hex[:4]}"
    local = cluster.LocalCluster(kubeconfig=kubeconfig, kubectl_path=Path(kubectl))
    installation = installs.Installation(
        release=release, namespace=f"{release}-system", kubeconfig=kubeconfig,
        helm_path=Path(helm), kubectl_path=Path(kubectl), values=values,
    )  # fmt: skip
    if local.kubectl("get", "namespace", JOBS, check=False).returncode != 0:
        local.kubectl("create", "namespace", JOBS)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump(values, handle)
    try:
        installation.helm(
            "install", release, str(installs.chart_dir()), "-n", installation.namespace,
            "--create-namespace", "--values", handle.name, "--wait", "--timeout", "300s",
        )  # fmt: skip
        yield Target(
            kubectl=installation.kubectl,
            installation=installation,
            busybox_image=busybox,
            pull_policy="IfNotPresent",
        )
    finally:
        os.unlink(handle.name)
        local.kubectl("delete", "namespace", JOBS, "--ignore-not-found", check=False)
        if (
            installation.helm(
                "status", release, "-n", installation.namespace, check=False
            ).returncode
            == 0
        ):
            installs.uninstall(installation)
