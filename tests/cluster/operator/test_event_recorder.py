"""The operator's Event recorder against a real apiserver: a storm of one fact becomes one
Event with its count (as client-go's recorder aggregates), distinct facts each get their own,
a keyed Event stays one however often it is reported, and a full queue drops and counts."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kubernetes import client

from sundial.operator import events, kube
from sundial.scheduling import clock


def _involved(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
    }


def _events(core_api: client.CoreV1Api, namespace: str) -> list[Any]:
    return list(core_api.list_namespaced_event(namespace).items)


async def _post_all(recorder: events.EventRecorder) -> None:
    stop = asyncio.Event()
    posting = asyncio.create_task(recorder.run(stop))
    for _ in range(600):
        await asyncio.sleep(0.05)
        if recorder.queued == 0:
            break
    stop.set()  # each poster ends the post it holds, then stops
    await asyncio.wait_for(posting, 10)


def test_repeats_aggregate_distinct_facts_stay_and_a_full_queue_counts_its_drops(
    api_client: client.ApiClient, core_api: client.CoreV1Api, namespace: str
) -> None:
    api = kube.KubeApi(api_client)
    recorder = events.EventRecorder(api, clock.SystemClock(), capacity=50)
    storm = _involved(namespace, "storm")
    quiet = _involved(namespace, "quiet")
    for _ in range(1_000):
        recorder.record(storm, events.WARNING, "FireFailed", "the database is unreachable")
    for number in range(20):
        recorder.record(quiet, events.NORMAL, "Fired", f"run {number} fired")
    for _ in range(5):
        recorder.record(quiet, events.WARNING, "DeadLettered", "run 7 dead-lettered", key="7-1")
    assert recorder.dropped == 0  # 22 places held 1,025 reports
    asyncio.run(_post_all(recorder))

    posted = _events(core_api, namespace)
    by_object: dict[str, list[Any]] = {}
    for event in posted:
        by_object.setdefault(event.involved_object.name, []).append(event)
    [aggregated] = by_object["storm"]
    assert (aggregated.count, aggregated.reason) == (1_000, "FireFailed")
    assert aggregated.first_timestamp <= aggregated.last_timestamp
    fired = sorted(e.message for e in by_object["quiet"] if e.reason == "Fired")
    assert fired == sorted(f"run {number} fired" for number in range(20))
    [dead] = [e for e in by_object["quiet"] if e.reason == "DeadLettered"]
    assert dead.count == 1

    # 60 distinct facts into 50 places: 10 dropped, counted, the rest posted
    crowded = events.EventRecorder(api, clock.SystemClock(), capacity=50)
    many = _involved(namespace, "many")
    for number in range(60):
        crowded.record(many, events.NORMAL, "Fired", f"fire {number}")
    assert crowded.dropped == 10
    asyncio.run(_post_all(crowded))
    assert len([e for e in _events(core_api, namespace) if e.involved_object.name == "many"]) == 50
