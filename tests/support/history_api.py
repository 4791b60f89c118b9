"""The history API behind the test cluster's aggregation layer, served by a ``sundial
history-api`` process on this host.

An APIService is cluster-wide and an unavailable one stalls discovery (and with it namespace
deletion), so ``registered`` removes it as soon as the test is done, before anything else.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.operator import OperatorProcess, apply, running, wait_until

API_SERVICE = "v1alpha1.history.sundial.dev"


@dataclass(frozen=True)
class ServingCertificate:
    ca: Path
    cert: Path
    key: Path

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.read_bytes()).decode()


class HistoryApiProcess(OperatorProcess):
    """``python -m sundial history-api`` on ``port`` with ``cert`` and ``key``, as the
    kubeconfig's user; started, stopped and logged as an operator process is."""

    def __init__(
        self, dsn: str, kubeconfig: Path, log_dir: Path, port: int, cert: Path, key: Path
    ) -> None:
        super().__init__(dsn, kubeconfig, None, log_dir, name="history-api")
        self.port, self.cert, self.key = port, cert, key

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "sundial", "history-api", "--dsn", self.dsn,
            "--port", str(self.port), "--tls-cert", str(self.cert), "--tls-key", str(self.key),
        ]  # fmt: skip


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def serving_certificate(directory: Path, service: str, namespace: str) -> ServingCertificate:
    """A CA of its own and a certificate it signed for ``service.namespace.svc``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.crt", directory / "ca.key"
    cert, key, request = directory / "tls.crt", directory / "tls.key", directory / "tls.csr"
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(ca_key))
    _openssl(
        "req", "-x509", "-new", "-key", str(ca_key), "-subj", "/CN=history-test-ca",
        "-days", "2", "-addext", "basicConstraints=critical,CA:TRUE", "-out", str(ca),
    )  # fmt: skip
    name = f"{service}.{namespace}.svc"
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key))
    _openssl("req", "-new", "-key", str(key), "-subj", f"/CN={name}", "-out", str(request))
    extensions = directory / "extensions.cnf"
    extensions.write_text(f"subjectAltName=DNS:{name},DNS:{service}.{namespace}\n")
    _openssl(
        "x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-days", "2", "-extfile", str(extensions), "-out", str(cert),
    )  # fmt: skip
    return ServingCertificate(ca=ca, cert=cert, key=key)


def api_service(service: str, namespace: str, ca_bundle: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": API_SERVICE},
        "spec": {
            "group": "history.sundial.dev",
            "version": "v1alpha1",
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
            "service": {"name": service, "namespace": namespace, "port": 443},
            "caBundle": ca_bundle,
        },
    }


def available(kubectl: Callable[..., Any]) -> tuple[bool, str]:
    found = kubectl("get", "apiservice", API_SERVICE, "-o", "json", check=False)
    if found.returncode != 0:
        return False, found.stderr
    conditions = json.loads(found.stdout).get("status", {}).get("conditions") or []
    for condition in conditions:
        if condition.get("type") == "Available":
            return condition.get("status") == "True", condition.get("message", "")
    return False, "no Available condition yet"


@contextlib.contextmanager
def registered(kubectl: Callable[..., Any], manifest: dict[str, Any] | None) -> Iterator[None]:
    """``manifest`` applied (None: made by someone else, a chart), waited for until Available,
    and deleted on the way out."""
    try:
        if manifest is not None:
            kubectl("apply", "-f", "-", stdin=json.dumps(manifest))
        wait_until(
            lambda: available(kubectl)[0],
            within=60,
            what=f"APIService {API_SERVICE} to be Available ({available(kubectl)[1]})",
        )
        yield
    finally:
        kubectl("delete", "apiservice", API_SERVICE, "--ignore-not-found", check=False)


def host_endpoints(
    service: str, address: str, port: int, pod: str, namespace: str
) -> list[dict[str, Any]]:
    """A selector-less Service on port 443 and Endpoints naming ``pod`` at ``address:port``."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service},
            "spec": {"ports": [{"port": 443, "targetPort": port}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": service},
            "subsets": [
                {
                    "addresses": [
                        {
                            "ip": address,
                            "targetRef": {"kind": "Pod", "name": pod, "namespace": namespace},
                        }
                    ],
                    "ports": [{"port": port}],
                }
            ],
        },
    ]


def host_address() -> str | None:
    """This host's address on its default route (a UDP connect sends no packet)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.254.254.254", 9))
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def served_on_this_host(
    dsn: str,
    kubeconfig: Path,
    kubectl: Callable[..., Any],
    namespace: str,
    directory: Path,
    *,
    address: str,
    operator_args: tuple[str, ...] = (),
) -> Iterator[int]:
    """An operator for ``namespace`` (and what ``operator_args`` add), and ``sundial
    history-api`` beside it on this host at ``address``, registered with the test cluster's
    aggregation layer as v1alpha1.history.sundial.dev through a Service in ``namespace``.
    Yields the history API's port."""
    service = "sundial-history-test"
    port = _free_port()
    certificate = serving_certificate(directory / "tls", service, namespace)
    items = host_endpoints(service, address, port, "history-host", namespace)
    apply(kubectl, namespace, json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    operator = OperatorProcess(
        dsn, kubeconfig, namespace, directory, extra_args=list(operator_args)
    )
    history = HistoryApiProcess(dsn, kubeconfig, directory, port, certificate.cert, certificate.key)
    manifest = api_service(service, namespace, certificate.ca_bundle)
    with running(operator), running(history), registered(kubectl, manifest):
        yield port
