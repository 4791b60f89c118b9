"""The pod launcher on real containers: the outcomes kwok only simulates, as a kubelet, runc and
the kernel really produce them, against a real PostgreSQL.

Every Pod selects and tolerates the real node (``support.real_node.template``) and runs an image
imported there. Waits are generous (a PLEG relist is once a second, and CI is loaded); the
assertions are not.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from sundial.localdev import real_node as real_nodes
from sundial.pods import manifests
from sundial.pods import placement as placements
from sundial.store import runs, schedules
from support.pods import (
    Job,
    maintenance,
    run_pods,
    running_launcher,
    settings,
    wait_pods,
    wait_state,
)
from support.polling import wait_until_async
from support.real_node import NONROOT, attempt_exits, container_id, running_tasks, template

pytestmark = pytest.mark.timeout(180)
ENDED = ("completed", "failed", "dead_lettered", "timed_out", "cancelled")


def worker() -> str:
    return f"launcher-{uuid.uuid4().hex[:6]}"


def launcher_settings(namespace: str) -> Any:
    # Real Pods take a second or more to start; the launcher's own 30 s start timeout stays.
    return settings(namespace, worker())


def logs(core_api: client.CoreV1Api, namespace: str, pod: client.V1Pod) -> str:
    """What ``kubectl logs`` shows: the apiserver asks the kubelet, with its client cert."""
    return str(core_api.read_namespaced_pod_log(pod.metadata.name, namespace))


def status_fields(text: str) -> dict[str, str]:
    """``Name:\tvalue`` lines of /proc/self/status, as a container printed them."""
    fields = {}
    for line in text.splitlines():
        name, separator, value = line.partition(":")
        if separator:
            fields[name.strip()] = value.strip()
    return fields


async def test_a_busybox_pod_succeeds_restricted_and_its_logs_show_its_output(
    pool, api_client, core_api, namespace, real_node
):
    job = Job(pool, namespace)
    script = 'echo "hello from run $SUNDIAL_RUN_ID"; cat /proc/self/status'
    await job.define(template(real_node, ["sh", "-c", script]))
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        row = await wait_state(pool, run_id, *ENDED, within=120)

    assert (row["state"], row["attempt"], row["pod_exit_code"], row["pod_reason"]) == (
        "completed",
        1,
        0,
        "Completed",
    )
    [pod] = run_pods(core_api, namespace, run_id)
    assert pod.spec.node_name == real_node.name
    output = logs(core_api, namespace, pod)
    assert f"hello from run {run_id}" in output
    fields = status_fields(output)
    # The restricted defaults of pod_manifest, enforced by the runtime, not just written down:
    assert fields["Uid"].split() == [str(NONROOT)] * 4  # real, effective, saved, filesystem
    assert fields["Gid"].split() == [str(NONROOT)] * 4
    assert fields["CapEff"] == fields["CapPrm"] == fields["CapBnd"] == "0000000000000000"
    assert fields["NoNewPrivs"] == "1"
    assert fields["Seccomp"] == "2"  # filter mode: containerd's RuntimeDefault profile


async def test_a_job_writing_to_its_root_filesystem_fails_saying_it_is_read_only(
    pool, api_client, core_api, namespace, real_node
):
    job = Job(pool, namespace)
    await job.define(
        template(real_node, ["sh", "-c", "echo report > /report.txt"]),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        row = await wait_state(pool, run_id, *ENDED, within=120)

    assert row["state"] in ("failed", "dead_lettered")
    assert (row["attempt"], row["failure_reason"], row["pod_exit_code"]) == (1, "error", 1)
    assert "Read-only file system" in row["last_error"]  # the container's own words
    [pod] = run_pods(core_api, namespace, run_id)
    assert pod.spec.containers[0].security_context.read_only_root_filesystem is True
    assert "Read-only file system" in logs(core_api, namespace, pod)


POLICY = {
    "rules": [
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [75]}},
        {"action": "Fail", "onExitCodes": {"operator": "In", "values": [3]}},
        {"action": "Quarantine", "onExitCodes": {"operator": "In", "values": [4]}},
        {"action": "Retry", "onExitCodes": {"operator": "In", "values": [5]}},
    ]
}


@pytest.mark.parametrize(
    ("first_exit", "expected"),
    [
        # Ignore: retried without spending maxRetries (0 here): only that reaches attempt 2.
        (75, {"state": "completed", "attempt": 2, "retries_used": 0, "infra_retries_used": 1}),
        # Retry: retried, spending maxRetries; with 0 left the run is dead-lettered.
        (5, {"state": "dead_lettered", "attempt": 1, "retries_used": 0, "failure_reason": "error"}),
        # Fail and Quarantine: permanent at once, whatever maxRetries says.
        (3, {"state": "failed", "attempt": 1, "failure_reason": "permanent"}),
        (4, {"state": "failed", "attempt": 1, "failure_reason": "permanent"}),
    ],
    ids=["Ignore", "Retry", "Fail", "Quarantine"],
)
async def test_real_exit_codes_meet_the_failure_policy_rules(
    pool, api_client, core_api, namespace, real_node, first_exit, expected
):
    job = Job(pool, namespace)
    await job.define(
        template(real_node, attempt_exits({1: first_exit})),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
        failurePolicy=POLICY,
    )
    fired = await schedules_fire(pool, job)

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        row = await wait_state(pool, fired, *ENDED, within=120)

    assert {key: row[key] for key in expected} == expected
    first = run_pods(core_api, namespace, fired)[0]
    assert first.status.container_statuses[0].state.terminated.exit_code == first_exit
    quarantined = (await schedules.get(pool, job.uid)).quarantined  # type: ignore[union-attr]
    assert quarantined is (first_exit == 4)
    if first_exit in (3, 4):
        action = "Fail" if first_exit == 3 else "Quarantine"
        assert f"failurePolicy: {action}" in row["last_error"]


async def schedules_fire(pool: Any, job: Job) -> int:
    """A run fired by the job's schedule (a Quarantine rule quarantines that schedule)."""
    fired = await runs.submit(pool, job.uid, schedule_id=job.uid, fire_time=datetime.now(UTC))
    return fired.run_id


def dd(megabytes: int) -> list[str]:
    """Fill a buffer of ``megabytes`` MiB from /dev/zero: that much memory really touched.

    A second after the start, not at once: containerd 1.6's shim watches a container's cgroup
    for OOM events only once the container has started, so a container OOM-killed within
    milliseconds of its start can end as ``Error`` 137 on a loaded node instead of
    ``OOMKilled`` (docs/adr/0033). Jobs that allocate at their first instruction are rare;
    the tests are about what Sundial does with the runtime's report, not about that race."""
    return ["sh", "-c", f"sleep 1; exec dd if=/dev/zero of=/dev/null bs={megabytes}M count=1"]


async def test_a_real_oom_kill_gets_more_memory_on_the_next_attempt_and_succeeds(
    pool, api_client, core_api, namespace, real_node
):
    """48 MiB in a 32Mi limit is OOMKilled by the kernel; the 100 % bump gives attempt 2
    64Mi, where it fits. The OOM budget pays, never maxRetries (0)."""
    job = Job(pool, namespace)
    await job.define(
        template(real_node, dd(48), resources={"limits": {"memory": "32Mi"}}),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
        oom={"maxRetries": 2, "memoryIncreasePercent": 100, "maxMemory": "256Mi"},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        row = await wait_state(pool, run_id, *ENDED, within=150)

    assert (row["state"], row["attempt"]) == ("completed", 2)
    assert (row["retries_used"], row["oom_retries_used"]) == (0, 1)
    first, second = run_pods(core_api, namespace, run_id)
    terminated = first.status.container_statuses[0].state.terminated
    assert (terminated.reason, terminated.exit_code) == ("OOMKilled", 137)
    limits = [pod.spec.containers[0].resources.limits["memory"] for pod in (first, second)]
    assert limits == ["32Mi", str(64 * 2**20)]
    assert second.status.phase == "Succeeded"


async def test_real_oom_kills_spend_the_oom_budget_and_dead_letter_the_run(
    pool, api_client, core_api, namespace, real_node
):
    job = Job(pool, namespace)
    await job.define(
        template(real_node, dd(256), resources={"limits": {"memory": "32Mi"}}),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
        oom={"maxRetries": 1, "memoryIncreasePercent": 100, "maxMemory": "48Mi"},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        row = await wait_state(pool, run_id, *ENDED, within=150)

    pods = run_pods(core_api, namespace, run_id)
    seen = [
        (pod.status.phase, pod.status.container_statuses[0].state.terminated.reason) for pod in pods
    ]
    assert (row["state"], row["attempt"], row["failure_reason"]) == ("dead_lettered", 2, "oom"), (
        dict(row),
        seen,
    )
    assert (row["retries_used"], row["oom_retries_used"]) == (0, 1)
    assert (row["pod_reason"], row["pod_exit_code"]) == ("OOMKilled", 137)
    limits = [pod.spec.containers[0].resources.limits["memory"] for pod in pods]
    assert limits == ["32Mi", str(48 * 2**20)]  # doubled, then capped at maxMemory
    assert [p.status.container_statuses[0].state.terminated.reason for p in pods] == [
        "OOMKilled",
        "OOMKilled",
    ]


async def test_a_run_past_its_timeout_is_really_killed_and_ends_timed_out(
    pool, api_client, core_api, namespace, real_node
):
    """``sleep`` as PID 1 ignores SIGTERM: the container must be SIGKILLed, not just marked."""
    job = Job(pool, namespace)
    await job.define(
        template(real_node, ["sleep", "600"]),
        timeoutSeconds=3,
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        [pod] = await wait_pods(
            core_api,
            namespace,
            run_id,
            lambda pods: len(pods) == 1 and pods[0].status.phase == "Running",
            within=60,
        )
        container = container_id(pod)
        assert container in running_tasks(real_node.state_dir)
        row = await wait_state(pool, run_id, *ENDED, within=60)
        await wait_pods(core_api, namespace, run_id, lambda pods: not pods, within=30)

    assert pod.spec.active_deadline_seconds == 3  # the run's timeout, for the kubelet too
    assert (row["state"], row["failure_reason"], row["pod_reason"]) == (
        "timed_out",
        "timeout",
        "DeadlineExceeded",
    )
    # The Pod object goes at once (the launcher deletes it with no grace); the kubelet kills
    # the container after that, on its own time.
    await wait_until_async(
        lambda: asyncio.to_thread(lambda: container not in running_tasks(real_node.state_dir)),
        within=30,
        what=f"container {container} killed",
    )


async def test_an_image_that_is_not_on_the_node_fails_fast_with_that_reason(
    pool, api_client, core_api, namespace, real_node
):
    job = Job(pool, namespace)
    missing = template(real_node, ["true"])
    missing["spec"]["containers"][0]["image"] = "localhost/sundial/not-built:1"
    await job.define(missing)
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        row = await wait_state(pool, run_id, *ENDED, within=30)  # not the 30 s start timeout
        await wait_pods(core_api, namespace, run_id, lambda pods: not pods, within=30)

    assert (row["state"], row["attempt"], row["failure_reason"]) == ("failed", 1, "start_failure")
    assert row["pod_reason"] == "ErrImageNeverPull"
    assert "localhost/sundial/not-built:1" in row["last_error"]


async def wait_running(core_api: client.CoreV1Api, namespace: str, run_id: int) -> client.V1Pod:
    [pod] = await wait_pods(
        core_api,
        namespace,
        run_id,
        lambda pods: len(pods) == 1 and pods[0].status.phase == "Running",
        within=60,
    )
    return pod


def hold(core_api: client.CoreV1Api, namespace: str, pod: client.V1Pod) -> None:
    """Add a finalizer of the test's own to ``pod`` (someone else's, beside the launcher's)."""
    current = core_api.read_namespaced_pod(pod.metadata.name, namespace)
    if current.metadata.finalizers:
        patch = [{"op": "add", "path": "/metadata/finalizers/-", "value": HOLD}]
    else:
        patch = [{"op": "add", "path": "/metadata/finalizers", "value": [HOLD]}]
    core_api.patch_namespaced_pod(pod.metadata.name, namespace, patch)


def release(core_api: client.CoreV1Api, namespace: str, pods: list[client.V1Pod]) -> None:
    """Take the test's finalizer off again, and only it: the launcher's own
    (``sundial.dev/pod-outcome``) is the launcher's to remove, maybe at this very moment."""
    for pod in pods:
        for _attempt in range(10):
            current = core_api.read_namespaced_pod(pod.metadata.name, namespace)
            finalizers = list(current.metadata.finalizers or [])
            if HOLD not in finalizers:
                break
            patch = [
                {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
                {
                    "op": "replace",
                    "path": "/metadata/finalizers",
                    "value": [name for name in finalizers if name != HOLD],
                },
            ]
            try:
                core_api.patch_namespaced_pod(pod.metadata.name, namespace, patch)
                break
            except client.ApiException as error:  # the launcher changed them meanwhile
                if error.status == 404:
                    break
                if error.status != 422:
                    raise


HOLD = "sundial.dev/test-hold"
TRAP_TERM = ["sh", "-c", 'trap "echo got TERM; exit 143" TERM; while :; do sleep 1; done']


async def evict(core_api: client.CoreV1Api, namespace: str, name: str) -> None:
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
    await asyncio.to_thread(core_api.create_namespaced_pod_eviction, name, namespace, body)


async def test_an_evicted_pod_held_by_a_finalizer_is_a_disruption_not_counted(
    pool, api_client, core_api, namespace, real_node
):
    """The Eviction API on a running Pod that also carries someone else's finalizer:
    DisruptionTarget, retried without spending maxRetries, and the Pod's final status the
    kubelet wrote (exit 143 from the TERM trap) is what the test reads afterwards."""
    job = Job(pool, namespace)
    await job.define(
        template(real_node, TRAP_TERM, grace_seconds=5),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        pod = await wait_running(core_api, namespace, run_id)
        hold(core_api, namespace, pod)
        try:
            await job.define(template(real_node, ["true"]), retry={"maxRetries": 0})
            await evict(core_api, namespace, pod.metadata.name)
            row = await wait_state(pool, run_id, *ENDED, within=120)
            evicted = core_api.read_namespaced_pod(pod.metadata.name, namespace)
        finally:
            release(core_api, namespace, run_pods(core_api, namespace, run_id))

    assert row["state"] == "completed"  # maxRetries 0: only an uncounted retry gets here
    assert (row["attempt"], row["retries_used"], row["infra_retries_used"]) == (2, 0, 1)
    conditions = {c.type: c for c in evicted.status.conditions}
    assert conditions["DisruptionTarget"].status == "True"
    assert conditions["DisruptionTarget"].reason == "EvictionByEvictionAPI"
    assert evicted.status.container_statuses[0].state.terminated.exit_code == 143
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT failure_reason, error FROM job_run_attempts WHERE run_id = %s", (run_id,)
        )
        [(reason, error)] = await cursor.fetchall()
    assert reason == "infrastructure" and "EvictionByEvictionAPI" in error


async def test_an_evicted_pod_is_a_disruption_not_counted_against_max_retries(
    pool, api_client, core_api, namespace, real_node
):
    """The plain case: nothing but the launcher's outcome finalizer (ADR 0023) keeps the
    evicted Pod's final status (DisruptionTarget) readable. Without it the status lives only
    between the kubelet's last write and the object's removal; a missed read made the Pod
    GONE and podDeletionPolicy (Retry) counted it as a crash (with maxRetries 0: dead-lettered,
    and this test failed). Before that finalizer it passed 10 of 10 runs here, by luck."""
    job = Job(pool, namespace)
    await job.define(
        template(real_node, TRAP_TERM, grace_seconds=2),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        pod = await wait_running(core_api, namespace, run_id)
        await job.define(template(real_node, ["true"]), retry={"maxRetries": 0})
        await evict(core_api, namespace, pod.metadata.name)
        row = await wait_state(pool, run_id, *ENDED, within=120)

    assert row["state"] == "completed", row
    assert (row["attempt"], row["retries_used"], row["infra_retries_used"]) == (2, 0, 1)


async def test_a_pod_deleted_by_someone_else_past_its_grace_follows_pod_deletion_policy(
    pool, api_client, core_api, namespace, real_node
):
    """``sleep`` ignores SIGTERM, so after the 1 s grace the kubelet SIGKILLs it: Failed, 137,
    reason Error, deletionTimestamp set and no DisruptionTarget. A finalizer of the test's
    keeps that status readable for the test too. It is a deletion by someone else:
    podDeletionPolicy (Cancel) applies, never the OOM path (no OOM budget spent, no memory
    bump). Before classify read only OOMKilled as an OOM kill, this run went to retry_wait
    with oom_retries_used 1."""
    job = Job(pool, namespace)
    await job.define(
        template(real_node, ["sleep", "600"], resources={"limits": {"memory": "32Mi"}}),
        podDeletionPolicy="Cancel",
        oom={"maxRetries": 2, "memoryIncreasePercent": 100},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings(namespace)):
        pod = await wait_running(core_api, namespace, run_id)
        hold(core_api, namespace, pod)
        try:
            await asyncio.to_thread(
                core_api.delete_namespaced_pod,
                pod.metadata.name,
                namespace,
                grace_period_seconds=1,
            )
            row = await wait_state(pool, run_id, *ENDED, "retry_wait", "pending", within=60)
            await asyncio.sleep(2)  # a wrong retry's Pod would show up meanwhile
            pods = run_pods(core_api, namespace, run_id)
        finally:
            release(core_api, namespace, run_pods(core_api, namespace, run_id))

    terminated = pods[0].status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (137, "Error")  # what the kubelet wrote
    assert (row["state"], row["attempt"], row["oom_retries_used"]) == ("cancelled", 1, 0), row
    assert "podDeletionPolicy: Cancel" in row["last_error"]
    assert [p.metadata.labels[manifests.LABEL_ATTEMPT] for p in pods] == ["1"]


async def test_a_handler_job_runs_sundial_exec_in_the_runner_image(
    pool, api_client, core_api, namespace, real_node
):
    """``executionModel: pod``: the launcher's Pod runs ``sundial exec HANDLER`` in the runner
    image (here the example handlers' image, built FROM it). A handler job has no template to
    place its Pod with: the installation's job-Pod placement (``--job-pod-node-selector``,
    ``--job-pod-toleration``) is what brings it to the tainted real node, and the handler's
    own ``ctx.logger`` lines are what ``kubectl logs`` shows."""
    if "EXAMPLES" not in real_node.images:
        pytest.skip("no example handlers' image on the real node (hack/images/build examples)")
    job = Job(pool, namespace)
    await job.define_handler("examples.hello")
    run_id = await job.submit(args={"name": "real node"})
    where = real_nodes.placement()
    pod_settings = manifests.ManifestSettings(
        instance=namespace,
        runner_image=real_node.images["EXAMPLES"],
        placement=placements.Placement(
            node_selector=where["nodeSelector"], tolerations=tuple(where["tolerations"])
        ),
    )

    async with (
        maintenance(pool),
        running_launcher(pool, api_client, settings(namespace, worker(), manifest=pod_settings)),
    ):
        row = await wait_state(pool, run_id, *ENDED, within=120)

    [pod] = run_pods(core_api, namespace, run_id)
    output = logs(core_api, namespace, pod)
    assert row["state"] == "completed", (row, output)
    assert pod.spec.node_name == real_node.name
    container = pod.spec.containers[0]
    assert (container.image, container.command) == (
        real_node.images["EXAMPLES"],
        ["sundial", "exec", "examples.hello"],
    )
    # A JSON log line of the handler's ctx.logger, on stdout (sundial exec configures logging).
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    said = [line for line in lines if line.get("message", "").startswith("Hello, real node")]
    assert said, output
    assert f"(run {run_id}, attempt 1)" in said[0]["message"]
