"""A ScheduledJob and a JobRun that names it (``jobRef``) applied in one manifest: the operator
may see the JobRun's event before the ScheduledJob's. The JobRun must still be submitted on
that first reconcile (Pending, with its run), never reported Stalled ``JobNotFound`` while
the ScheduledJob it names exists.

No operator process runs here: the test makes the JobRun's reconcile come first, against the
real apiserver and a real PostgreSQL, which a running operator only does some of the time.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import uuid
from pathlib import Path
from typing import Any

import psycopg
from kubernetes import client, config

from sundial.operator import context, events, job_runs, kube
from sundial.scheduling import clock
from sundial.store import pool as store_pool
from support.operator import get_json, scheduled_job_manifest


def _context(pool: store_pool.Pool, kubeconfig: Path) -> context.Context:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
    api = kube.KubeApi(client.ApiClient(configuration))
    system = clock.SystemClock()
    return context.Context(pool, api, events.EventRecorder(api, system), system)


def test_a_job_ref_run_reconciled_before_its_scheduled_job_is_stored_is_submitted(
    sundial_crds_applied: None,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    kubeconfig: Path,
) -> None:
    later = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": "nightly-later"},
        "spec": {"jobRef": {"name": "nightly"}, "delaySeconds": 3600, "args": {"b": 2}},
    }
    owner = json.loads(
        scheduled_job_manifest(
            "nightly", schedule="0 3 * * *", handler={"name": "tests.ok", "args": {"a": 1}}
        )
    )
    listed = {"apiVersion": "v1", "kind": "List", "items": [owner, later]}
    kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(listed))
    body = get_json(kubectl, "-n", namespace, "jr", "nightly-later")
    owner_uid = uuid.UUID(get_json(kubectl, "-n", namespace, "sj", "nightly")["metadata"]["uid"])

    async def reconcile_the_job_run_first() -> None:
        pool = await store_pool.open_pool(operator_dsn, min_size=1, max_size=2)
        ctx = _context(pool, kubeconfig)
        try:
            await job_runs.reconcile(ctx, body)
        finally:
            ctx.api.close()
            await pool.close()

    asyncio.run(reconcile_the_job_run_first())

    status = get_json(kubectl, "-n", namespace, "jr", "nightly-later").get("status") or {}
    stalled = [c for c in status.get("conditions") or () if c["type"] == "Stalled"]
    assert all(c["status"] == "False" for c in stalled), status
    assert status.get("phase") == "Pending", status
    with psycopg.connect(operator_dsn) as conn:
        row = conn.execute(
            "SELECT job_id, args, run_at FROM job_runs WHERE id = %s", (int(status["runId"]),)
        ).fetchone()
    assert row is not None
    job_id, args, run_at = row
    assert job_id == owner_uid and args == {"a": 1, "b": 2}
    created = datetime.datetime.fromisoformat(body["metadata"]["creationTimestamp"])
    assert run_at == created + datetime.timedelta(seconds=3600)
