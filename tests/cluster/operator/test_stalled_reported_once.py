"""A Stalled JobRun gets one Warning Event for what it says, however many passes find it with a
body read before the condition was written (the create handler beside a mirror pass, or a pass
whose informer had not caught up); a different message is a new fact and a new Event.

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
from support.operator import apply, condition, events_for, get_json


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


def _job_run(name: str, owner: str) -> str:
    return json.dumps(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": name},
            "spec": {"jobRef": {"name": owner}},
        }
    )


def test_overlapping_passes_over_a_stale_body_report_a_stalled_job_run_once_per_message(
    sundial_crds_applied: None,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    kubeconfig: Path,
) -> None:
    apply(kubectl, namespace, _job_run("orphan", "nobody"))
    stale = get_json(kubectl, "-n", namespace, "jr", "orphan")  # read before any condition
    # the same JobRun saying something else (spec.jobRef is immutable, so only a pass's copy
    # can name another missing owner): the message changes
    changed = json.loads(json.dumps(stale))
    changed["spec"]["jobRef"]["name"] = "somebody-else"

    async def passes() -> None:
        pool = await store_pool.open_pool(operator_dsn, min_size=1, max_size=4)
        ctx = _context(pool, kubeconfig)
        try:
            await asyncio.gather(job_runs.reconcile(ctx, stale), job_runs.reconcile(ctx, stale))
            await _post_all(ctx.recorder)
            await job_runs.reconcile(ctx, stale)
            await _post_all(ctx.recorder)
            await asyncio.gather(job_runs.reconcile(ctx, changed), job_runs.reconcile(ctx, changed))
            await _post_all(ctx.recorder)
        finally:
            ctx.api.close()
            await pool.close()

    asyncio.run(passes())

    body = get_json(kubectl, "-n", namespace, "jr", "orphan")
    stalled = condition(body, "Stalled") or {}
    assert stalled.get("reason") == "JobNotFound", body
    assert "'somebody-else'" in stalled.get("message", ""), body
    warnings = [e for e in events_for(kubectl, namespace, "orphan") if e["reason"] == "JobNotFound"]
    told = {}
    for event in warnings:
        told[event["message"]] = told.get(event["message"], 0) + (event.get("count") or 1)
    assert sorted(told.values()) == [1, 1], warnings
    assert any("'nobody'" in message for message in told), told
    assert any("'somebody-else'" in message for message in told), told
