"""Which ended Pods the status mirror deletes (``pods.pod_gc``): pure selection rules."""

from __future__ import annotations

import uuid
from typing import Any

from sundial.pods import pod_gc

OWNER = uuid.uuid4()
OTHER = uuid.uuid4()


def metadata(run_id: str | None, owner: uuid.UUID | None = OWNER, name: str = "p") -> Any:
    labels = {"sundial.dev/instance": "sundial"}
    if run_id is not None:
        labels["sundial.dev/run-id"] = run_id
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "uid": "u-1", "labels": labels}
    }
    if owner is not None:
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": "sundial.dev/v1alpha1", "kind": "ScheduledJob", "uid": str(owner)}
        ]
    return body


def pod(run_id: int, owner: uuid.UUID | None = OWNER) -> pod_gc.EndedPod:
    return pod_gc.EndedPod("ns", f"job-{run_id}", f"uid-{run_id}", run_id, owner)


def test_a_listed_pod_is_read_with_its_run_and_scheduled_job_owner():
    assert pod_gc.parse(metadata("42")) == pod_gc.EndedPod("ns", "p", "u-1", 42, OWNER)


def test_a_pod_without_a_run_id_or_owner_is_read_safely():
    assert pod_gc.parse(metadata(None)) is None
    assert pod_gc.parse(metadata("not-a-number")) is None
    parsed = pod_gc.parse(metadata("7", owner=None))
    assert parsed is not None and parsed.owner is None


def test_only_pods_of_listed_scheduled_jobs_whose_run_left_the_window_are_candidates():
    pods = [pod(1), pod(2), pod(3), pod(4, owner=OTHER), pod(5, owner=None), pod(6)]
    windows = {OWNER: {2, 3}}
    followed = {6}  # a user JobRun (jobRef) follows run 6

    assert [p.run_id for p in pod_gc.unkept(pods, windows, followed)] == [1]


def test_an_empty_window_keeps_no_finished_pod():
    assert [p.run_id for p in pod_gc.unkept([pod(1), pod(2)], {OWNER: set()}, set())] == [1, 2]


def test_pods_of_unfinished_runs_are_kept_and_unknown_runs_are_collected():
    pods = [pod(1), pod(2), pod(3), pod(4), pod(5)]
    states = {1: "completed", 2: "retry_wait", 3: "running", 4: "dead_lettered"}

    assert [p.run_id for p in pod_gc.collectable(pods, states)] == [1, 4, 5]


def test_every_ended_run_state_is_finished():
    for state in ("completed", "failed", "timed_out", "cancelled", "dead_lettered"):
        assert pod_gc.collectable([pod(1)], {1: state}) == [pod(1)]
    for state in ("scheduled", "blocked", "pending", "running", "retry_wait"):
        assert pod_gc.collectable([pod(1)], {1: state}) == []
