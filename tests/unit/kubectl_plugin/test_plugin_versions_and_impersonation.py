"""What the plugin checks before it reaches a cluster: ``version --client``, impersonation
arguments, and ``run --wait``'s timeout; and that impersonation puts kubectl's headers on the
requests. The cluster's side (discovery, RBAC judging the impersonated user, a run followed to
its end) is in tests/cluster/operator/test_kubectl_plugin.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kubernetes import client as kube_client

from sundial.kubectl_plugin import client, versions

PLUGIN = Path(sys.executable).parent / "kubectl-sundial"


def _plugin(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # A kubeconfig that does not exist: anything that gets as far as connecting fails with 7.
    return subprocess.run(
        [str(PLUGIN), *args, "--kubeconfig", str(tmp_path / "absent")]
        if args[0] != "version" or "--client" not in args
        else [str(PLUGIN), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_version_client_prints_the_installed_distribution_without_a_cluster(
    tmp_path: Path,
) -> None:
    done = _plugin("version", "--client", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Client Version: {versions.client_version()}"
    assert versions.client_version()[0].isdigit()


def test_as_group_without_as_is_a_usage_error_before_connecting(tmp_path: Path) -> None:
    done = _plugin("get", "sj", "--as-group", "team-a", tmp_path=tmp_path)
    assert done.returncode == 2, done
    assert "--as-group needs --as" in done.stderr


def test_a_bad_wait_timeout_is_refused_before_the_job_run_is_created(tmp_path: Path) -> None:
    done = _plugin("run", "nightly", "--wait", "--timeout", "5q", tmp_path=tmp_path)
    assert done.returncode == 2, done
    assert "--timeout: '5q' is not a duration" in done.stderr


def test_impersonation_sets_kubectls_headers_and_nothing_else() -> None:
    api_client = kube_client.ApiClient()
    try:
        client.Impersonation("jane", "team-a").apply(api_client)
        assert api_client.default_headers["Impersonate-User"] == "jane"
        assert api_client.default_headers["Impersonate-Group"] == "team-a"
        plain = kube_client.ApiClient()
        client.Impersonation().apply(plain)
        assert not any(h.startswith("Impersonate-") for h in plain.default_headers)
        plain.close()
    finally:
        api_client.close()
