"""The controller-manager runs: deleting an owner garbage-collects what it owns.

Sundial relies on owner references to clean up the Pods, Jobs and ConfigMaps it creates
for a run, so the garbage collector and the Job controller must really be there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client


def test_deleting_an_owner_collects_its_dependents(
    core_api: client.CoreV1Api, namespace: str, wait_gone: Callable[..., None]
):
    owner = core_api.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    reference = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid
    )
    core_api.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="dependent", owner_references=[reference])
        ),
    )

    core_api.delete_namespaced_config_map("owner", namespace)

    wait_gone(
        core_api.list_namespaced_config_map, name="dependent", timeout=60, namespace=namespace
    )


def test_foreground_deletion_of_a_job_removes_its_pods_first(
    api_client: client.ApiClient,
    core_api: client.CoreV1Api,
    namespace: str,
    kwok_nodes: list[str],
    make_pod_template: Callable[..., client.V1PodTemplateSpec],
    wait_for: Callable[..., Any],
    wait_gone: Callable[..., None],
):
    batch = client.BatchV1Api(api_client)
    batch.create_namespaced_job(
        namespace,
        client.V1Job(
            metadata=client.V1ObjectMeta(name="long"),
            spec=client.V1JobSpec(
                template=make_pod_template({"sundial.dev/kwok-outcome": "run-forever"}),
                backoff_limit=0,
            ),
        ),
    )
    pod = wait_for(
        core_api.list_namespaced_pod,
        namespace=namespace,
        label_selector="job-name=long",
        condition=lambda p: p.status.phase == "Running",
        timeout=60,
    )

    batch.delete_namespaced_job(
        "long", namespace, body=client.V1DeleteOptions(propagation_policy="Foreground")
    )

    wait_gone(batch.list_namespaced_job, name="long", timeout=60, namespace=namespace)
    # Foreground deletion removes the Job only once its dependents are gone.
    remaining = core_api.list_namespaced_pod(
        namespace, field_selector=f"metadata.name={pod.metadata.name}"
    )
    assert remaining.items == []
