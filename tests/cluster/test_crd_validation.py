"""The apiserver enforces a CRD's structural schema and its CEL rules.

Sundial's ScheduledJob and JobRun validation lives in their CRDs (bounded fields, CEL
cross-field rules), so it must be proven against a real kube-apiserver, not a model.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

CEL_MESSAGE = "minReplicas must not exceed maxReplicas"


@pytest.fixture
def widget_crd(api_client: client.ApiClient, wait_for: Callable[..., Any]) -> Iterator[str]:
    """A namespaced Widget CRD in a group unique to this test; yields the group."""
    group = f"t{uuid.uuid4().hex[:8]}.test.sundial.dev"
    name = f"widgets.{group}"
    extensions = client.ApiextensionsV1Api(api_client)
    extensions.create_custom_resource_definition(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {
                                        "type": "object",
                                        "required": ["minReplicas", "maxReplicas"],
                                        "properties": {
                                            "minReplicas": {"type": "integer", "minimum": 0},
                                            "maxReplicas": {"type": "integer", "maximum": 100},
                                        },
                                        "x-kubernetes-validations": [
                                            {
                                                "rule": "self.minReplicas <= self.maxReplicas",
                                                "message": CEL_MESSAGE,
                                            }
                                        ],
                                    }
                                },
                            }
                        },
                    }
                ],
            },
        }
    )
    wait_for(
        extensions.list_custom_resource_definition,
        name=name,
        condition=lambda crd: any(
            c.type == "Established" and c.status == "True" for c in crd.status.conditions or []
        ),
        timeout=60,
    )
    try:
        yield group
    finally:
        extensions.delete_custom_resource_definition(name)


def _widget(name: str, group: str, minimum: Any, maximum: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"minReplicas": minimum, "maxReplicas": maximum},
    }


def _create_widget(
    api_client: client.ApiClient, namespace: str, group: str, body: dict[str, Any]
) -> dict[str, Any]:
    result: dict[str, Any] = client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        group, "v1", namespace, "widgets", body
    )
    return result


def _rejection(
    api_client: client.ApiClient, namespace: str, group: str, body: dict[str, Any]
) -> tuple[int, str]:
    with pytest.raises(ApiException) as raised:
        _create_widget(api_client, namespace, group, body)
    return raised.value.status, json.loads(raised.value.body)["message"]


def test_valid_object_is_accepted(api_client: client.ApiClient, namespace: str, widget_crd: str):
    created = _create_widget(api_client, namespace, widget_crd, _widget("ok", widget_crd, 1, 3))
    assert created["spec"] == {"minReplicas": 1, "maxReplicas": 3}
    assert created["metadata"]["uid"]


def test_cel_rule_rejects_with_the_apiservers_message(
    api_client: client.ApiClient, namespace: str, widget_crd: str
):
    status, message = _rejection(
        api_client, namespace, widget_crd, _widget("inverted", widget_crd, 5, 2)
    )
    assert status == 422
    assert message == (
        f'Widget.{widget_crd} "inverted" is invalid: spec: Invalid value: {CEL_MESSAGE}'
    )


def test_structural_schema_rejects_wrong_types_and_bounds(
    api_client: client.ApiClient, namespace: str, widget_crd: str
):
    status, message = _rejection(
        api_client, namespace, widget_crd, _widget("typed", widget_crd, 1, "three")
    )
    assert status == 422
    assert (
        'spec.maxReplicas: Invalid value: "string": '
        "spec.maxReplicas in body must be of type integer" in message
    )

    status, message = _rejection(
        api_client, namespace, widget_crd, _widget("bounded", widget_crd, 1, 101)
    )
    assert status == 422
    assert (
        "spec.maxReplicas: Invalid value: 101: "
        "spec.maxReplicas in body should be less than or equal to 100" in message
    )
