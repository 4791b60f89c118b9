"""A real operator's /metrics, scraped over HTTP: the per-ScheduledJob gauges follow the object
(its runs, a suspension, its deletion) and the leading maintainer's window gauges count the
runs that ended, from PostgreSQL; the mirror's pass counters show what it skipped."""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.store.hot_queue import outbox
from support.operator import (
    OperatorProcess,
    RunnerProcess,
    StoreWorker,
    apply,
    get_json,
    running,
    scheduled_job_manifest,
    wait_until,
)

pytestmark = pytest.mark.timeout(240)

PLUGIN = Path(sys.executable).parent / "kubectl-sundial"


def _get(
    port: int,
    path: str,
    token: str | None = None,
    *,
    context: ssl.SSLContext | None = None,
    scheme: str | None = None,
) -> tuple[int, str]:
    """The status and body of GET ``path`` on the operator's port (0: not open yet, or no
    connection made); over HTTPS with ``context``."""
    scheme = scheme or ("https" if context is not None else "http")
    request = urllib.request.Request(f"{scheme}://127.0.0.1:{port}{path}")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except (OSError, http.client.HTTPException):  # refused, reset, or TLS not trusted
        return 0, ""


def _scrape(port: int, token: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample the operator serves; none while its HTTP port is not open yet."""
    status, text = _get(port, "/metrics", token)
    if status != 200:
        return {}
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _plugin(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PLUGIN), *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, KUBECONFIG=str(kubeconfig)),
        timeout=60,
        check=False,
    )


@pytest.fixture
def metrics_reader(kubectl: Any, namespace: str) -> Iterator[str]:
    """A token of a ServiceAccount bound to a ClusterRole that may get /metrics, as the
    chart's metrics-reader role and PodMonitor do; the cluster-wide objects go afterwards."""
    role = f"metrics-reader-{namespace}"
    kubectl("create", "serviceaccount", "-n", namespace, "prometheus")
    kubectl("create", "clusterrole", role, "--verb=get", "--non-resource-url=/metrics")
    kubectl(
        "create", "clusterrolebinding", role, f"--clusterrole={role}",
        f"--serviceaccount={namespace}:prometheus",
    )  # fmt: skip
    try:
        yield kubectl("create", "token", "-n", namespace, "prometheus").stdout.strip()
    finally:
        kubectl("delete", "clusterrolebinding", role, "--ignore-not-found")
        kubectl("delete", "clusterrole", role, "--ignore-not-found")


def test_metrics_are_served_only_to_a_caller_the_api_server_lets_get_them(
    metrics_reader: str,
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    kubectl: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    """They name every namespace's jobs: no token is 401, a token of a user without the
    grant is 403, a token that is not Kubernetes' is 401; the probe's /healthz stays open."""
    port = _free_port()
    kubectl("create", "serviceaccount", "-n", namespace, "nosy")
    nosy = kubectl("create", "token", "-n", namespace, "nosy").stdout.strip()
    with running(
        OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path, liveness_port=port)
    ):
        wait_until(lambda: _get(port, "/healthz")[0] == 200, within=60, what="the health port")
        status, body = _get(port, "/metrics")
        assert status == 401 and "bearer token" in body, (status, body)
        status, body = _get(port, "/metrics", "not-a-kubernetes-token")
        assert status == 401 and "does not authenticate" in body, (status, body)
        status, body = _get(port, "/metrics", nosy)
        assert status == 403, (status, body)
        assert f"system:serviceaccount:{namespace}:nosy may not get /metrics" in body, body
        status, body = _get(port, "/metrics", metrics_reader)
        assert status == 200 and "sundial_maintainer_leading" in body, (status, body[:300])


def test_with_a_certificate_the_metrics_are_served_over_https_only(
    metrics_reader: str,
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
) -> None:
    """The scrape's token crosses the network only inside TLS: the metrics answer on their
    own port over HTTPS, verified with the certificate's CA, to the token the API server lets
    get /metrics; the health port keeps /healthz for the probes and sends /metrics away."""
    cert, key = tmp_path / "metrics.crt", tmp_path / "metrics.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", "/CN=sundial-operator", "-addext",
         "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    health, metrics = _free_port(), _free_port()
    verified = ssl.create_default_context(cafile=str(cert))
    tls = ["--metrics-tls-cert", str(cert), "--metrics-tls-key", str(key)]
    with running(
        OperatorProcess(
            operator_dsn, kubeconfig, namespace, tmp_path, liveness_port=health,
            extra_args=[*tls, "--metrics-port", str(metrics)],
        )
    ):  # fmt: skip
        wait_until(lambda: _get(health, "/healthz")[0] == 200, within=60, what="the health port")
        status, body = _get(health, "/metrics", metrics_reader)
        assert status == 404 and f"served over HTTPS on port {metrics}" in body, (status, body)
        status, body = _get(metrics, "/metrics", context=verified)
        assert status == 401 and "bearer token" in body, (status, body)
        status, body = _get(metrics, "/metrics", metrics_reader, context=verified)
        assert status == 200 and "sundial_maintainer_leading" in body, (status, body[:300])
        # Plain HTTP on the TLS port gets no metrics; another CA's client does not trust it.
        assert _get(metrics, "/metrics", metrics_reader, scheme="http")[0] != 200
        assert (
            _get(metrics, "/metrics", metrics_reader, context=ssl.create_default_context())[0] == 0
        )


def test_the_operator_serves_scheduled_job_gauges_and_the_window_figures(
    metrics_reader: str,
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    kubectl: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    port = _free_port()
    job = (("name", "nightly"), ("namespace", namespace))

    def value(name: str, labels: tuple[tuple[str, str], ...] = job) -> float | None:
        return _scrape(port, metrics_reader).get((name, labels))

    with running(
        OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path, liveness_port=port)
    ):
        apply(kubectl, namespace, scheduled_job_manifest("nightly", schedule="0 0 1 1 *"))

        def succeeded() -> float | None:
            return value("sundial_scheduledjob_last_successful_timestamp_seconds")

        # A fire of the schedule now (a jobRef JobRun is a run of the job, not of the
        # schedule, and leaves lastSuccessfulTime alone).
        kubectl("annotate", "-n", namespace, "scheduledjob", "nightly", "sundial.dev/run-now=1")
        with StoreWorker(operator_dsn):
            try:
                last = wait_until(succeeded, within=90, what="the last-success gauge")
            except AssertionError as error:
                shown = {
                    k: v for k, v in _scrape(port, metrics_reader).items() if "scheduledjob" in k[0]
                }
                status = kubectl("get", "-n", namespace, "sj", "nightly", "-o", "json").stdout
                raise AssertionError(f"{error}\nscraped: {shown}\nobject: {status}") from None
        assert last > 1.7e9
        assert value("sundial_scheduledjob_next_schedule_timestamp_seconds") is not None
        assert value("sundial_scheduledjob_active") == 0
        assert value("sundial_scheduledjob_suspended") == 0

        completed = (*job, ("state", "completed"))
        finished = wait_until(
            lambda: value("sundial_window_finished_runs", completed),
            within=60,
            what="the maintainer's monitor pass",
        )
        assert finished == 1

        kubectl(
            "patch", "-n", namespace, "scheduledjob", "nightly", "--type=merge",
            "-p", json.dumps({"spec": {"suspend": True}}),
        )  # fmt: skip
        wait_until(
            lambda: value("sundial_scheduledjob_suspended") == 1,
            within=60,
            what="the suspended gauge",
        )

        kubectl("delete", "-n", namespace, "scheduledjob", "nightly")
        wait_until(
            lambda: (
                value("sundial_scheduledjob_active") is None
                and value("sundial_scheduledjob_last_successful_timestamp_seconds") is None
            ),
            within=60,
            what="the ScheduledJob's series to go with it",
        )


def test_at_rest_the_mirror_skips_settled_scheduled_jobs_and_still_follows_a_change(
    metrics_reader: str,
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    kubectl: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    port = _free_port()

    def count(result: str) -> float:
        samples = _scrape(port, metrics_reader)
        return samples.get(("sundial_mirror_scheduled_jobs_total", (("result", result),)), 0.0)

    def passes(kind: str) -> float:
        samples = _scrape(port, metrics_reader)
        return samples.get(("sundial_mirror_passes_total", (("kind", kind),)), 0.0)

    names = ("first", "second", "third")
    with running(
        OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path, liveness_port=port)
    ):
        for name in names:
            apply(kubectl, namespace, scheduled_job_manifest(name, schedule="0 0 1 1 *"))

        def ready() -> bool:
            listing = json.loads(kubectl("get", "-n", namespace, "sj", "-o", "json").stdout)
            return all(
                any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in (item.get("status") or {}).get("conditions", [])
                )
                for item in listing["items"]
            ) and len(listing["items"]) == len(names)

        wait_until(ready, within=60, what="every ScheduledJob Ready")
        # Passes go on every second; once settled, a pass syncs none of the three.
        settled_before = wait_until(
            lambda: (n := count("settled")) >= len(names) * 2 and n,
            within=30,
            what="sweeps that skip the settled ScheduledJobs",
        )
        synced = count("synced")
        wait_until(
            lambda: count("settled") >= settled_before + len(names) * 3,
            within=30,
            what="three more sweeps",
        )
        assert count("synced") == synced, "an idle sweep synced a ScheduledJob whose inputs held"
        # Nothing changes at all: passes go quiet, without even reading the digests.
        quiet = passes("quiet")
        wait_until(lambda: passes("quiet") >= quiet + 3, within=30, what="three quiet passes")

        # A change only PostgreSQL sees (a run of the job completes) still reaches the status.
        kubectl("annotate", "-n", namespace, "scheduledjob", "second", "sundial.dev/run-now=1")
        with StoreWorker(operator_dsn):

            def last_success() -> str | None:
                body = json.loads(
                    kubectl("get", "-n", namespace, "sj", "second", "-o", "json").stdout
                )
                return (body.get("status") or {}).get("lastSuccessfulTime")

            wait_until(last_success, within=90, what="the completed run in the status")
        assert count("synced") > synced


def test_on_the_hot_queue_the_mirror_skips_a_held_run_until_redis_or_the_record_moves(
    metrics_reader: str,
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    kubectl: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    """A claim on the hot queue writes nothing to PostgreSQL; the mirror still shows it (it
    compares Redis's count of leases begun and ended), without reading a ScheduledJob whose
    runs are unfinished again on every pass."""
    port = _free_port()

    def count(result: str) -> float:
        samples = _scrape(port, metrics_reader)
        return samples.get(("sundial_mirror_scheduled_jobs_total", (("result", result),)), 0.0)

    def passes() -> float:
        samples = _scrape(port, metrics_reader)
        return sum(v for (name, _), v in samples.items() if name == "sundial_mirror_passes_total")

    def phase() -> str | None:
        listing = get_json(kubectl, "-n", namespace, "jobruns")["items"]
        return (listing[0].get("status") or {}).get("phase") if listing else None

    def syncs_over_passes(wanted: int) -> float:
        """How many ScheduledJobs the next ``wanted`` passes synced."""
        synced, start = count("synced"), passes()
        wait_until(lambda: passes() >= start + wanted, within=30, what=f"{wanted} passes")
        return count("synced") - synced

    outbox.switch(operator_dsn, on=True)
    redis: ThrowawayRedis
    with throwaway_redis() as redis:
        hot = ["--hot-queue-url", redis.url]
        operator = OperatorProcess(
            operator_dsn, kubeconfig, namespace, tmp_path, liveness_port=port, extra_args=hot
        )
        with running(operator):
            apply(
                kubectl,
                namespace,
                scheduled_job_manifest(
                    "held",
                    schedule="0 0 1 1 *",
                    handler={"name": "tests.until_cancelled", "args": {"seconds": 30}},
                ),
            )
            kubectl("annotate", "-n", namespace, "sj", "held", "sundial.dev/run-now=1")
            wait_until(lambda: phase() == "Pending", within=60, what="the run shown Pending")
            # No runner yet: once its status is written, the pending run is not read again.
            syncs_over_passes(2)
            # At most the one sync that checks what the last one wrote (on every pass: 6).
            assert syncs_over_passes(6) <= 1, "a pending run was read again on every pass"

            with RunnerProcess(operator_dsn, tmp_path, extra_args=hot):
                # The claim moved Redis only, and the status follows it.
                wait_until(lambda: phase() == "Running", within=30, what="the claim shown")
                syncs_over_passes(2)
                assert syncs_over_passes(6) <= 1, "a held run was read again on every pass"
                assert phase() == "Running"
                wait_until(lambda: phase() == "Succeeded", within=60, what="the finish shown")
