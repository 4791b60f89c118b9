"""The pod launcher on the local control plane, against a real PostgreSQL.

kwok plays the kubelet: annotations on the template choose each Pod's end (see
hack/cluster/kwok/stages.yaml). A retry that must end differently from its first attempt is
made the way a user would: the job's template is edited (a new generation upserted) while the
first attempt runs; the launcher reads the template when it claims each attempt.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from sundial.pods import manifests
from sundial.store import runs, schedules
from support.pods import (
    EXIT_CODE,
    OUTCOME,
    RUNNING_SECONDS,
    Job,
    PodEvents,
    maintenance,
    run_pods,
    run_row,
    running_launcher,
    settings,
    template,
    wait_pods,
    wait_state,
)
from support.polling import wait_until_async

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(120)]


def worker() -> str:
    return f"launcher-{uuid.uuid4().hex[:6]}"


def env_of(pod: client.V1Pod) -> dict[str, str]:
    return {variable.name: variable.value for variable in pod.spec.containers[0].env}


async def test_a_pod_run_succeeds_with_one_restricted_pod(pool, api_client, core_api, namespace):
    job = Job(pool, namespace)
    await job.define(template())
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        row = await wait_state(pool, run_id, "completed")

    assert (row["attempt"], row["pod_exit_code"], row["pod_reason"]) == (1, 0, "Completed")
    [pod] = run_pods(core_api, namespace, run_id)
    assert row["pod_name"] == pod.metadata.name
    assert pod.status.phase == "Succeeded"
    assert pod.metadata.labels[manifests.LABEL_ATTEMPT] == "1"
    assert pod.metadata.labels[manifests.LABEL_JOB] == "report"
    assert pod.spec.restart_policy == "Never"
    assert pod.spec.active_deadline_seconds == 300
    assert pod.spec.automount_service_account_token is False
    assert pod.spec.security_context.run_as_non_root is True
    assert pod.spec.security_context.seccomp_profile.type == "RuntimeDefault"
    security = pod.spec.containers[0].security_context
    assert security.allow_privilege_escalation is False
    assert security.capabilities.drop == ["ALL"]
    assert security.read_only_root_filesystem is True
    env = env_of(pod)
    assert env["SUNDIAL_RUN_ID"] == str(run_id)
    assert env["SUNDIAL_ATTEMPT"] == "1"
    assert env["SUNDIAL_IDEMPOTENCY_KEY"] == f"run:{run_id}"
    assert not any("DSN" in name or name.startswith("PG") for name in env)


async def test_exit_1_is_retried_and_the_retry_succeeds(pool, api_client, core_api, namespace):
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "fail", EXIT_CODE: "1", RUNNING_SECONDS: "2"}))
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
        await job.define(template())  # the fix lands while attempt 1 runs
        row = await wait_state(pool, run_id, "completed")

    assert (row["attempt"], row["retries_used"]) == (2, 1)
    first, second = run_pods(core_api, namespace, run_id)
    assert first.status.phase == "Failed"
    assert first.status.container_statuses[0].state.terminated.exit_code == 1
    assert second.status.phase == "Succeeded"
    assert row["pod_name"] == second.metadata.name
    assert env_of(second)["SUNDIAL_ATTEMPT"] == "2"
    assert (
        second.status.start_time >= first.status.container_statuses[0].state.terminated.finished_at
    )


async def test_oom_killed_every_time_ends_dead_lettered_as_oom(
    pool, api_client, core_api, namespace
):
    """OOM kills spend oom.maxRetries, not maxRetries (0 here), and each retry gets the job's
    memory bump: the installation's default (factor 1) would leave it at 64Mi."""
    job = Job(pool, namespace)
    await job.define(
        template({OUTCOME: "oom"}, resources={"limits": {"memory": "64Mi"}}),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
        oom={"maxRetries": 2, "memoryIncreasePercent": 100, "maxMemory": "200Mi"},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        row = await wait_state(pool, run_id, "dead_lettered", "failed", "completed")

    assert row["state"] == "dead_lettered"
    # The Pod's reason is kept as the failure's detail, which a retry's Pod does not clear.
    assert (row["attempt"], row["failure_reason"], row["failure_detail"]) == (3, "oom", "OOMKilled")
    assert (row["retries_used"], row["oom_retries_used"]) == (0, 2)
    assert (row["pod_reason"], row["pod_exit_code"]) == ("OOMKilled", 137)
    assert "OOMKilled" in row["last_error"]
    pods = run_pods(core_api, namespace, run_id)
    assert [p.metadata.labels[manifests.LABEL_ATTEMPT] for p in pods] == ["1", "2", "3"]
    limits = [p.spec.containers[0].resources.limits["memory"] for p in pods]
    assert limits == ["64Mi", str(128 * 2**20), str(200 * 2**20)]  # doubled, then capped


async def test_an_evicted_pod_is_retried_without_spending_max_retries(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(
        template({OUTCOME: "evict", RUNNING_SECONDS: "2"}),
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
        await job.define(template(), retry={"maxRetries": 0})
        row = await wait_state(pool, run_id, "completed", "failed", "dead_lettered")

    assert row["state"] == "completed"  # with maxRetries 0, only an uncounted retry gets here
    assert (row["attempt"], row["retries_used"], row["infra_retries_used"]) == (2, 0, 1)
    first, _second = run_pods(core_api, namespace, run_id)
    assert first.status.reason == "Evicted"


async def test_an_image_pull_failure_fails_fast(pool, api_client, core_api, namespace):
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "image-pull-backoff"}))
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        row = await wait_state(pool, run_id, "failed", "dead_lettered", "completed", within=30)
        await wait_pods(core_api, namespace, run_id, lambda pods: not pods)  # deleted

    assert (row["state"], row["attempt"], row["failure_reason"]) == ("failed", 1, "start_failure")
    assert row["pod_reason"] == "ImagePullBackOff"
    assert "ImagePullBackOff" in row["last_error"]


async def test_a_pod_past_its_timeout_is_deleted_and_the_run_timed_out(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(
        template({OUTCOME: "run-forever"}),
        timeoutSeconds=2,
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        row = await wait_state(pool, run_id, "timed_out", "dead_lettered", "failed", within=30)
        await wait_pods(core_api, namespace, run_id, lambda pods: not pods, within=15)

    # The store retries a timeout while maxRetries lasts; with maxRetries 0 the run ends
    # timed_out with reason timeout (docs/failure-modes.md), exactly as a runner-pool timeout does.
    assert (row["state"], row["failure_reason"], row["pod_reason"]) == (
        "timed_out",
        "timeout",
        "DeadlineExceeded",
    )
    assert row["failure_detail"] == "Timeout"  # as a runner's timeout says in `sundial runs`


async def test_the_timeout_counts_from_the_pods_start_not_its_creation(
    pool, api_client, core_api, namespace
):
    """activeDeadlineSeconds counts from the Pod's ``status.startTime``, and so does the
    launcher's own clock: a Pod that waited to start (held here by a scheduling gate, as a slow
    node holds one in its image pulls) still gets its whole timeoutSeconds once it runs."""
    timeout_seconds = 8
    gated = template({RUNNING_SECONDS: "2"})
    gated["spec"]["schedulingGates"] = [{"name": "sundial.dev/held-by-the-test"}]
    job = Job(pool, namespace)
    await job.define(
        gated,
        timeoutSeconds=timeout_seconds,
        retry={"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1},
    )
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        [pod] = await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
        created = pod.metadata.creation_timestamp
        await asyncio.sleep(timeout_seconds + 2)  # Pending past the whole timeout
        held = await run_row(pool, run_id)
        assert held["state"] == "running", held  # the old clock counted from the creation
        core_api.patch_namespaced_pod(
            pod.metadata.name, namespace, [{"op": "remove", "path": "/spec/schedulingGates"}]
        )
        row = await wait_state(pool, run_id, "completed", "timed_out", "failed", "dead_lettered")

    assert (row["state"], row["attempt"], row["pod_reason"]) == ("completed", 1, "Completed")
    [pod] = run_pods(core_api, namespace, run_id)
    assert (pod.status.start_time - created).total_seconds() > timeout_seconds


async def test_cancel_deletes_the_pod_and_cancels_the_run(pool, api_client, core_api, namespace):
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        await wait_pods(
            core_api,
            namespace,
            run_id,
            lambda pods: bool(pods) and pods[0].status.phase == "Running",
        )
        assert await runs.cancel(pool, run_id) == runs.CancelResult.REQUESTED
        row = await wait_state(pool, run_id, "cancelled", within=30)
        await wait_pods(core_api, namespace, run_id, lambda pods: not pods, within=15)

    assert (row["attempt"], row["failure_reason"]) == (1, "cancelled")


async def test_a_template_the_apiserver_rejects_fails_once_with_its_message(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(template(volumeMounts=[{"name": "missing", "mountPath": "/data"}]))
    run_id = await job.submit()

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        row = await wait_state(pool, run_id, "failed", "dead_lettered", "completed", within=30)

    assert (row["state"], row["attempt"], row["failure_reason"]) == ("failed", 1, "permanent")
    assert "volumeMounts" in row["last_error"] and "not found" in row["last_error"].lower()
    assert row["pod_reason"] == "PodRejected"
    assert run_pods(core_api, namespace, run_id) == []


async def test_a_restarted_launcher_adopts_its_pods_without_a_second_pod(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(template({RUNNING_SECONDS: "6"}))
    run_id = await job.submit()
    same_worker = worker()

    async with maintenance(pool):
        async with running_launcher(pool, api_client, settings(namespace, same_worker)):
            await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
        # The launcher is gone; the Pod runs on. A new process with the same worker id:
        async with running_launcher(pool, api_client, settings(namespace, same_worker)):
            row = await wait_state(pool, run_id, "completed", "failed", "dead_lettered")

    assert (row["state"], row["attempt"]) == ("completed", 1)
    [pod] = run_pods(core_api, namespace, run_id)
    assert pod.status.phase == "Succeeded"


async def test_a_stale_pod_is_deleted_and_its_outcome_ignored(
    pool, api_client, core_api, namespace
):
    """Attempt 1's lease expires while its launcher is away (a partition); the reaper requeues
    the run; another launcher claims attempt 2. Attempt 1's Pod is deleted before attempt 2's
    is created, and whatever it would have said is never recorded."""
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()

    async with maintenance(pool):
        async with running_launcher(pool, api_client, settings(namespace, worker())):
            await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
        [old_pod] = run_pods(core_api, namespace, run_id)
        async with pool.connection() as conn:  # the lease runs out while the launcher is away
            await conn.execute(
                "UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = %s",
                (run_id,),
            )
        await wait_state(pool, run_id, "pending", "running")
        await job.define(template())
        with PodEvents(core_api, namespace, run_id) as pod_events:
            async with running_launcher(pool, api_client, settings(namespace, worker())):
                row = await wait_state(pool, run_id, "completed", "failed", "dead_lettered")

    # One attempt's Pod at a time: attempt 2's Pod was created after attempt 1's was gone.
    assert pod_events.first("DELETED", 1) < pod_events.first("ADDED", 2)

    assert (row["state"], row["attempt"]) == ("completed", 2)
    [new_pod] = run_pods(core_api, namespace, run_id)  # attempt 1's Pod is gone
    assert new_pod.metadata.labels[manifests.LABEL_ATTEMPT] == "2"
    assert new_pod.metadata.name != old_pod.metadata.name
    assert row["pod_name"] == new_pod.metadata.name
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT attempt, failure_reason FROM job_run_attempts WHERE run_id = %s", (run_id,)
        )
        history: list[Any] = await cursor.fetchall()
    assert history == [(1, "lease_expired")]


async def test_a_launcher_that_loses_its_lease_deletes_its_pod_and_never_finishes_it(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_id = await job.submit()

    async with running_launcher(pool, api_client, settings(namespace, worker())) as launcher:
        await wait_pods(core_api, namespace, run_id, lambda pods: len(pods) == 1)
        async with pool.connection() as conn:  # another worker took the run over (attempt 2)
            await conn.execute(
                "UPDATE job_runs SET attempt = attempt + 1, lease_owner = 'someone-else',"
                " lease_until = now() + interval '1 hour' WHERE id = %s",
                (run_id,),
            )
        await wait_pods(core_api, namespace, run_id, lambda pods: not pods, within=20)
        await wait_until_async(lambda: asyncio.sleep(0, result=run_id not in launcher.held))

    row = await run_row(pool, run_id)
    assert (row["state"], row["attempt"], row["lease_owner"]) == ("running", 2, "someone-else")


async def test_a_quarantine_rule_fails_the_run_and_quarantines_its_schedule(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define(
        template({OUTCOME: "fail", EXIT_CODE: "3"}),
        failurePolicy={
            "rules": [
                {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [75]}},
                {"action": "Quarantine", "onExitCodes": {"operator": "In", "values": [3]}},
            ]
        },
    )
    fired = await runs.submit(pool, job.uid, schedule_id=job.uid, fire_time=datetime.now(UTC))

    async with maintenance(pool), running_launcher(pool, api_client, settings(namespace, worker())):
        row = await wait_state(pool, fired.run_id, "failed", "dead_lettered", "completed")

    assert (row["state"], row["attempt"], row["failure_reason"]) == ("failed", 1, "permanent")
    assert (row["pod_exit_code"], row["pod_reason"]) == (3, "Error")
    assert "failurePolicy: Quarantine" in row["last_error"]
    info = await schedules.get(pool, job.uid)
    assert info is not None and info.quarantined
    assert "exit code 3" in (info.quarantine_message or "")


async def test_a_handler_job_in_pod_mode_runs_sundial_exec_in_the_runner_image(
    pool, api_client, core_api, namespace
):
    job = Job(pool, namespace)
    await job.define_handler("reports.nightly")
    run_id = await job.submit(args={"day": "monday"})
    launcher_settings = settings(
        namespace,
        worker(),
        manifest=manifests.ManifestSettings(instance=namespace, runner_image="runner:test"),
    )

    async with maintenance(pool), running_launcher(pool, api_client, launcher_settings):
        row = await wait_state(pool, run_id, "completed", "failed", "dead_lettered")

    assert row["state"] == "completed"
    [pod] = run_pods(core_api, namespace, run_id)
    [container] = pod.spec.containers
    assert (container.image, container.command) == (
        "runner:test",
        ["sundial", "exec", "reports.nightly"],
    )
    assert env_of(pod)["SUNDIAL_ARGS"] == '{"day": "monday"}'


async def test_a_namespace_at_its_pod_limit_waits_while_the_launcher_has_room(
    pool, api_client, core_api, namespace
):
    """Room for 10 Pods, 2 per namespace: of five runs that run until cancelled, two get Pods
    and the others wait, through many claims; when one of the two ends, a third starts."""
    job = Job(pool, namespace)
    await job.define(template({OUTCOME: "run-forever"}))
    run_ids = [await job.submit() for _ in range(5)]

    async def states() -> dict[int, str]:
        return {run_id: (await run_row(pool, run_id))["state"] for run_id in run_ids}

    async def two_running() -> list[int] | None:
        running = [run_id for run_id, state in (await states()).items() if state == "running"]
        return running if len(running) == 2 else None

    capped = settings(namespace, worker(), max_pods=10, max_pods_per_namespace=2)
    async with maintenance(pool), running_launcher(pool, api_client, capped):
        first = await wait_until_async(two_running, within=30, what="two runs running")
        await asyncio.sleep(2)  # ten claims at the launcher's 0.2 s poll
        assert sorted((await states()).values()) == ["pending"] * 3 + ["running"] * 2
        pods = await asyncio.to_thread(core_api.list_namespaced_pod, namespace)
        assert len(pods.items) == 2
        assert await runs.cancel(pool, first[0]) == runs.CancelResult.REQUESTED
        await wait_state(pool, first[0], "cancelled", within=30)
        after = await wait_until_async(two_running, within=30, what="a third run started")
        assert first[1] in after and first[0] not in after
        for run_id in run_ids:
            await runs.cancel(pool, run_id, reason="test over")
        for run_id in run_ids:
            await wait_state(pool, run_id, "cancelled", within=30)


@pytest.fixture
def neighbour(core_api: client.CoreV1Api) -> Any:
    """A second fresh namespace beside ``namespace``, deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core_api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        yield name
    finally:
        core_api.delete_namespace(name)


async def test_weights_share_the_launchers_pods_between_namespaces(
    pool, api_client, core_api, namespace, neighbour
):
    """Room for 8 Pods, both namespaces with more runs than that: weights 3 to 1 give the
    first namespace 6 Pods and its neighbour 2 (equal shares would be 4 and 4)."""
    run_ids: dict[str, list[int]] = {}
    for where in (namespace, neighbour):
        job = Job(pool, where)
        await job.define(template({OUTCOME: "run-forever"}))
        run_ids[where] = [await job.submit() for _ in range(8)]

    async def running() -> dict[str, int] | None:
        counts = {
            where: sum([(await run_row(pool, run_id))["state"] == "running" for run_id in ids])
            for where, ids in run_ids.items()
        }
        return counts if sum(counts.values()) == 8 else None

    weighted = settings(
        namespace,
        worker(),
        namespaces=[namespace, neighbour],
        max_pods=8,
        claim_batch=8,
        namespace_weights={namespace: 3},
    )
    async with maintenance(pool), running_launcher(pool, api_client, weighted):
        counts = await wait_until_async(running, within=30, what="eight runs running")
        assert counts == {namespace: 6, neighbour: 2}
        for ids in run_ids.values():
            for run_id in ids:
                await runs.cancel(pool, run_id, reason="test over")
        for ids in run_ids.values():
            for run_id in ids:
                await wait_state(pool, run_id, "cancelled", within=30)


@pytest.mark.parametrize(("reserved", "starts"), [(1, True), (0, False)])
async def test_a_quiet_namespaces_pod_starts_beside_a_flood_of_long_pods(
    pool, api_client, core_api, namespace, neighbour, reserved, starts
):
    """Room for 8 Pods, the neighbour's flood of Pods that run until cancelled: with one Pod
    reserved the flood holds 7 and the quiet namespace's run gets a Pod at once; without, the
    flood holds all 8 and the quiet run waits for one of them to end."""
    flood = Job(pool, neighbour)
    await flood.define(template({OUTCOME: "run-forever"}))
    flooding = [await flood.submit() for _ in range(12)]
    quiet = Job(pool, namespace)
    await quiet.define(template({OUTCOME: "run-forever"}))

    async def running(run_ids: list[int]) -> int:
        return sum([(await run_row(pool, run_id))["state"] == "running" for run_id in run_ids])

    busy = 8 - reserved
    shared = settings(
        namespace,
        worker(),
        namespaces=[namespace, neighbour],
        max_pods=8,
        claim_batch=8,
        reserved_pods=reserved,
    )
    async with maintenance(pool), running_launcher(pool, api_client, shared):

        async def filled() -> bool:
            return await running(flooding) == busy

        await wait_until_async(filled, within=30, what=f"the flood in {busy} Pods")
        await asyncio.sleep(1)  # five claims at the launcher's 0.2 s poll
        assert await running(flooding) == busy
        quiet_run = await quiet.submit()
        if starts:
            await wait_state(pool, quiet_run, "running", within=5)
            assert await running(flooding) == busy  # the flood never took the kept Pod
        else:
            await asyncio.sleep(3)
            assert (await run_row(pool, quiet_run))["state"] == "pending"
        for run_id in [*flooding, quiet_run]:
            await runs.cancel(pool, run_id, reason="test over")
        for run_id in [*flooding, quiet_run]:
            await wait_state(pool, run_id, "cancelled", within=30)
