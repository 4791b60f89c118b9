"""The cached binaries are the pinned versions (hack/cluster/versions.env), stamped in."""

from __future__ import annotations

import subprocess

import pytest

from sundial.localdev import cluster


def _pinned() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (cluster.find_hack_dir() / "versions.env").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pins[key] = value
    return pins


def _version_output(binary: str, *args: str) -> str:
    path = cluster.bin_dir() / binary
    return subprocess.run([str(path), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def pins() -> dict[str, str]:
    missing = cluster.missing_binaries()
    if missing:
        pytest.skip(f"binaries not built ({', '.join(missing)}): {cluster.GO_INSTALL_HINT}")
    return _pinned()


@pytest.mark.parametrize(
    "binary", ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"]
)
def test_kubernetes_binaries_report_the_pinned_version(binary: str, pins: dict[str, str]):
    assert _version_output(binary, "--version").strip() == f"Kubernetes {pins['KUBE_VERSION']}"


def test_kubectl_reports_the_pinned_version(pins: dict[str, str]):
    assert f"Client Version: {pins['KUBE_VERSION']}" in _version_output(
        "kubectl", "version", "--client"
    )


def test_etcd_kwok_and_helm_report_their_pinned_versions(pins: dict[str, str]):
    assert f"etcd Version: {pins['ETCD_VERSION'].removeprefix('v')}" in _version_output(
        "etcd", "--version"
    )
    assert f"kwok version {pins['KWOK_VERSION']}" in _version_output("kwok", "--version")
    assert f"kwokctl version {pins['KWOK_VERSION']}" in _version_output("kwokctl", "--version")
    assert f'Version:"{pins["HELM_VERSION"]}"' in _version_output("helm", "version")
