"""A JobRun waiting for its namespace's active-run quota gets one QuotaExceeded Event, however
many passes find it waiting with a body read before the wait was written: the create handler
and a mirror pass side by side, or a pass whose informer had not caught up.

No operator process runs here: the test makes the passes overlap, against the real apiserver
and a real PostgreSQL, which a running operator only does some of the time.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from kubernetes import client, config

from sundial.operator import context, events, job_runs, kube
from sundial.scheduling import clock
from sundial.store import pool as store_pool
from sundial.store import quotas
from support.operator import apply, condition, events_for, get_json, pod_job_run


def _context(pool: store_pool.Pool, kubeconfig: Path) -> context.Context:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
    api = kube.KubeApi(client.ApiClient(configuration))
    system = clock.SystemClock()
    return context.Context(pool, api, events.EventRecorder(api, system), system)


async def _post_all(recorder: events.EventRecorder) -> None:
    stop = asyncio.Event()
    posting = asyncio.create_task(recorder.run(stop))
    for _ in range(200):
        await asyncio.sleep(0.05)
        if recorder.queued == 0:
            break
    stop.set()
    await asyncio.wait_for(posting, 10)


def test_overlapping_passes_over_a_stale_body_report_the_quota_wait_once(
    sundial_crds_applied: None,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    kubeconfig: Path,
) -> None:
    first = json.loads(pod_job_run("first", "succeed"))
    first["spec"]["delaySeconds"] = 3600  # active until the test ends
    apply(kubectl, namespace, json.dumps(first))
    apply(kubectl, namespace, pod_job_run("second", "succeed"))
    first_body = get_json(kubectl, "-n", namespace, "jr", "first")
    stale = get_json(kubectl, "-n", namespace, "jr", "second")  # read before any wait

    async def passes() -> None:
        pool = await store_pool.open_pool(operator_dsn, min_size=1, max_size=4)
        ctx = _context(pool, kubeconfig)
        try:
            await quotas.configure(pool, per_namespace={namespace: 1})
            await job_runs.reconcile(ctx, first_body)
            # two passes side by side, then a late one, all with the body from before the wait
            await asyncio.gather(job_runs.reconcile(ctx, stale), job_runs.reconcile(ctx, stale))
            await _post_all(ctx.recorder)
            await job_runs.reconcile(ctx, stale)
            await _post_all(ctx.recorder)
        finally:
            await quotas.configure(pool, per_namespace={})
            ctx.api.close()
            await pool.close()

    asyncio.run(passes())

    body = get_json(kubectl, "-n", namespace, "jr", "second")
    assert (condition(body, "Reconciling") or {}).get("reason") == "QuotaExceeded", body
    assert (body.get("status") or {}).get("runId") is None
    warnings = [
        e for e in events_for(kubectl, namespace, "second") if e["reason"] == "QuotaExceeded"
    ]
    occurrences = sum(e.get("count") or 1 for e in warnings)
    assert occurrences == 1, warnings
