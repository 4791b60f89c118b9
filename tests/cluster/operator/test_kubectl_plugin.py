"""``kubectl sundial`` against the local control plane and a real operator.

The plugin runs as users run it: the installed ``kubectl-sundial`` executable as a subprocess,
and through ``kubectl sundial …`` with the plugin's directory on PATH (kubectl finds plugins
there). Its only credentials are a kubeconfig: the admin one, or one holding a ServiceAccount
token so RBAC decides. A ``StoreWorker`` plays the runner on the real claim protocol; kwok
plays the kubelet for Pod jobs (its Pods have no logs, so ``logs`` is tested on its error path
here; real logs come with the real-node tier).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sundial.scheduling import spread
from support.operator import (
    OperatorProcess,
    StoreWorker,
    apply,
    get_json,
    pod_job,
    scheduled_job_manifest,
)
from support.polling import wait_until

pytestmark = pytest.mark.timeout(240)

PLUGIN = Path(sys.executable).parent / "kubectl-sundial"


@pytest.fixture
def plugin(kubeconfig: Path, local_cluster: Any) -> Any:
    """Run the plugin: ``plugin("get", "sj", via_kubectl=False, kubeconfig=None)``."""

    def call(
        *args: str, via_kubectl: bool = False, config: Path | None = None, timeout: float = 60
    ):
        environment = dict(os.environ, KUBECONFIG=str(config or kubeconfig))
        if via_kubectl:
            kubectl_dir = str(Path(local_cluster.kubectl_path).parent)
            environment["PATH"] = os.pathsep.join(
                [str(PLUGIN.parent), kubectl_dir, "/usr/bin", "/bin"]
            )
            command = [str(local_cluster.kubectl_path), "sundial", *args]
        else:
            command = [str(PLUGIN), *args]
        return subprocess.run(
            command, capture_output=True, text=True, env=environment, timeout=timeout, check=False
        )

    return call


def test_kubectl_finds_the_plugin_on_the_path(plugin: Any, local_cluster: Any) -> None:
    listed = subprocess.run(
        [str(local_cluster.kubectl_path), "plugin", "list"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PATH=os.pathsep.join([str(PLUGIN.parent), "/usr/bin", "/bin"])),
        check=False,
    )
    assert "kubectl-sundial" in listed.stdout, listed
    help_text = plugin("--help", via_kubectl=True)
    assert help_text.returncode == 0 and "Exit codes:" in help_text.stdout


def test_no_kubeconfig_is_a_clear_error(plugin: Any, tmp_path: Path) -> None:
    result = plugin("get", "sj", config=tmp_path / "absent")
    assert result.returncode == 7, result
    assert "no kubeconfig found" in result.stderr and "--kubeconfig" in result.stderr


@pytest.mark.timeout(480)  # many plugin processes, each a Python start-up, on a loaded machine
def test_get_run_wait_cancel_suspend_and_resume(
    sundial_operator: OperatorProcess,
    plugin: Any,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
) -> None:
    apply(
        kubectl, namespace, scheduled_job_manifest("nightly", schedule="0 0 1 1 *", queue="default")
    )
    kubectl("label", "-n", namespace, "sj", "nightly", "team=data")
    ns = ("-n", namespace)

    table = plugin("get", "sj", *ns, via_kubectl=True)
    assert table.returncode == 0, table
    header, row = table.stdout.splitlines()
    assert header.split()[:4] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND"]
    assert row.split()[0] == "nightly" and "QUEUE" not in header
    wide = plugin("get", "sj", *ns, "-o", "wide")
    assert "QUEUE" in wide.stdout and "default" in wide.stdout.splitlines()[1]
    assert plugin("get", "sj", *ns, "-o", "name").stdout.strip() == (
        "scheduledjob.sundial.dev/nightly"
    )
    assert plugin("get", "sj", *ns, "-l", "team=other").stdout == ""
    assert json.loads(plugin("get", "sj", "nightly", *ns, "-o", "json").stdout)["kind"] == (
        "ScheduledJob"
    )
    everywhere = plugin("get", "scheduledjobs", "-A", "-l", "team=data")
    assert everywhere.stdout.splitlines()[0].startswith("NAMESPACE")
    assert namespace in everywhere.stdout

    missing = plugin("get", "jr", "no-such-run", *ns)
    assert missing.returncode == 3 and "not found" in missing.stderr, missing
    assert plugin("run", "no-such-job", *ns).returncode == 3

    with StoreWorker(operator_dsn):
        created = plugin("run", "nightly", *ns, "--arg", "day=2026-11-30", "-o", "name")
        assert created.returncode == 0, created
        name = created.stdout.strip().split("/")[1]
        waited = plugin("wait", name, *ns, "--timeout", "50s", via_kubectl=True)
        assert waited.returncode == 0, waited
        assert waited.stdout.strip().splitlines()[-1].endswith("Succeeded (attempt 1)")
        body = get_json(kubectl, "-n", namespace, "jr", name)
        assert body["spec"]["jobRef"] == {"name": "nightly"}
        assert body["spec"]["args"] == {"day": "2026-11-30"}
        jobs = plugin("get", "jr", *ns)
        assert name in jobs.stdout and "Succeeded" in jobs.stdout
        with psycopg.connect(operator_dsn) as conn:
            args = conn.execute(
                "SELECT args FROM job_runs WHERE id = %s", (int(body["status"]["runId"]),)
            ).fetchone()
        assert args is not None and args[0] == {"day": "2026-11-30"}

        later = plugin("run", "nightly", *ns, "--delay", "1h", "--name", "later")
        assert later.returncode == 0 and "jobrun.sundial.dev/later created" in later.stdout
        wait_until(
            lambda: (get_json(kubectl, *ns, "jr", "later").get("status") or {}).get("runId"),
            within=30,
            what="the delayed run to be submitted",
        )
        timed_out = plugin("wait", "later", *ns, "--timeout", "2s")
        assert timed_out.returncode == 5, timed_out
        cancelled = plugin("cancel", "later", *ns)
        assert cancelled.returncode == 0 and "cancel requested" in cancelled.stdout
        ended = plugin("wait", "later", *ns, "--timeout", "60s")
        assert ended.returncode == 4, ended
        assert "Cancelled" in ended.stdout
        again = plugin("cancel", "later", *ns)
        assert again.returncode == 0 and "already finished (Cancelled)" in again.stdout

    assert plugin("suspend", "nightly", *ns).stdout.strip() == (
        "scheduledjob.sundial.dev/nightly suspended"
    )
    assert get_json(kubectl, *ns, "sj", "nightly")["spec"]["suspend"] is True
    assert "already suspended" in plugin("suspend", "nightly", *ns).stdout
    assert plugin("resume", "nightly", *ns, via_kubectl=True).returncode == 0
    assert get_json(kubectl, *ns, "sj", "nightly")["spec"]["suspend"] is False


def test_a_dead_lettered_run_is_replayed_through_its_job_run(
    sundial_operator: OperatorProcess,
    plugin: Any,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
) -> None:
    ns = ("-n", namespace)
    apply(
        kubectl,
        namespace,
        scheduled_job_manifest(
            "flaky", schedule="0 0 1 1 *", handler={"name": "tests.fail"}, retry={"maxRetries": 0}
        ),
    )
    with StoreWorker(operator_dsn):
        name = plugin("run", "flaky", *ns, "-o", "name").stdout.strip().split("/")[1]
        failed = plugin("wait", name, *ns, "--timeout", "50s")
        assert failed.returncode == 1, failed
        phase = get_json(kubectl, *ns, "jr", name)["status"]["phase"]
        assert phase in ("DeadLettered", "Failed")
        # The handler now succeeds: the same run, replayed, ends Succeeded on attempt 2.
        kubectl(
            "patch",
            *ns,
            "sj",
            "flaky",
            "--type=merge",
            "-p",
            '{"spec":{"handler":{"name":"tests.ok"}}}',
        )
        with psycopg.connect(operator_dsn) as conn:
            conn.execute("UPDATE job_runs SET handler = 'tests.ok' WHERE handler = 'tests.fail'")
        replayed = plugin("replay", name, *ns, via_kubectl=True)
        assert replayed.returncode == 0, replayed
        assert "replayed" in replayed.stdout
        done = plugin("wait", name, *ns, "--timeout", "50s")
        assert done.returncode == 0, done
        status = get_json(kubectl, *ns, "jr", name)["status"]
        assert status["attempt"] == 2
        annotations = get_json(kubectl, *ns, "jr", name)["metadata"].get("annotations") or {}
        assert "sundial.dev/replay" not in annotations
    refused = plugin("replay", name, *ns)
    assert refused.returncode == 1 and "only DeadLettered, Failed, TimedOut" in refused.stderr


class JobRunVersions:
    """Every version of one JobRun from a watch, recorded by a thread: ``(has the replay
    annotation, phase, attempt)``, in the apiserver's order."""

    def __init__(self, api_client: Any, namespace: str, name: str) -> None:
        from kubernetes import client, watch

        self.versions: list[tuple[bool, str | None, int]] = []
        self._stopping = False
        self._watch = watch.Watch()
        custom = client.CustomObjectsApi(api_client)
        listed = custom.list_namespaced_custom_object(
            "sundial.dev", "v1alpha1", namespace, "jobruns", field_selector=f"metadata.name={name}"
        )
        self._arguments = (custom, namespace, name, listed["metadata"]["resourceVersion"])
        self._thread = threading.Thread(target=self._record, daemon=True)
        self._thread.start()

    def _record(self) -> None:
        try:
            self._stream()
        except Exception:  # the stream cut by stop(); anything else shows as missing versions
            if not self._stopping:
                raise

    def _stream(self) -> None:
        custom, namespace, name, version = self._arguments
        for event in self._watch.stream(
            custom.list_namespaced_custom_object,
            "sundial.dev",
            "v1alpha1",
            namespace,
            "jobruns",
            field_selector=f"metadata.name={name}",
            resource_version=version,
            timeout_seconds=120,
        ):
            body = event["object"]
            status = body.get("status") or {}
            annotations = body["metadata"].get("annotations") or {}
            self.versions.append(
                (
                    "sundial.dev/replay" in annotations,
                    status.get("phase"),
                    int(status.get("attempt") or 0),
                )
            )

    def stop(self) -> None:
        self._stopping = True
        self._watch.stop()
        self._thread.join(timeout=10)


def test_the_replay_request_is_removed_only_once_the_status_shows_the_replay(
    sundial_operator: OperatorProcess,
    plugin: Any,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    api_client: Any,
) -> None:
    """``kubectl sundial replay`` reads a removed annotation as the operator's answer: a version
    without it that still shows the dead letter is a replay reported as refused."""
    ns = ("-n", namespace)
    apply(
        kubectl,
        namespace,
        scheduled_job_manifest(
            "again", schedule="0 0 1 1 *", handler={"name": "tests.fail"}, retry={"maxRetries": 0}
        ),
    )
    with StoreWorker(operator_dsn):
        name = plugin("run", "again", *ns, "-o", "name").stdout.strip().split("/")[1]
        assert plugin("wait", name, *ns, "--timeout", "50s").returncode == 1
        dead = get_json(kubectl, *ns, "jr", name)["status"]
        versions = JobRunVersions(api_client, namespace, name)
        try:
            replayed = plugin("replay", name, *ns, "--timeout", "60s")
            assert replayed.returncode == 0, replayed
            wait_until(
                lambda: any(
                    not has and attempt > dead["attempt"] for has, _, attempt in versions.versions
                ),
                within=30,
                what="a version with the replay's answer and no request",
            )
        finally:
            versions.stop()
    requested = [i for i, (has, _, _) in enumerate(versions.versions) if has]
    assert requested, versions.versions
    for has, phase, attempt in versions.versions[requested[0] :]:
        if not has:
            assert phase not in ("DeadLettered", "Failed") or attempt > dead["attempt"], (
                versions.versions
            )


def test_a_dead_lettered_scheduled_run_is_replayed_through_its_mirrored_job_run(
    sundial_operator: OperatorProcess,
    plugin: Any,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
) -> None:
    ns = ("-n", namespace)
    manifest = json.loads(
        scheduled_job_manifest(
            "fired", schedule="0 0 1 1 *", handler={"name": "tests.fail"}, retry={"maxRetries": 0}
        )
    )
    manifest["metadata"]["annotations"] = {"sundial.dev/run-now": "1"}
    apply(kubectl, namespace, json.dumps(manifest))
    with StoreWorker(operator_dsn):

        def mirrored_failure() -> str | None:
            items = get_json(kubectl, *ns, "jr", "-l", "sundial.dev/scheduledjob=fired")["items"]
            for item in items:
                if (item.get("status") or {}).get("phase") in ("DeadLettered", "Failed"):
                    return str(item["metadata"]["name"])
            return None

        name = wait_until(mirrored_failure, within=60, what="the mirrored dead letter")
        with psycopg.connect(operator_dsn) as conn:
            conn.execute("UPDATE job_runs SET handler = 'tests.ok' WHERE handler = 'tests.fail'")
        replayed = plugin("replay", name, *ns)
        assert replayed.returncode == 0, replayed
        done = plugin("wait", name, *ns, "--timeout", "50s")
        assert done.returncode == 0, done
        assert get_json(kubectl, *ns, "jr", name)["status"]["attempt"] == 2


def test_backfill_creates_one_run_per_fire_time_once(
    sundial_operator: OperatorProcess,
    plugin: Any,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
) -> None:
    ns = ("-n", namespace)
    apply(
        kubectl, namespace, scheduled_job_manifest("hourly", schedule="0 */6 * * *", suspend=True)
    )
    now = datetime.datetime.now(datetime.UTC)
    start = (now - datetime.timedelta(days=2)).replace(minute=0, second=0, microsecond=0)
    end = now - datetime.timedelta(minutes=1)
    span = ("--from", start.isoformat(), "--to", end.isoformat())
    expected = sorted(
        start + datetime.timedelta(hours=h)
        for h in range(0, 60)
        if (start + datetime.timedelta(hours=h)).hour % 6 == 0
        and start + datetime.timedelta(hours=h) <= end
    )
    dry = plugin("backfill", "hourly", *ns, *span, "--dry-run")
    assert dry.returncode == 0, dry
    assert f"{len(expected)} fire times; nothing created" in dry.stdout
    assert get_json(kubectl, *ns, "jr")["items"] == []
    too_many = plugin("backfill", "hourly", *ns, *span, "--max", str(len(expected) - 1))
    assert too_many.returncode == 2 and "raise --max" in too_many.stderr
    future = plugin("backfill", "hourly", *ns, "--from", start.isoformat(), "--to", "2999-01-01")
    assert future.returncode == 2 and "in the future" in future.stderr

    with StoreWorker(operator_dsn):
        first = plugin("backfill", "hourly", *ns, *span)
        assert first.returncode == 0, first
        assert f"{len(expected)} created, 0 already there" in first.stdout
        second = plugin("backfill", "hourly", *ns, *span, via_kubectl=True)
        assert f"0 created, {len(expected)} already there" in second.stdout

        def fire_times() -> list[str] | None:
            items = get_json(kubectl, *ns, "jr", "-l", "sundial.dev/backfill-of=hourly")["items"]
            found = sorted((i.get("status") or {}).get("fireTime") or "" for i in items)
            return found if len(found) == len(expected) and all(found) else None

        found = wait_until(fire_times, within=60, what="every backfilled run's fire time")
    assert [datetime.datetime.fromisoformat(f.replace("Z", "+00:00")) for f in found] == expected
    with psycopg.connect(operator_dsn) as conn:
        row = conn.execute("SELECT count(*) FROM job_runs WHERE fire_time IS NOT NULL").fetchone()
    assert row is not None and row[0] == len(expected)


def test_next_previews_the_fires_the_operator_schedules_with_the_jobs_spread(
    sundial_operator: OperatorProcess, plugin: Any, kubectl: Any, namespace: str
) -> None:
    """From the cluster the preview knows the job's uid, so each run's start carries the
    job's own spread offset; its first run's start is the operator's nextScheduleTime."""
    ns = ("-n", namespace)
    manifest = scheduled_job_manifest(
        "spread", schedule="17 */2 * * *", timeZone="America/Santiago", spreadSeconds=900
    )
    apply(kubectl, namespace, manifest)
    body = wait_until(
        lambda: (
            (b := get_json(kubectl, *ns, "sj", "spread")).get("status", {}).get("nextScheduleTime")
            and b
        ),
        within=60,
        what="the operator's nextScheduleTime",
    )
    listed = plugin("next", "spread", *ns, "--count", "4", "-o", "json")
    assert listed.returncode == 0, listed
    fires = json.loads(listed.stdout)["fires"]
    # nextScheduleTime is when the next run is due (the fire plus the spread), to the second.
    assert fires[0]["runAt"][:19] + "Z" == body["status"]["nextScheduleTime"]
    offset = spread.offset_for(body["metadata"]["uid"], 900)
    for fire in fires:
        moment = datetime.datetime.fromisoformat(fire["fireTime"].replace("Z", "+00:00"))
        assert fire["runAt"] == (moment + offset).isoformat().replace("+00:00", "Z")
        assert fire["localTime"].endswith(":17:00-03:00") or fire["localTime"].endswith(
            ":17:00-04:00"
        )
    missing = plugin("next", "no-such-job", *ns)
    assert missing.returncode == 3, missing
    assert "no-such-job" in missing.stderr


def test_logs_of_a_pod_job_on_kwok_and_of_a_runner_job_say_why_there_are_none(
    pod_operator: OperatorProcess,
    kwok_nodes: list[str],
    plugin: Any,
    kubectl: Any,
    namespace: str,
) -> None:
    ns = ("-n", namespace)
    apply(kubectl, namespace, pod_job("pods", "run-forever", run_now=False))
    name = plugin("run", "pods", *ns, "-o", "name").stdout.strip().split("/")[1]

    def pod_running() -> bool:
        status = get_json(kubectl, *ns, "jr", name).get("status") or {}
        return status.get("phase") == "Running" and bool(status.get("podName"))

    wait_until(pod_running, within=60, what="the run's Pod")
    logs = plugin("logs", name, *ns, via_kubectl=True)
    assert logs.returncode == 1, logs
    assert "==> attempt 1: pod/" in logs.stdout
    assert "cannot read the log of pod/" in logs.stderr
    assert plugin("logs", name, *ns, "--attempt", "7").returncode == 1

    apply(kubectl, namespace, scheduled_job_manifest("handler", schedule="0 0 1 1 *"))
    handler_run = plugin("run", "handler", *ns, "-o", "name").stdout.strip().split("/")[1]
    wait_until(
        lambda: (get_json(kubectl, *ns, "jr", handler_run).get("status") or {}).get("runId"),
        within=30,
        what="the handler run's submission",
    )
    hint = plugin("logs", handler_run, *ns)
    assert hint.returncode == 1
    assert "ran in a runner (handler tests.ok)" in hint.stderr and '"run_id"' in hint.stderr


def test_a_waiting_job_run_says_why_in_its_status_and_in_get_wide(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str, plugin: Any
) -> None:
    """No runner: the parent waits for one, its child waits for the parent (named), a delayed
    one waits for its run time; each says so in ``status.waiting``, its Reconciling
    condition and the WAITING column of ``kubectl sundial get jr -o wide``."""
    inline = {"handler": {"name": "tests.ok"}}

    def job_run(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": name},
            "spec": {"job": inline, **spec},
        }

    items = [job_run("parent"), job_run("child", dependsOn=["parent"])]
    items.append(job_run("later", delaySeconds=3600))
    apply(kubectl, namespace, json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))

    def waiting(name: str) -> tuple[str, str] | None:
        sundial_operator.assert_alive()
        status = get_json(kubectl, "-n", namespace, "jr", name).get("status") or {}
        reconciling = [c for c in status.get("conditions") or () if c["type"] == "Reconciling"]
        if not status.get("waiting") or not reconciling:
            return None
        return reconciling[0]["reason"], status["waiting"]

    parent_status = wait_until(lambda: waiting("parent"), within=60, what="the parent waiting")
    assert parent_status[0] in ("WaitingForRunner", "Unclaimable"), parent_status
    parent_run = get_json(kubectl, "-n", namespace, "jr", "parent")["status"]["runId"]
    child = wait_until(lambda: waiting("child"), within=60, what="the child waiting")
    assert child[0] == "WaitingForUpstream", child
    assert f"run {parent_run} (" in child[1] and "pending" in child[1], child
    later = wait_until(lambda: waiting("later"), within=60, what="the delayed run waiting")
    assert later[0] == "RunAtInFuture", later

    wide = plugin("get", "jr", "-n", namespace, "-o", "wide")
    assert wide.returncode == 0, wide
    header, *rows = wide.stdout.splitlines()
    assert header.split()[-1] == "WAITING", header
    [child_row] = [row for row in rows if row.startswith("child ")]
    assert f"waits for 1 upstream run to complete: run {parent_run}" in child_row


def test_version_names_the_plugin_the_cluster_and_the_sundial_api(plugin: Any) -> None:
    shown = plugin("version", via_kubectl=True)
    assert shown.returncode == 0, shown
    lines = dict(line.split(": ", 1) for line in shown.stdout.strip().splitlines())
    assert lines["Client Version"][0].isdigit()
    assert lines["Kubernetes Version"].startswith("v1.")
    assert lines["Sundial API"] == "sundial.dev/v1alpha1"
    assert "History API" in lines


def test_as_and_as_group_act_as_another_user_whom_rbac_judges(
    sundial_operator: OperatorProcess, plugin: Any, kubectl: Any, namespace: str
) -> None:
    apply(kubectl, namespace, scheduled_job_manifest("seen", schedule="0 0 1 1 *"))
    ns = ("-n", namespace)
    refused = plugin("get", "sj", *ns, "--as", "jane@example.com")
    assert refused.returncode == 6, refused
    assert "jane@example.com" in refused.stderr or "forbidden" in refused.stderr.lower()
    try:
        # A reader of ScheduledJobs (this session applies the CRDs without the chart, so the
        # built-in view role does not aggregate them), bound to a user and to a group.
        kubectl(
            "create", "role", "-n", namespace, "sj-reader", "--verb=get,list",
            "--resource=scheduledjobs.sundial.dev",
        )  # fmt: skip
        kubectl(
            "create", "rolebinding", "-n", namespace, "jane-views", "--role=sj-reader",
            "--user=jane@example.com",
        )  # fmt: skip
        kubectl(
            "create", "rolebinding", "-n", namespace, "team-views", "--role=sj-reader",
            "--group=team-a",
        )  # fmt: skip
        as_jane = wait_until(
            lambda: (
                done
                if (done := plugin("get", "sj", *ns, "--as", "jane@example.com")).returncode == 0
                else None
            ),
            within=30,
            what="the view binding to reach the authorizer",
        )
        assert as_jane.stdout.splitlines()[1].split()[0] == "seen"
        as_member = plugin("get", "sj", "seen", *ns, "--as", "joe", "--as-group", "team-a")
        assert as_member.returncode == 0, as_member
        # The role reads, but may not create: RBAC judged the impersonated user, not the admin.
        denied = plugin("run", "seen", *ns, "--as", "jane@example.com")
        assert denied.returncode == 6, denied
    finally:
        kubectl("delete", "rolebinding", "-n", namespace, "jane-views", "team-views",
                "--ignore-not-found")  # fmt: skip
        kubectl("delete", "role", "-n", namespace, "sj-reader", "--ignore-not-found")


def test_run_wait_follows_the_run_to_its_end_and_exits_by_its_phase(
    sundial_operator: OperatorProcess,
    plugin: Any,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
) -> None:
    apply(kubectl, namespace, scheduled_job_manifest("good", schedule="0 0 1 1 *"))
    apply(
        kubectl,
        namespace,
        scheduled_job_manifest(
            "bad", schedule="0 0 1 1 *", handler={"name": "tests.fail"}, retry={"maxRetries": 0}
        ),
    )
    ns = ("-n", namespace)
    with StoreWorker(operator_dsn):
        done = plugin("run", "good", *ns, "--wait", "--timeout", "60s", timeout=90)
        assert done.returncode == 0, done
        lines = done.stdout.strip().splitlines()
        assert lines[0].endswith(" created") and lines[-1].endswith("Succeeded (attempt 1)")
        failed = plugin("run", "bad", *ns, "--wait", "--timeout", "60s", timeout=90)
        assert failed.returncode == 1, failed
        last = failed.stdout.strip().splitlines()[-1]
        assert "DeadLettered" in last or "Failed" in last, failed
        logged = plugin("run", "good", *ns, "--log", "--timeout", "60s", timeout=90)
        assert logged.returncode == 0, logged
        # A runner's job has no Pod: the log is the runner's, and the plugin says where.
        assert "no logs:" in logged.stderr
