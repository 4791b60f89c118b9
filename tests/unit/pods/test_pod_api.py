"""The launcher's Kubernetes calls against a fake CoreV1Api: what they ask the apiserver for."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sundial.pods import pod_api


@dataclass
class Raw:
    data: bytes


class FakeCore:
    """Records LIST options; GETs take a moment, so overlapping ones can be counted."""

    def __init__(self) -> None:
        self.list_calls: list[tuple[str | None, dict[str, Any]]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()

    def list_namespaced_pod(self, namespace: str, **options: Any) -> Raw:
        self.list_calls.append((namespace, options))
        return Raw(json.dumps({"items": [{"metadata": {"name": f"in-{namespace}"}}]}).encode())

    def list_pod_for_all_namespaces(self, **options: Any) -> Raw:
        self.list_calls.append((None, options))
        return Raw(b'{"items": []}')

    def read_namespaced_pod(self, name: str, namespace: str, **_options: Any) -> Raw:
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(0.01)
            if name.startswith("gone"):
                raise ApiException(status=404, reason="Not Found")
            return Raw(json.dumps({"metadata": {"name": name, "namespace": namespace}}).encode())
        finally:
            with self._lock:
                self.in_flight -= 1


def make_pod_api() -> tuple[pod_api.PodApi, FakeCore]:
    api = pod_api.PodApi(client.ApiClient(), delete_grace_seconds=0)
    fake = FakeCore()
    api._core = fake
    return api, fake


async def test_the_list_asks_the_apiserver_for_pods_that_have_not_ended() -> None:
    api, fake = make_pod_api()

    pods = await api.list(["a", "b"], "sundial.dev/instance=x", field_selector=pod_api.NOT_ENDED)

    assert [pod["metadata"]["name"] for pod in pods] == ["in-a", "in-b"]
    assert [options["field_selector"] for _, options in fake.list_calls] == [
        "status.phase!=Succeeded,status.phase!=Failed"
    ] * 2
    assert {options["label_selector"] for _, options in fake.list_calls} == {
        "sundial.dev/instance=x"
    }


async def test_a_list_without_a_field_selector_sends_none() -> None:
    api, fake = make_pod_api()

    await api.list(None, "sundial.dev/run-id=7")

    assert fake.list_calls == [
        (None, {"label_selector": "sundial.dev/run-id=7", "_preload_content": False})
    ]


async def test_get_many_keeps_the_order_reads_gone_as_none_and_bounds_the_gets_in_flight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pod_api, "_GET_CONCURRENCY", 3)
    api, fake = make_pod_api()
    wanted = [("ns", f"pod-{n}") for n in range(30)] + [("ns", "gone-1")]
    # More threads than GETs, so only get_many's own bound can hold them back.
    with concurrent.futures.ThreadPoolExecutor(max_workers=40) as threads:
        asyncio.get_running_loop().set_default_executor(threads)
        found = await api.get_many(wanted)

    assert [pod and pod["metadata"]["name"] for pod in found] == [
        *(f"pod-{n}" for n in range(30)),
        None,
    ]
    assert fake.most_in_flight == 3
