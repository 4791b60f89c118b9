"""Which object owns a Pod and gets its Events (``pod_hooks``), with a fake API and recorder:
a user JobRun's run belongs to the JobRun, other runs to their ScheduledJob, and a deleted
owner is never referenced."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, cast

from sundial.operator import context, events, job_runs, kube, pod_hooks
from sundial.pods import launcher
from sundial.pods.outcomes import PodOutcome, PodState
from sundial.scheduling import clock as clocks

NAMESPACE = "team"
SCHEDULED_JOB_UID = str(uuid.uuid4())
JOB_RUN_UID = str(uuid.uuid4())


class FakeApi:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}

    async def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((plural, name))

    async def list(self, plural: str, namespaces: Any) -> list[dict[str, Any]]:
        return [value for (kind, _), value in self.objects.items() if kind == plural]


class FakeRecorder:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str, str, str | None]] = []

    def record(
        self,
        involved: Mapping[str, Any],
        event_type: str,
        reason: str,
        message: str,
        *,
        key: str | None = None,
    ) -> None:
        self.recorded.append((involved["kind"], event_type, reason, message, key))


def body(name: str, uid: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NAMESPACE, "uid": uid}}


def hooks_with(*, job_run: bool, scheduled_job: bool) -> tuple[pod_hooks.OperatorPodHooks, Any]:
    api = FakeApi()
    recorder = FakeRecorder()
    ctx = context.Context(
        pool=cast(Any, None),
        api=cast(kube.KubeApi, api),
        recorder=cast(events.EventRecorder, recorder),
        clock=clocks.SystemClock(),
    )
    if scheduled_job:
        api.objects[(kube.SCHEDULED_JOBS, "nightly")] = body("nightly", SCHEDULED_JOB_UID)
    if job_run:
        run = body("by-hand", JOB_RUN_UID)
        api.objects[(kube.JOB_RUNS, "by-hand")] = run
        ctx.job_runs[job_runs.run_key(run["metadata"], None)] = run
    return pod_hooks.OperatorPodHooks(ctx), (api, recorder)


def end(state: PodState, reason: str, run_state: str, key: str) -> launcher.AttemptEnd:
    return launcher.AttemptEnd(
        run_id=7,
        attempt=1,
        job_id=SCHEDULED_JOB_UID,
        namespace=NAMESPACE,
        job_name="nightly",
        pod_name="nightly-abc-1",
        outcome=PodOutcome(state, reason),
        run_state=run_state,
        idempotency_key=key,
    )


async def test_a_job_run_run_is_owned_by_its_job_run_alone() -> None:
    hooks, _ = hooks_with(job_run=True, scheduled_job=True)

    owner = await hooks.owner(NAMESPACE, "nightly", SCHEDULED_JOB_UID, JOB_RUN_UID)

    assert owner is not None
    assert (owner["kind"], owner["name"], owner["uid"]) == ("JobRun", "by-hand", JOB_RUN_UID)


async def test_a_scheduled_run_is_owned_by_its_scheduled_job() -> None:
    hooks, _ = hooks_with(job_run=True, scheduled_job=True)

    owner = await hooks.owner(NAMESPACE, "nightly", SCHEDULED_JOB_UID, "run:7")

    assert owner is not None
    assert (owner["kind"], owner["uid"]) == ("ScheduledJob", SCHEDULED_JOB_UID)


async def test_a_job_run_deleted_since_it_was_seen_is_not_referenced() -> None:
    hooks, (api, _) = hooks_with(job_run=True, scheduled_job=False)
    del api.objects[(kube.JOB_RUNS, "by-hand")]

    assert await hooks.owner(NAMESPACE, "jobrun:x", JOB_RUN_UID, JOB_RUN_UID) is None
    assert hooks.ctx.job_runs == {}


async def test_pod_events_of_a_job_run_run_go_on_the_job_run() -> None:
    hooks, (_, recorder) = hooks_with(job_run=True, scheduled_job=True)

    await hooks.ended(end(PodState.OOM_KILLED, "OOMKilled", "dead_lettered", JOB_RUN_UID))

    assert [
        (kind, kind_of_event, reason) for kind, kind_of_event, reason, *_ in recorder.recorded
    ] == [
        ("JobRun", "Warning", "OOMKilled"),
        ("JobRun", "Warning", "DeadLettered"),
    ]


async def test_a_pod_deleted_into_a_cancel_is_one_normal_pod_deleted_event() -> None:
    hooks, (_, recorder) = hooks_with(job_run=False, scheduled_job=True)

    await hooks.ended(end(PodState.GONE, "PodDeleted", "cancelled", "run:7"))
    await hooks.ended(end(PodState.GONE, "PodDeleted", "pending", "run:7"))  # retried: no Event

    [(kind, event_type, reason, message, key)] = recorder.recorded
    assert (kind, event_type, reason, key) == ("ScheduledJob", "Normal", "PodDeleted", "run-7-1")
    assert message.startswith("run 7 attempt 1: Pod nightly-abc-1 was deleted")


def job_run_reference(uid: str = JOB_RUN_UID) -> dict[str, Any]:
    return {"apiVersion": "sundial.dev/v1alpha1", "kind": "JobRun", "name": "by-hand", "uid": uid}


async def test_a_pod_gone_with_its_deleted_job_run_cancels_the_run() -> None:
    hooks, (api, _) = hooks_with(job_run=True, scheduled_job=True)
    assert await hooks.deleted_with_owner(NAMESPACE, job_run_reference()) is None

    # Foreground propagation: the JobRun is still there, being deleted, when its Pod goes.
    api.objects[(kube.JOB_RUNS, "by-hand")]["metadata"]["deletionTimestamp"] = "2026-11-30T02:00Z"
    deleting = await hooks.deleted_with_owner(NAMESPACE, job_run_reference())
    # Background propagation: the JobRun is gone first; a new one by the same name is not it.
    api.objects[(kube.JOB_RUNS, "by-hand")] = body("by-hand", str(uuid.uuid4()))
    replaced = await hooks.deleted_with_owner(NAMESPACE, job_run_reference())
    del api.objects[(kube.JOB_RUNS, "by-hand")]
    gone = await hooks.deleted_with_owner(NAMESPACE, job_run_reference())

    assert deleting == replaced == gone == job_runs.DELETED_REASON


async def test_a_pod_gone_with_its_scheduled_job_follows_the_pod_deletion_policy() -> None:
    hooks, _ = hooks_with(job_run=False, scheduled_job=False)
    reference = {"kind": "ScheduledJob", "name": "nightly", "uid": SCHEDULED_JOB_UID}

    assert await hooks.deleted_with_owner(NAMESPACE, reference) is None


async def test_a_pod_gone_with_its_job_run_posts_no_pod_deleted_event() -> None:
    hooks, (_, recorder) = hooks_with(job_run=True, scheduled_job=True)

    await hooks.ended(end(PodState.GONE, launcher.OWNER_DELETED, "cancelled", JOB_RUN_UID))

    assert recorder.recorded == []


async def test_after_a_restart_a_job_run_being_deleted_is_found_as_the_gone_pods_owner() -> None:
    """No mirror pass has indexed the JobRun (the operator just started); a Pod of its run
    deleted while the launcher was down must still be seen to have gone with it."""
    hooks, (api, _) = hooks_with(job_run=True, scheduled_job=True)
    hooks.ctx.job_runs.clear()
    deleting = api.objects[(kube.JOB_RUNS, "by-hand")]
    deleting["metadata"]["deletionTimestamp"] = "2026-11-30T02:00Z"
    mirrored = body("nightly-7", str(uuid.uuid4()))
    mirrored["metadata"]["labels"] = {context.LABEL_MIRROR: "true"}
    api.objects[(kube.JOB_RUNS, "nightly-7")] = mirrored

    owner = await hooks.former_owner(NAMESPACE, "nightly", SCHEDULED_JOB_UID, JOB_RUN_UID)
    plain_owner = await hooks.owner(NAMESPACE, "nightly", SCHEDULED_JOB_UID, JOB_RUN_UID)
    scheduled = await hooks.former_owner(NAMESPACE, "nightly", SCHEDULED_JOB_UID, "run:7")

    assert owner is not None and (owner["kind"], owner["uid"]) == ("JobRun", JOB_RUN_UID)
    assert await hooks.deleted_with_owner(NAMESPACE, owner) == job_runs.DELETED_REASON
    assert plain_owner is not None and plain_owner["kind"] == "ScheduledJob"  # why it is needed
    assert scheduled is not None and scheduled["kind"] == "ScheduledJob"
