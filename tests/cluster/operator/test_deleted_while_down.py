"""A ScheduledJob deleted while no operator watched (its finalizer removed by hand) stops
firing when the operator comes back, and a new ScheduledJob may take its name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from support.operator import (
    OperatorProcess,
    apply,
    condition,
    get_json,
    running,
    scheduled_job_manifest,
)
from support.polling import wait_until

pytestmark = [pytest.mark.usefixtures("sundial_crds_applied"), pytest.mark.timeout(150)]


def _active(dsn: str, schedule_id: str) -> bool | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT active FROM schedules WHERE id = %s", (schedule_id,)).fetchone()
    return None if row is None else bool(row[0])


def _ready(kubectl: Any, namespace: str, name: str) -> dict[str, Any] | None:
    body = get_json(kubectl, "-n", namespace, "sj", name)
    found = condition(body, "Ready") or {}
    return body if found.get("status") == "True" else None


def test_a_scheduled_job_deleted_while_the_operator_was_down_stops_and_frees_its_name(
    operator_dsn: str, kubeconfig: Path, namespace: str, tmp_path: Path, kubectl: Any
) -> None:
    def operator(log: str) -> OperatorProcess:
        return OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path / log)

    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    with running(operator("first")):
        apply(kubectl, namespace, scheduled_job_manifest("nightly", schedule="0 3 * * *"))
        old = wait_until(
            lambda: _ready(kubectl, namespace, "nightly"), within=60, what="nightly stored"
        )
    old_id = old["metadata"]["uid"]
    assert _active(operator_dsn, old_id) is True

    # No operator: the finalizer goes by hand, so the deletion completes unseen.
    kubectl(
        "patch", "-n", namespace, "sj", "nightly", "--type=merge",
        "-p", json.dumps({"metadata": {"finalizers": None}}),
    )  # fmt: skip
    kubectl("delete", "-n", namespace, "sj", "nightly", "--wait=true")
    apply(kubectl, namespace, scheduled_job_manifest("nightly", schedule="30 4 * * *"))

    with running(operator("second")):
        new = wait_until(
            lambda: _ready(kubectl, namespace, "nightly"),
            within=60,
            what="the new nightly stored under the freed name",
        )
        assert new["metadata"]["uid"] != old_id
        assert _active(operator_dsn, new["metadata"]["uid"]) is True
        assert _active(operator_dsn, old_id) is False
