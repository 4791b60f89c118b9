"""Two teams on one cluster: the tenancy tier.

``team_a`` is the neighbour under attack; ``team_b`` is the attacker's namespace, where the
user ``bob`` holds nothing but the built-in ``edit`` ClusterRole (a RoleBinding), as a tenant
of a shared cluster does. ``as_bob`` is an API client that impersonates him (``kubectl --as``),
so every request of an attack passes the apiserver's real authentication and RBAC.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

BOB = "bob"
RBAC_GROUP = "rbac.authorization.k8s.io"


def _namespace(core_api: client.CoreV1Api, prefix: str) -> Iterator[str]:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    core_api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        yield name
    finally:
        core_api.delete_namespace(name)


@pytest.fixture
def team_a(core_api: client.CoreV1Api, namespace: str) -> str:
    """The neighbour's namespace (the cluster tier's fresh ``namespace``: its default
    ServiceAccount exists, so Pods may be created in it)."""
    return namespace


@pytest.fixture
def team_b(core_api: client.CoreV1Api) -> Iterator[str]:
    """The attacker's namespace, where ``bob`` has the built-in ``edit`` and what the chart's
    aggregated roles add to it (Sundial's kinds, and reading the namespace's run history)."""
    rbac = client.RbacAuthorizationV1Api(core_api.api_client)
    for name in _namespace(core_api, "team-b"):
        rbac.create_namespaced_role(
            name,
            client.V1Role(
                metadata=client.V1ObjectMeta(name="sundial-edit"),
                rules=[
                    client.V1PolicyRule(
                        api_groups=["sundial.dev"],
                        resources=["scheduledjobs", "jobruns"],
                        verbs=["get", "list", "watch", "create", "update", "patch", "delete"],
                    ),
                    client.V1PolicyRule(
                        api_groups=["history.sundial.dev"],
                        resources=["runs"],
                        verbs=["get", "list"],
                    ),
                ],
            ),
        )
        for kind, role in (("ClusterRole", "edit"), ("Role", "sundial-edit")):
            rbac.create_namespaced_role_binding(
                name,
                client.V1RoleBinding(
                    metadata=client.V1ObjectMeta(name=f"bob-{role}"),
                    role_ref=client.V1RoleRef(api_group=RBAC_GROUP, kind=kind, name=role),
                    subjects=[client.RbacV1Subject(kind="User", name=BOB, api_group=RBAC_GROUP)],
                ),
            )
        yield name


@pytest.fixture
def as_bob(kubeconfig: Path) -> Iterator[client.ApiClient]:
    """An API client that acts as ``bob`` (the admin kubeconfig, impersonating him)."""
    api = config.new_client_from_config(config_file=str(kubeconfig))
    api.set_default_header("Impersonate-User", BOB)
    try:
        yield api
    finally:
        api.close()
