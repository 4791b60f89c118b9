"""Fixtures for tests against a real Kubernetes control plane.

By default the session builds (once, into a cache outside the clone) and starts the local
control plane of ``hack/cluster``: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok with fake Nodes. With ``SUNDIAL_TEST_KUBECONFIG`` set, the same
tests run against that cluster instead (kind, say) and nothing is started.

A cold build takes far longer than a test's timeout, so it happens right after collection
(``pytest_collection_finish``), and only when tests from this directory were selected.
Where the binaries are missing and Go is absent, these tests skip and say how to get Go.

When tests of ``realnode/`` are selected, the same hook also installs the real node's Debian
packages (as root) and builds the images (``hack/images/build``), and the ``real_node``
fixture joins one real node to the session's cluster (``hack/cluster/node-up``): one control
plane serves both tiers, and the taint keeps kwok's tests off the real node. Where the machine
cannot host it, the real-node tests skip, saying what is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch

from sundial.localdev import cluster, real_node

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
_HERE = Path(__file__).parent
_SKIP_REASON = pytest.StashKey[str]()
_FAIL_REASON = pytest.StashKey[str]()
_REAL_NODE_SKIP_REASON = pytest.StashKey[str]()
_IMAGES_ENV = pytest.StashKey[Path]()


def pytest_collection_finish(session: pytest.Session) -> None:
    selected = any(_HERE in Path(str(item.path)).parents for item in session.items)
    if not selected or os.environ.get("SUNDIAL_TEST_KUBECONFIG"):
        return
    _build_control_plane(session)
    stash = session.config.stash
    if _SKIP_REASON in stash or _FAIL_REASON in stash or session.config.option.collectonly:
        return
    if any(_HERE / "realnode" in Path(str(item.path)).parents for item in session.items):
        _prepare_real_node(session)


def _build_control_plane(session: pytest.Session) -> None:
    missing = cluster.missing_binaries()
    if not missing:
        return
    if cluster.find_go() is None:
        session.config.stash[_SKIP_REASON] = (
            f"the local control plane is not built ({', '.join(missing)} missing). "
            + cluster.GO_INSTALL_HINT
        )
        return
    log_path = cluster.bin_dir().parent / "build.log"
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"tests/cluster: building the local Kubernetes control plane ({', '.join(missing)}) "
            f"once into {cluster.bin_dir()}; a cold build takes 10 to 20 minutes on 2 cores. "
            f"Progress: {log_path}"
        )
    started = time.monotonic()
    try:
        cluster.build(log_path=log_path)
    except cluster.ClusterError as error:
        # Fail the cluster tests, not the whole session: other tiers still run.
        session.config.stash[_FAIL_REASON] = str(error)
        return
    if reporter is not None:
        reporter.write_line(f"tests/cluster: built in {time.monotonic() - started:.0f}s")


def _prepare_real_node(session: pytest.Session) -> None:
    """Packages and images for the real node, before any test's timeout starts."""
    stash = session.config.stash
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    not_installed = real_node.install_packages()
    lacking = real_node.missing()
    if lacking:
        hint = f" ({not_installed})" if not_installed else ""
        stash[_REAL_NODE_SKIP_REASON] = (
            "this machine cannot run the real node: " + "; ".join(lacking) + hint
        )
        return
    log_path = Path(tempfile.gettempdir()) / f"sundial-images-{os.getpid()}.log"
    started = time.monotonic()
    try:
        # What the real-node tests run; the example handlers' image brings the runner (and
        # python) image it builds on; the chart's test adds operator and postgres.
        stash[_IMAGES_ENV] = real_node.images_env(
            log_path=log_path, names=("pause", "busybox", "examples", "operator", "postgres")
        )
    except real_node.RealNodeError as error:
        stash[_REAL_NODE_SKIP_REASON] = str(error)
        return
    if reporter is not None:
        reporter.write_line(
            f"tests/cluster/realnode: images ready in {time.monotonic() - started:.0f}s "
            f"({stash[_IMAGES_ENV]})"
        )


@pytest.fixture(scope="session")
def local_cluster(request: pytest.FixtureRequest) -> Iterator[cluster.LocalCluster]:
    """The session's cluster: the one in SUNDIAL_TEST_KUBECONFIG, or a fresh local one."""
    given = os.environ.get("SUNDIAL_TEST_KUBECONFIG")
    if given:
        kubectl = shutil.which("kubectl") or str(cluster.bin_dir() / "kubectl")
        if not Path(kubectl).is_file():
            pytest.skip("SUNDIAL_TEST_KUBECONFIG is set but no kubectl is on the PATH")
        yield cluster.LocalCluster(kubeconfig=Path(given), kubectl_path=Path(kubectl))
        return
    skip_reason = request.config.stash.get(_SKIP_REASON, None)
    if skip_reason:
        pytest.skip(skip_reason)
    fail_reason = request.config.stash.get(_FAIL_REASON, None)
    if fail_reason:
        pytest.fail(f"building the local control plane failed: {fail_reason}")
    state_dir = Path(tempfile.mkdtemp(prefix="sundial-cluster-"))
    local = cluster.start(state_dir, owner_pid=os.getpid())
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="session")
def real_node_images_env(request: pytest.FixtureRequest) -> Path:
    """The env file of the images the real node holds (``SUNDIAL_IMAGE_*`` lines)."""
    skip_reason = request.config.stash.get(_REAL_NODE_SKIP_REASON, None)
    if skip_reason:
        pytest.skip(skip_reason)
    images_env = request.config.stash.get(_IMAGES_ENV, None)
    if images_env is None:
        given = os.environ.get("SUNDIAL_IMAGES_ENV")
        if not given:
            pytest.skip("no images for the real node: set SUNDIAL_IMAGES_ENV")
        images_env = Path(given)
    return images_env


@pytest.fixture(scope="session")
def real_node_of_session(
    local_cluster: cluster.LocalCluster, real_node_images_env: Path, core_api: client.CoreV1Api
) -> real_node.RealNode:
    """The session cluster's real node, joined on first use. ``local_cluster``'s teardown
    (``hack/cluster/down``) removes it with the cluster. Against SUNDIAL_TEST_KUBECONFIG, the
    node labelled ``sundial.dev/node-kind=real`` is used, and skipped for when absent."""
    if local_cluster.state_dir is None:
        nodes = core_api.list_node(label_selector=f"{real_node.NODE_KIND_LABEL}=real").items
        if not nodes:
            pytest.skip(f"no node labelled {real_node.NODE_KIND_LABEL}=real in this cluster")
        return real_node.RealNode(
            name=nodes[0].metadata.name, images=real_node.read_images(real_node_images_env)
        )
    # Only what the tests run: every 100 MB imported costs seconds per session.
    return real_node.start(
        local_cluster, real_node_images_env, images=("BUSYBOX", "RUNNER", "EXAMPLES")
    )


@pytest.fixture(scope="session")
def kubeconfig(local_cluster: cluster.LocalCluster) -> Path:
    """Path of an admin kubeconfig for the session's cluster."""
    return local_cluster.kubeconfig


@pytest.fixture(scope="session")
def kubectl(local_cluster: cluster.LocalCluster) -> Callable[..., Any]:
    """Run kubectl against the session's cluster: ``kubectl("get", "pods", stdin=None)``."""
    return local_cluster.kubectl


@pytest.fixture(scope="session")
def api_client(kubeconfig: Path) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield api
    finally:
        api.close()


@pytest.fixture(scope="session")
def core_api(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def kwok_nodes(core_api: client.CoreV1Api) -> list[str]:
    """Names of kwok's fake Nodes; tests of simulated Pod outcomes skip without them."""
    nodes = [
        node.metadata.name
        for node in core_api.list_node().items
        if (node.metadata.annotations or {}).get(KWOK_NODE_ANNOTATION) == "fake"
    ]
    if not nodes:
        pytest.skip("no kwok nodes in this cluster: simulated Pod outcomes need hack/cluster")
    return nodes


@pytest.fixture
def namespace(core_api: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (without waiting)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core_api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    _wait_for_default_service_account(core_api, name)
    try:
        yield name
    finally:
        core_api.delete_namespace(name)


def _wait_for_default_service_account(core_api: client.CoreV1Api, namespace: str) -> None:
    # Pods are refused until the controller-manager has created the namespace's
    # default ServiceAccount; wait for that signal rather than a fixed sleep.
    wait_for_object(
        core_api.list_namespaced_service_account,
        name="default",
        condition=lambda _account: True,
        timeout=60,
        namespace=namespace,
    )


def wait_for_object(
    list_function: Callable[..., Any],
    *,
    condition: Callable[[Any], bool],
    timeout: float,
    name: str | None = None,
    **list_arguments: Any,
) -> Any:
    """Watch objects (one, when ``name`` is given) until ``condition(obj)`` holds for one.

    Returns that object, or fails the test after ``timeout`` seconds showing the last one
    seen. A watch (list, then events) lets the test react to the change itself.
    """
    if name is not None:
        list_arguments["field_selector"] = f"metadata.name={name}"
    deadline = time.monotonic() + timeout
    last_seen: Any = None
    while (remaining := deadline - time.monotonic()) > 0:
        watcher = watch.Watch()
        for event in watcher.stream(
            list_function, timeout_seconds=max(1, round(remaining)), **list_arguments
        ):
            last_seen = event["object"]
            if event["type"] != "DELETED" and condition(last_seen):
                watcher.stop()
                return last_seen
    pytest.fail(f"nothing reached the expected state within {timeout}s; last seen:\n{last_seen}")


def wait_for_deletion(
    list_function: Callable[..., Any], *, name: str, timeout: float, **list_arguments: Any
) -> None:
    """Return once the named object does not exist: absent now, or its DELETED event."""
    selector = f"metadata.name={name}"
    listing = list_function(field_selector=selector, **list_arguments)
    if not listing.items:
        return
    watcher = watch.Watch()
    for event in watcher.stream(
        list_function,
        field_selector=selector,
        resource_version=listing.metadata.resource_version,
        timeout_seconds=round(timeout),
        **list_arguments,
    ):
        if event["type"] == "DELETED":
            watcher.stop()
            return
    pytest.fail(f"{name} still exists after {timeout}s")


def pod_template(annotations: dict[str, str] | None = None) -> client.V1PodTemplateSpec:
    """A one-container Pod template that runs anywhere: kwok simulates it (steered by
    ``sundial.dev/kwok-*`` annotations), a real node runs ``true`` in busybox."""
    return client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(annotations=annotations or {}),
        spec=client.V1PodSpec(
            restart_policy="Never",
            termination_grace_period_seconds=1,
            containers=[client.V1Container(name="main", image="busybox:1.36", command=["true"])],
        ),
    )


@pytest.fixture(scope="session")
def make_pod_template() -> Callable[..., client.V1PodTemplateSpec]:
    """:func:`pod_template`: ``make_pod_template({"sundial.dev/kwok-outcome": "fail"})``."""
    return pod_template


@pytest.fixture(scope="session")
def wait_gone() -> Callable[..., None]:
    """:func:`wait_for_deletion`: ``wait_gone(api.list_namespaced_pod, name=..., ...)``."""
    return wait_for_deletion


@pytest.fixture(scope="session")
def wait_for() -> Callable[..., Any]:
    """:func:`wait_for_object`, for tests: ``wait_for(api.list_namespaced_pod, ...)``."""
    return wait_for_object


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    binary = cluster.bin_dir() / "helm"
    if not binary.is_file():
        pytest.skip(f"helm is not built yet ({binary}): run hack/cluster/build")
    return binary


@pytest.fixture(scope="session")
def helm(helm_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """Run helm with its own cache and config directories: ``helm("lint", "charts/sundial")``."""
    home = tmp_path_factory.mktemp("helm-home")

    def run(
        *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        environment = {
            "PATH": "/usr/bin:/bin",
            # Without HOME, client-go would cache discovery in ./.kube of the working directory.
            "HOME": str(home),
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
        }
        completed = subprocess.run(
            [str(helm_binary), *args],
            capture_output=True,
            text=True,
            env=environment,
            timeout=timeout,
            check=False,
        )
        if check and completed.returncode != 0:
            raise AssertionError(
                f"helm {' '.join(args)} exited {completed.returncode}:\n{completed.stderr}"
            )
        return completed

    return run
