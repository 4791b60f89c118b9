"""A tenant reads no neighbour's run history and nobody reads a handler's error text.

team-a's run fails with words of its handler's own in the error. ``bob`` (``edit`` in team-b,
with what the chart's roles fold into it, ``kubectl --as``) reads team-b's history but not
team-a's; going past the API server to the history API's port (as any Pod could) gets no
answer at all; and team-a's own admin reads the failed run without its error text.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import history_api
from support.operator import apply, get_json, scheduled_job_manifest
from support.polling import wait_until
from support.runner_loop import Runners

pytestmark = pytest.mark.timeout(240)

AS_BOB = ("--as", "bob")
SECRET = "card 4111-1111-1111-1111 declined for ACME"
HISTORY = "runs.history.sundial.dev"


@pytest.fixture
def served(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    kubectl: Any,
    team_a: str,
    team_b: str,
    tmp_path: Path,
) -> Iterator[tuple[str, int]]:
    """One operator for both teams and the history API beside it: (its address, its port)."""
    address = history_api.host_address()
    if address is None:
        pytest.skip("no non-loopback IPv4 address: the API server cannot reach this host")
    with history_api.served_on_this_host(
        operator_dsn,
        kubeconfig,
        kubectl,
        team_a,
        tmp_path,
        address=address,
        operator_args=("--namespace", team_b),
    ) as port:
        yield address, port


def _job_run(name: str, job: str, **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": name},
            "spec": {"jobRef": {"name": job}, **spec},
        }
    )


def _finished(kubectl: Any, namespace: str, name: str, phase: str) -> str:
    """Waits for JobRun ``name`` to reach ``phase``; returns its run id."""
    status = wait_until(
        lambda: (
            (s := get_json(kubectl, "-n", namespace, "jr", name).get("status") or {}).get("phase")
            == phase
            and s
        ),
        within=60,
        what=f"{namespace}/{name} to be {phase}",
    )
    return str(status["runId"])


def test_a_tenant_reads_its_own_history_only_and_nobody_reads_error_text(
    served: tuple[str, int],
    operator_dsn: str,
    kubectl: Any,
    team_a: str,
    team_b: str,
    tmp_path: Path,
) -> None:
    address, port = served
    fails = {"handler": {"name": "loop.raise_message"}, "retry": {"maxRetries": 0}}
    apply(kubectl, team_a, scheduled_job_manifest("billing", schedule="0 0 1 1 *", **fails))
    apply(kubectl, team_a, _job_run("charge", "billing", args={"message": SECRET}))
    ours = {"handler": {"name": "loop.noop"}}
    kubectl(
        *AS_BOB, "apply", "-n", team_b, "-f", "-",
        stdin=scheduled_job_manifest("reports", schedule="0 0 1 1 *", **ours),
    )  # fmt: skip
    kubectl(*AS_BOB, "apply", "-n", team_b, "-f", "-", stdin=_job_run("daily", "reports"))
    runners = Runners(tmp_path)
    try:
        runners.start(operator_dsn, "--namespace", team_a, "--namespace", team_b)
        theirs = _finished(kubectl, team_a, "charge", "DeadLettered")  # its one attempt spent
        mine = _finished(kubectl, team_b, "daily", "Succeeded")
    finally:
        for _ in runners.close():
            pass

    # bob reads his own namespace's history, and nothing of team-a's is in it.
    own = kubectl(*AS_BOB, "get", HISTORY, "-n", team_b, "-o", "json")
    assert [item["runId"] for item in json.loads(own.stdout)["items"]] == [mine]
    # team-a's history is closed to him: the API server's RBAC answers before the history API.
    denied = kubectl(*AS_BOB, "get", HISTORY, "-n", team_a, "-o", "json", check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower(), denied
    assert not json.loads(denied.stdout or "{}").get("items")  # kubectl prints an empty List
    across = kubectl(*AS_BOB, "get", HISTORY, "--all-namespaces", check=False)
    assert across.returncode != 0 and "forbidden" in across.stderr.lower(), across

    # Straight to the port, as any Pod on the network could: no client certificate of the
    # API server's front proxy, no answer (the TLS handshake itself fails), and no plain HTTP.
    url = f"https://{address}:{port}/apis/history.sundial.dev/v1alpha1/namespaces/{team_a}/runs"
    headers = {"X-Remote-User": "bob", "X-Remote-Group": "system:masters"}
    anyone = ssl.create_default_context()
    anyone.check_hostname, anyone.verify_mode = False, ssl.CERT_NONE
    for target, context in ((url, anyone), (url.replace("https://", "http://"), None)):
        request = urllib.request.Request(target, headers=headers)
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(request, context=context, timeout=10)

    # team-a's admin reads the failed run, and its error text is not served to anyone.
    raw = kubectl("get", "--raw", f"/apis/history.sundial.dev/v1alpha1/namespaces/{team_a}/runs")
    items = json.loads(raw.stdout)["items"]
    assert [(item["runId"], item["state"]) for item in items] == [(theirs, "dead_lettered")]
    assert items[0]["lastError"] is None
    assert "4111" not in raw.stdout and "ACME" not in raw.stdout
