"""A Pod template cannot obtain what the tenant could not create itself.

The launcher creates job Pods with the operator's rights, so it holds each Pod to the
namespace's level before creating it: restricted unless a platform admin labels the namespace
``sundial.dev/pod-security``. The refusal fails the run at once with what to change.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from kubernetes import client

from sundial.pods import pod_security
from support.pods import (
    Job,
    maintenance,
    run_pods,
    running_launcher,
    settings,
    template,
    wait_state,
)

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(120)]


def _hostile() -> dict[str, Any]:
    body = template()
    body["spec"].update(
        hostNetwork=True,
        hostPID=True,
        volumes=[{"name": "root", "hostPath": {"path": "/"}}],
    )
    body["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    return body


async def test_a_privileged_template_gets_no_pod_unless_the_namespace_allows_it(
    pool, api_client, core_api: client.CoreV1Api, namespace
):
    job = Job(pool, namespace, name="escape")
    await job.define(_hostile(), retry={"maxRetries": 3})
    run_id = await job.submit()
    launcher_settings = settings(
        namespace, f"launcher-{uuid.uuid4().hex[:6]}", namespace_ttl_seconds=0.0
    )
    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings):
        row = await wait_state(pool, run_id, "failed", "dead_lettered", "completed")
        assert row["state"] == "failed" and row["attempt"] == 1  # permanent: not retried
        assert row["pod_reason"] == "PodSecurity"
        for words in (
            "Pod Security restricted",
            "hostNetwork",
            "hostPID",
            "hostPath",
            "privileged",
        ):
            assert words in row["last_error"], (words, row["last_error"])
        assert run_pods(core_api, namespace, run_id) == []

        # A platform admin opts the namespace out; the launcher re-reads it (no cache here).
        core_api.patch_namespace(
            namespace, {"metadata": {"labels": {pod_security.LEVEL_LABEL: "privileged"}}}
        )
        allowed = await job.submit()
        await wait_state(pool, allowed, "completed")
        [pod] = run_pods(core_api, namespace, allowed)
        assert pod.spec.host_pid is True


async def test_a_namespace_without_the_job_service_account_fails_the_run_saying_so(
    pool, api_client, core_api: client.CoreV1Api, namespace
):
    """All-namespaces mode: the chart makes the token-less job ServiceAccount only where it is
    told; elsewhere the Pod is refused at once with what to do, not retried for minutes."""
    job = Job(pool, namespace, name="lonely")
    await job.define(template())
    run_id = await job.submit()
    manifest = dataclasses.replace(
        settings(namespace, "x").manifest, service_account_name="sundial-job-missing"
    )
    launcher_settings = settings(namespace, f"launcher-{uuid.uuid4().hex[:6]}", manifest=manifest)
    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings):
        row = await wait_state(pool, run_id, "failed", "dead_lettered", "completed", within=30)
    assert (row["state"], row["attempt"], row["pod_reason"]) == (
        "failed",
        1,
        "ServiceAccountMissing",
    )
    assert (
        "'sundial-job-missing'" in row["last_error"] and "jobPods.namespaces" in row["last_error"]
    )
    assert run_pods(core_api, namespace, run_id) == []
