"""The native CronJob controller runs a `*/1 * * * *` schedule to completion.

This is the anchor Sundial is later measured against: the same cluster, Kubernetes' own
CronJob -> Job -> Pod path. It waits for the next minute boundary, so it takes up to ~70s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client


def test_every_minute_cronjob_creates_a_job_whose_pod_completes(
    api_client: client.ApiClient,
    core_api: client.CoreV1Api,
    namespace: str,
    make_pod_template: Callable[..., client.V1PodTemplateSpec],
    wait_for: Callable[..., Any],
):
    batch = client.BatchV1Api(api_client)
    batch.create_namespaced_cron_job(
        namespace,
        client.V1CronJob(
            metadata=client.V1ObjectMeta(name="every-minute"),
            spec=client.V1CronJobSpec(
                schedule="*/1 * * * *",
                concurrency_policy="Forbid",
                job_template=client.V1JobTemplateSpec(
                    spec=client.V1JobSpec(template=make_pod_template(), backoff_limit=0)
                ),
            ),
        ),
    )

    job = wait_for(
        batch.list_namespaced_job,
        namespace=namespace,
        condition=lambda j: any(
            o.kind == "CronJob" and o.name == "every-minute"
            for o in j.metadata.owner_references or []
        ),
        timeout=90,
    )
    job_name = job.metadata.name

    completed = wait_for(
        batch.list_namespaced_job,
        namespace=namespace,
        name=job_name,
        condition=lambda j: any(
            c.type == "Complete" and c.status == "True" for c in j.status.conditions or []
        ),
        timeout=90,
    )
    assert completed.status.succeeded == 1

    [pod] = core_api.list_namespaced_pod(namespace, label_selector=f"job-name={job_name}").items
    assert pod.status.phase == "Succeeded"
    assert pod.status.container_statuses[0].state.terminated.exit_code == 0

    cron_job = wait_for(
        batch.list_namespaced_cron_job,
        namespace=namespace,
        name="every-minute",
        condition=lambda c: c.status.last_successful_time is not None,
        timeout=30,
    )
    assert cron_job.status.last_schedule_time is not None
