"""``kubectl sundial history`` through the aggregation layer: each namespace's history for
those who may read that namespace's runs, and for nobody else, whichever way they come.

The operator and ``sundial history-api`` run as processes on this host, the latter serving the
history API on an HTTPS port; a selector-less Service with Endpoints at this host's address
puts it behind an APIService, and the test cluster's API server
(``--enable-aggregator-routing``) dials it with its front-proxy certificate.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from support import history_api
from support.operator import (
    StoreWorker,
    apply,
    get_json,
    scheduled_job_manifest,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)

PLUGIN = Path(sys.executable).parent / "kubectl-sundial"


def _plugin(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PLUGIN), *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, KUBECONFIG=str(config)),
        timeout=60,
        check=False,
    )


def _user_kubeconfig(kubeconfig: Path, kubectl: Any, namespace: str, user: str) -> Path:
    """A kubeconfig whose user is ServiceAccount ``user`` of ``namespace`` (no grants)."""
    kubectl("create", "serviceaccount", "-n", namespace, user)
    token = kubectl("create", "token", "-n", namespace, user).stdout.strip()
    config = yaml.safe_load(kubeconfig.read_text())
    context = config["contexts"][0]
    context["context"]["user"] = user
    context["context"]["namespace"] = namespace
    config["users"] = [{"name": user, "user": {"token": token}}]
    config["current-context"] = context["name"]
    path = kubeconfig.parent / f"{namespace}-{user}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def history_port(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    kubectl: Any,
) -> Iterator[int]:
    """An operator, and the history API beside it registered as v1alpha1.history.sundial.dev."""
    address = history_api.host_address()
    if address is None:
        pytest.skip("no non-loopback IPv4 address: the API server cannot reach this host")
    with history_api.served_on_this_host(
        operator_dsn, kubeconfig, kubectl, namespace, tmp_path, address=address
    ) as port:
        yield port


def _finished_runs(plugin_config: Path, kubectl: Any, namespace: str, dsn: str) -> list[str]:
    apply(kubectl, namespace, scheduled_job_manifest("nightly", schedule="0 0 1 1 *"))
    names = []
    with StoreWorker(dsn):
        for _ in range(3):
            made = _plugin(plugin_config, "run", "nightly", "-n", namespace, "-o", "name")
            assert made.returncode == 0, made
            names.append(made.stdout.strip().split("/")[1])
        for name in names:
            waited = _plugin(plugin_config, "wait", name, "-n", namespace, "--timeout", "50s")
            assert waited.returncode == 0, waited
    run_ids = [get_json(kubectl, "-n", namespace, "jr", name)["status"]["runId"] for name in names]
    for name in names:  # gone from etcd; PostgreSQL keeps them
        kubectl("delete", "-n", namespace, "jr", name)
    return sorted(run_ids, key=int, reverse=True)


def test_history_is_read_per_namespace_under_rbac(
    history_port: int,
    kubectl: Any,
    kubeconfig: Path,
    namespace: str,
    operator_dsn: str,
) -> None:
    run_ids = _finished_runs(kubeconfig, kubectl, namespace, operator_dsn)

    listed = _plugin(kubeconfig, "history", "nightly", "-n", namespace, "-o", "json")
    assert listed.returncode == 0, listed
    items = json.loads(listed.stdout)["items"]
    assert [item["runId"] for item in items] == run_ids
    assert {item["state"] for item in items} == {"completed"}
    assert all(item["lastError"] is None for item in items)
    paged = _plugin(kubeconfig, "history", "nightly", "-n", namespace, "--limit", "2")
    assert len(paged.stdout.splitlines()) == 3, paged  # the header and two runs
    everything = _plugin(kubeconfig, "history", "nightly", "-n", namespace, "--all")
    assert all(run_id in everything.stdout for run_id in run_ids)
    # kubectl itself lists it as a resource, with its own paging (limit and continue).
    raw = kubectl(
        "get", "runs.history.sundial.dev", "-n", namespace, "--chunk-size=2", "-o", "json"
    )
    assert [item["metadata"]["name"] for item in json.loads(raw.stdout)["items"]] == run_ids

    reader = _user_kubeconfig(kubeconfig, kubectl, namespace, "reader")
    forbidden = _plugin(reader, "history", "nightly")
    assert forbidden.returncode == 6, forbidden
    assert "runs.history.sundial.dev" in forbidden.stderr and "'list'" in forbidden.stderr
    kubectl(
        "create", "role", "-n", namespace, "history", "--verb=list",
        "--resource=runs.history.sundial.dev",
    )  # fmt: skip
    kubectl(
        "create", "rolebinding", "-n", namespace, "history", "--role=history",
        f"--serviceaccount={namespace}:reader",
    )  # fmt: skip
    allowed = wait_until(
        lambda: (r := _plugin(reader, "history", "nightly")).returncode == 0 and r,
        within=30,
        what="the RoleBinding to take effect",
    )
    assert all(run_id in allowed.stdout for run_id in run_ids)
    # The grant is this namespace's: another namespace's history stays closed to the reader.
    elsewhere = _plugin(reader, "history", "nightly", "-n", "kube-system")
    assert elsewhere.returncode == 6, elsewhere
    # And the JobRuns themselves were not granted.
    assert _plugin(reader, "get", "jr").returncode == 6


def _get(url: str, context: ssl.SSLContext, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_only_the_api_servers_front_proxy_gets_an_answer_and_only_for_whom_rbac_allows(
    history_port: int,
    local_cluster: Any,
    kubectl: Any,
    kubeconfig: Path,
    namespace: str,
    operator_dsn: str,
) -> None:
    """Straight to the history API's port: no certificate, the cluster's own admin certificate
    and plain HTTP all fail; the front proxy's certificate with a user the cluster's RBAC
    does not allow gets 403 from the history API itself."""
    _finished_runs(kubeconfig, kubectl, namespace, operator_dsn)
    url = f"https://127.0.0.1:{history_port}/apis/history.sundial.dev/v1alpha1/namespaces/{namespace}/runs"
    as_admin = {"X-Remote-User": "sundial-admin", "X-Remote-Group": "system:masters"}

    anonymous = ssl.create_default_context()
    anonymous.check_hostname, anonymous.verify_mode = False, ssl.CERT_NONE
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        _get(url, anonymous, as_admin)
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _get(url.replace("https://", "http://"), anonymous, as_admin)

    if local_cluster.state_dir is None:
        pytest.skip("the front proxy's key is the test cluster's own (hack/cluster)")
    pki = Path(local_cluster.state_dir) / "pki"
    cluster_admin = ssl.create_default_context()
    cluster_admin.check_hostname, cluster_admin.verify_mode = False, ssl.CERT_NONE
    cluster_admin.load_cert_chain(pki / "admin.crt", pki / "admin.key")
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        _get(url, cluster_admin, as_admin)

    front_proxy = ssl.create_default_context()
    front_proxy.check_hostname, front_proxy.verify_mode = False, ssl.CERT_NONE
    front_proxy.load_cert_chain(pki / "front-proxy-client.crt", pki / "front-proxy-client.key")
    status, body = _get(url, front_proxy, as_admin)
    assert status == 200 and json.loads(body)["items"], body
    stranger = {"X-Remote-User": "system:serviceaccount:default:stranger"}
    status, body = _get(url, front_proxy, stranger)
    assert status == 403, body
    assert json.loads(body)["reason"] == "Forbidden"
    status, body = _get(url, front_proxy, {})  # the front proxy always names someone
    assert status == 401, body
