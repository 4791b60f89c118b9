"""Two operators on one database: one leads, the other stands by (alive) and takes over when
the leader stops."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path
from typing import Any

from support.operator import OperatorProcess, get_json, scheduled_job_manifest
from support.polling import wait_until


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def role(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            body = json.loads(response.read())
    except OSError:
        return None
    assert body["status"] == "ok"
    return str(body["role"])


def test_a_standby_waits_alive_and_takes_over(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    kubectl: Any,
):
    first_port, second_port = free_port(), free_port()
    first = OperatorProcess(
        operator_dsn, kubeconfig, namespace, tmp_path, liveness_port=first_port, name="first"
    )
    second = OperatorProcess(
        operator_dsn, kubeconfig, namespace, tmp_path, liveness_port=second_port, name="second"
    )
    first.start()
    try:
        wait_until(lambda: role(first_port) == "leader", within=20, what="the first to lead")
        second.start()
        wait_until(lambda: role(second_port) == "standby", within=20, what="a standby")
        assert "operator running" not in second.logs()

        assert first.stop() == 0
        kubectl("apply", "-n", namespace, "-f", "-", stdin=scheduled_job_manifest("handover"))
        # The lease (TTL 5 s) was released on a clean stop: the standby leads and reconciles.
        wait_until(lambda: role(second_port) == "leader", within=20, what="the takeover")
        wait_until(
            lambda: (get_json(kubectl, "-n", namespace, "sj", "handover").get("status") or {}).get(
                "nextScheduleTime"
            ),
            within=30,
            what="the new leader to reconcile",
        )
    finally:
        first.stop()
        second.stop()
