"""Sundial's user stories, end to end, as a user runs them: the chart installed, manifests
applied with ``kubectl``, outcomes read from ``kubectl get``.

Every manifest is applied at once when the module starts (``stories``), so the stories run
side by side and the tier takes about as long as its slowest story; each test then waits for,
and checks, its own. They run in file order: install first, uninstall last.
"""

from __future__ import annotations

import copy
import itertools
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import upgrade_story
import yaml
from e2e_target import JOBS, Target
from waiting import until

from sundial.api import validate
from sundial.localdev import install as installs

pytestmark = pytest.mark.timeout(420)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "demo"
#: Long enough that the operator, busy with every other story's objects at once, still
#: reconciles the delayed JobRun (and shows it Pending) before its delay is over.
DELAY_SECONDS = 30
ENDED = {"Succeeded", "Failed", "TimedOut", "Cancelled", "DeadLettered"}


def _json(target: Target, *args: str) -> Any:
    return json.loads(target.kubectl(*args, "-o", "json").stdout)


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class Phases:
    """Every (JobRun, phase) that ``kubectl get jobruns`` showed, polled twice a second."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.seen: dict[str, list[str]] = {}
        self.latest: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            listed = self.target.kubectl("get", "jobruns", "-n", JOBS, "-o", "json", check=False)
            if listed.returncode == 0:
                for run in json.loads(listed.stdout)["items"]:
                    name = run["metadata"]["name"]
                    phase = (run.get("status") or {}).get("phase")
                    self.latest[name] = run
                    phases = self.seen.setdefault(name, [])
                    if phase and (not phases or phases[-1] != phase):
                        phases.append(phase)
            self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def ended(self, name: str, *, within: float = 300) -> Any:
        """The JobRun ``name`` once its phase is terminal (fails on the deadline)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            run = self.latest.get(name)
            if run and (run.get("status") or {}).get("phase") in ENDED:
                return run
            time.sleep(0.5)
        pytest.fail(f"JobRun {name} did not end within {within:.0f}s: {self.seen.get(name)}")


def _placed(document: dict[str, Any], target: Target) -> dict[str, Any]:
    """A JobRun or ScheduledJob whose Pod template can run on ``target``: its busybox image,
    pull policy and the real node's placement (the chart places job Pods there too; the
    template says so)."""
    document = copy.deepcopy(document)
    job = document["spec"]["job"] if document["kind"] == "JobRun" else document["spec"]
    pod = job["template"].setdefault("spec", {})
    pod.update(copy.deepcopy(target.placement))
    for container in pod["containers"]:
        container["image"] = target.busybox_image
        container["imagePullPolicy"] = target.pull_policy
    return document


#: A ScheduledJob whose runs last longer than its period: concurrencyPolicy BufferOne.
OVERRUNNING = "one-at-a-time"
OVERRUN_PERIOD_SECONDS = 10
OVERRUN_SECONDS = 24


def _overrunning_job(template: dict[str, Any]) -> dict[str, Any]:
    """Every 10 s, a Pod that sleeps 24 s: fires meet an active run all the time."""
    template = copy.deepcopy(template)
    template.pop("metadata", None)
    [container] = template["spec"]["containers"]
    container["command"] = ["sleep", str(OVERRUN_SECONDS)]
    container["resources"] = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": OVERRUNNING},
        "spec": {
            "schedule": f"@every {OVERRUN_PERIOD_SECONDS}s",
            "concurrencyPolicy": "BufferOne",
            "template": template,
            "retry": {"maxRetries": 0},
            # A buffered fire starts when the run before it ends, about 14 s late, and each
            # run takes 24 s: both promises break, and nothing else changes.
            "slo": {"startLatenessSeconds": 5, "maxDurationSeconds": 15},
        },
    }


#: Three pod JobRuns, each its own job, that name one concurrency key of limit 1.
KEYED = [f"warehouse-load-{n}" for n in range(3)]


def _keyed_runs(template: dict[str, Any]) -> list[dict[str, Any]]:
    """JobRuns whose Pods sleep 5 s: with the key's limit of 1 they run one at a time."""
    template = copy.deepcopy(template)
    template.pop("metadata", None)
    [container] = template["spec"]["containers"]
    container["command"] = ["sleep", "5"]
    container["resources"] = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    return [
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": name},
            "spec": {
                "job": {
                    "template": template,
                    "concurrencyKey": {"name": "warehouse", "limit": 1},
                    "retry": {"maxRetries": 0},
                }
            },
        }
        for name in KEYED
    ]


#: A ScheduledJob that promises a completed run every minute and never fires (once a year):
#: a minute after it is applied, it has broken its freshness SLO.
STALE = "stale-report"
STALE_JOB = {
    "apiVersion": "sundial.dev/v1alpha1",
    "kind": "ScheduledJob",
    "metadata": {"name": STALE},
    "spec": {
        "schedule": "0 0 1 1 *",
        "handler": {"name": "examples.hello"},
        "slo": {"freshnessSeconds": 60},
    },
}


#: A ScheduledJob that fires every five minutes and on New Year, except today and the next two
#: days (UTC): its next fire is the first minute of the third day from now.
HOLIDAYS = "holidays"
TODAY = datetime.now(UTC).date()
HOLIDAYS_JOB = {
    "apiVersion": "sundial.dev/v1alpha1",
    "kind": "ScheduledJob",
    "metadata": {"name": HOLIDAYS},
    "spec": {
        "schedule": "0 0 1 1 *",
        "additionalSchedules": ["*/5 * * * *"],
        "exclusions": [f"{TODAY + timedelta(days=d):%m-%d}" for d in range(3)],
        "handler": {"name": "examples.hello"},
    },
}


@pytest.fixture(scope="module")
def stories(target: Target) -> Iterator[Phases]:
    """Apply every story's manifests at once; the recorder of phases they went through."""
    phases = Phases(target)
    documents: list[dict[str, Any]] = [
        *yaml.safe_load_all((EXAMPLES / "cron.yaml").read_text()),  # ScheduledJob hello
        *yaml.safe_load_all((EXAMPLES / "dag.yaml").read_text()),
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": "hello-as-pod"},
            "spec": {
                "job": {"handler": {"name": "examples.hello", "executionModel": "pod"}},
                "args": {"name": "pod"},
            },
        },
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": "hello-later"},
            "spec": {
                "jobRef": {"name": "hello"},
                "delaySeconds": DELAY_SECONDS,
                "args": {"greeting": "Delayed hello", "name": "one-shot"},
            },
        },
    ]
    oom = yaml.safe_load((EXAMPLES / "oom.yaml").read_text())
    documents.append(_placed(oom, target))
    documents.append(_placed(_overrunning_job(oom["spec"]["job"]["template"]), target))
    documents.extend(_placed(run, target) for run in _keyed_runs(oom["spec"]["job"]["template"]))
    documents.append(STALE_JOB)
    documents.append(HOLIDAYS_JOB)
    manifest = yaml.safe_dump_all([d for d in documents if d], sort_keys=False)
    target.kubectl("apply", "--server-side", "-n", JOBS, "-f", "-", stdin=manifest)
    try:
        yield phases
    finally:
        phases.stop()


def test_install_runs_the_operator_the_history_api_a_runner_and_postgresql_as_ready_pods(
    target: Target,
) -> None:
    pods = _json(target, "get", "pods", "-n", target.installation.namespace)["items"]
    components = sorted(p["metadata"]["labels"]["app.kubernetes.io/component"] for p in pods)
    assert components == ["history-api", "operator", "postgresql", "runner"]
    for pod in pods:
        ready = [c for c in pod["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", pod["metadata"]["name"]
    for crd in installs.CRDS:
        established = _json(target, "get", "crd", crd)["status"]["conditions"]
        assert {"type": "Established", "status": "True"}.items() <= {
            k: v for c in established if c["type"] == "Established" for k, v in c.items()
        }.items()


def test_an_upgrade_from_the_previous_release_keeps_runs_and_schedules_going(
    target: Target,
    stories: Phases,  # applied now, so the stories run while this one waits
) -> None:
    """The session installed the previous release and upgraded it to this checkout while a
    Pod job slept and a schedule fired every few seconds (upgrade_story): the operator was
    replaced, the Pod job ended once under its first attempt, the schedule fired and
    succeeded after the upgrade, and none of its runs failed."""
    story = target.upgrade
    if story is None:
        pytest.skip("the session made no upgrade (a cluster of yours: SUNDIAL_E2E_KUBECONFIG)")
    print(f"upgraded from {story.previous[:7]}: helm upgrade ran at {story.started_at}")
    assert story.operators_after and not story.operators_after & story.operators_before
    namespace = upgrade_story.UPGRADE

    def pod_run() -> Any:
        status = (
            _json(target, "get", "jobrun", upgrade_story.POD_RUN, "-n", namespace).get("status")
            or {}
        )
        return status if status.get("phase") in ENDED else None

    ended = until(pod_run, within=upgrade_story.POD_SECONDS + 120, what="the Pod job to end")
    assert (ended["phase"], ended["attempt"]) == ("Succeeded", 1), ended
    # In flight through the upgrade: started under the previous release, ended after.
    started, finished = _time(ended["startedAt"]), _time(ended["finishedAt"])
    assert started < story.started_at < story.upgraded_at < finished, (story, ended)
    pods = _json(
        target, "get", "pods", "-n", namespace, "-l", f"sundial.dev/run-id={ended['runId']}"
    )
    assert {p["metadata"]["labels"]["sundial.dev/attempt"] for p in pods["items"]} <= {"1"}

    def fired_after() -> Any:
        status = _json(target, "get", "scheduledjob", upgrade_story.EVERY, "-n", namespace)[
            "status"
        ]
        succeeded = status.get("lastSuccessfulTime")
        return status if succeeded and _time(succeeded) > story.upgraded_at else None

    until(fired_after, within=90, what="a fire after the upgrade to succeed")
    runs = _json(
        target, "get", "jobruns", "-n", namespace,
        "-l", f"sundial.dev/scheduledjob={upgrade_story.EVERY}",
    )["items"]  # fmt: skip
    phases = [(r["metadata"]["name"], (r.get("status") or {}).get("phase")) for r in runs]
    assert runs and all(phase not in ENDED - {"Succeeded"} for _, phase in phases), phases
    target.kubectl("delete", "scheduledjobs,jobruns", "--all", "-n", namespace, "--timeout=120s")


def test_a_scheduled_job_fires_on_its_schedule_and_the_runner_runs_it(
    target: Target, stories: Phases
) -> None:
    deadline = time.monotonic() + 120
    fired: list[str] = []
    while time.monotonic() < deadline:
        fired = [
            name
            for name, run in stories.latest.items()
            if name.startswith("hello-")
            and name not in ("hello-as-pod", "hello-later")
            and (run.get("status") or {}).get("phase") == "Succeeded"
        ]
        if fired:
            break
        time.sleep(1)
    assert fired, stories.seen
    status = stories.latest[fired[0]]["status"]
    assert status["attempt"] == 1 and status.get("fireTime"), status
    job = _json(target, "get", "scheduledjob", "hello", "-n", JOBS)
    assert job["spec"]["schedule"] == "@every 10s"


def test_a_handler_job_runs_as_a_pod_and_its_log_lines_are_in_kubectl_logs(
    target: Target, stories: Phases
) -> None:
    run = stories.ended("hello-as-pod")
    assert run["status"]["phase"] == "Succeeded", run["status"]
    pod = run["status"]["podName"]
    logs = target.kubectl("logs", "-n", JOBS, pod).stdout
    assert "Hello, pod" in logs, logs


def test_a_delayed_one_shot_waits_its_delay_then_succeeds(stories: Phases) -> None:
    run = stories.ended("hello-later")
    status = run["status"]
    assert status["phase"] == "Succeeded", status
    created = _time(run["metadata"]["creationTimestamp"])
    waited = (_time(status["startedAt"]) - created).total_seconds()
    assert waited >= DELAY_SECONDS - 1, (waited, status)  # timestamps are whole seconds
    assert stories.seen["hello-later"][0] == "Pending", stories.seen["hello-later"]


def test_the_operator_handles_jobruns_through_its_watch_not_only_its_mirror(
    stories: Phases,
) -> None:
    # Only kopf's handlers put the operator's finalizer on a user JobRun; the status mirror's
    # passes (the kubernetes client) never do. An operator whose kopf cannot reach the API
    # server still ends every story, only tens of seconds late.
    run = stories.ended("hello-later")
    assert "sundial.dev/finalizer" in (run["metadata"].get("finalizers") or []), run["metadata"]


def test_a_dag_of_jobruns_runs_each_step_after_its_upstreams(stories: Phases) -> None:
    runs = {name: stories.ended(name) for name in ("extract", "transform", "report", "load")}
    assert {n: r["status"]["phase"] for n, r in runs.items()} == dict.fromkeys(runs, "Succeeded")

    def started(name: str) -> datetime:
        return _time(runs[name]["status"]["startedAt"])

    def finished(name: str) -> datetime:
        return _time(runs[name]["status"]["finishedAt"])

    assert started("transform") >= finished("extract")
    assert started("report") >= finished("extract")
    assert started("load") >= finished("transform")


def test_jobs_that_share_a_concurrency_key_run_one_at_a_time(stories: Phases) -> None:
    runs = [stories.ended(name) for name in KEYED]
    assert [r["status"]["phase"] for r in runs] == ["Succeeded"] * len(KEYED), stories.seen
    spans = sorted(
        (_time(r["status"]["startedAt"]), _time(r["status"]["finishedAt"])) for r in runs
    )
    for (_, finished), (started, _) in itertools.pairwise(spans):
        assert started >= finished, spans


def test_a_pod_job_oom_killed_succeeds_on_retry_with_more_memory(
    target: Target, stories: Phases
) -> None:
    run = stories.ended("needs-more-memory")
    status = run["status"]
    assert (status["phase"], status["attempt"]) == ("Succeeded", 2), status
    pods = _json(target, "get", "pods", "-n", JOBS, "-l", f"sundial.dev/run-id={status['runId']}")
    by_attempt = {p["metadata"]["labels"]["sundial.dev/attempt"]: p for p in pods["items"]}
    first = by_attempt["1"]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert first["reason"] == "OOMKilled", first  # the kernel's kill, on the real node
    limits = [by_attempt[a]["spec"]["containers"][0]["resources"]["limits"] for a in ("1", "2")]
    # Twice the memory (oom.memoryIncreasePercent: 100), written in bytes by the operator.
    assert [validate.memory_bytes(limit["memory"]) for limit in limits] == [64 << 20, 128 << 20]


def test_runs_that_start_late_and_run_long_break_their_slos_with_events(
    target: Target, stories: Phases
) -> None:
    deadline = time.monotonic() + 240
    broken: dict[str, Any] = {}
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = _json(target, "get", "scheduledjob", OVERRUNNING, "-n", JOBS)
        broken = {e["slo"]: e for e in (job.get("status") or {}).get("brokenSlos") or []}
        if {"startLateness", "maxDuration"} <= set(broken):
            break
        time.sleep(2)
    assert {"startLateness", "maxDuration"} <= set(broken), job.get("status")
    assert broken["startLateness"]["reason"] == "LateStart", broken
    assert "slo.startLatenessSeconds=5" in broken["startLateness"]["message"], broken
    assert broken["maxDuration"]["reason"] == "RunTooLong", broken
    assert "slo.maxDurationSeconds=15" in broken["maxDuration"]["message"], broken
    listed = _json(
        target,
        "get",
        "events",
        "-n",
        JOBS,
        "--field-selector",
        f"involvedObject.name={OVERRUNNING}",
    )
    warned = {e["reason"] for e in listed["items"] if e["type"] == "Warning"}
    assert {"LateStart", "RunTooLong"} <= warned, [
        (e["reason"], e["message"]) for e in listed["items"]
    ]


def test_a_buffer_one_job_runs_one_at_a_time_and_a_waiting_fire_starts_when_the_run_ends(
    target: Target, stories: Phases
) -> None:
    deadline = time.monotonic() + 300
    ended: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        ended = [
            status
            for name, run in list(stories.latest.items())
            if name.startswith(f"{OVERRUNNING}-")
            and (status := run.get("status") or {}).get("phase") in ENDED
            and status.get("startedAt")
            and status.get("finishedAt")
        ]
        if len(ended) >= 3:
            break
        time.sleep(1)
    target.kubectl("delete", "scheduledjob", OVERRUNNING, "-n", JOBS, "--wait=false")
    assert len(ended) >= 3, stories.seen
    ended.sort(key=lambda status: _time(status["startedAt"]))
    for before, after in itertools.pairwise(ended):
        # One at a time: a run starts only after the one before it ended.
        assert _time(after["startedAt"]) >= _time(before["finishedAt"]), (before, after)
    waited = [
        (before, after)
        for before, after in itertools.pairwise(ended)
        if (_time(after["startedAt"]) - _time(after["fireTime"])).total_seconds()
        > OVERRUN_PERIOD_SECONDS
    ]
    # A fire that came while a run was active waited for it, and started right after it ended.
    assert waited, ended
    for before, after in waited:
        gap = (_time(after["startedAt"]) - _time(before["finishedAt"])).total_seconds()
        assert gap < 15, (before, after)
    listed = _json(
        target,
        "get",
        "events",
        "-n",
        JOBS,
        "--field-selector",
        f"involvedObject.name={OVERRUNNING}",
    )
    reasons = {event["reason"] for event in listed["items"]}
    assert {"FireBuffered", "BufferFull"} <= reasons, reasons


def test_a_job_with_no_success_within_its_freshness_slo_is_degraded_with_an_event(
    target: Target, stories: Phases
) -> None:
    deadline = time.monotonic() + 240
    degraded: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = _json(target, "get", "scheduledjob", STALE, "-n", JOBS)
        conditions = (job.get("status") or {}).get("conditions") or []
        degraded = next((c for c in conditions if c["type"] == "Degraded"), {})
        if degraded.get("status") == "True":
            break
        time.sleep(2)
    assert (degraded.get("status"), degraded.get("reason")) == ("True", "NoRecentSuccess"), job
    assert "slo.freshnessSeconds=60" in degraded["message"], degraded
    listed = _json(
        target, "get", "events", "-n", JOBS, "--field-selector", f"involvedObject.name={STALE}"
    )
    warnings = [e for e in listed["items"] if e["reason"] == "NoRecentSuccess"]
    target.kubectl("delete", "scheduledjob", STALE, "-n", JOBS, "--wait=false")
    assert [e["type"] for e in warnings] == ["Warning"], listed["items"]
    assert warnings[0]["message"] == degraded["message"]


def test_a_job_with_several_schedules_skips_its_excluded_days(
    target: Target, stories: Phases
) -> None:
    expected = f"{TODAY + timedelta(days=3):%Y-%m-%d}T00:00:00Z"
    deadline = time.monotonic() + 120
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = _json(target, "get", "scheduledjob", HOLIDAYS, "-n", JOBS)
        if (job.get("status") or {}).get("nextScheduleTime"):
            break
        time.sleep(2)
    target.kubectl("delete", "scheduledjob", HOLIDAYS, "-n", JOBS, "--wait=false")
    assert (job.get("status") or {}).get("nextScheduleTime") == expected, job.get("status")


def test_kubectl_get_jobruns_shows_each_phase(target: Target, stories: Phases) -> None:
    for name in ("hello-later", "needs-more-memory", "load"):
        stories.ended(name)
    table = target.kubectl("get", "jobruns", "-n", JOBS).stdout
    header = table.splitlines()[0].split()
    assert "PHASE" in header, table
    print(table)
    print("phases seen:", json.dumps(stories.seen))
    seen = {phase for phases in stories.seen.values() for phase in phases}
    assert {"Pending", "Running", "Succeeded"} <= seen, stories.seen
    assert stories.seen["needs-more-memory"][-1] == "Succeeded"


def test_the_run_history_of_postgresql_is_read_through_the_api_server(
    target: Target, stories: Phases
) -> None:
    """The chart's APIService is Available (the API server reaches the operator Pod with its
    front-proxy certificate) and lists this namespace's finished runs, as kubectl pages."""
    stories.ended("hello-later")
    service = _json(target, "get", "apiservice", "v1alpha1.history.sundial.dev")
    conditions = {c["type"]: c["status"] for c in service["status"]["conditions"]}
    assert conditions.get("Available") == "True", service["status"]
    listed = _json(target, "get", "runs.history.sundial.dev", "-n", JOBS, "--chunk-size=5")
    runs = listed["items"]
    assert any(run["job"] == "hello" and run["state"] == "completed" for run in runs), runs
    assert all(run["metadata"]["namespace"] == JOBS for run in runs)
    assert all(run["lastError"] is None for run in runs)


def test_helm_test_checks_the_database_and_the_operator_and_cleans_up(target: Target) -> None:
    installation = target.installation
    done = installation.helm(
        "test", installation.release, "-n", installation.namespace, "--timeout", "180s",
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Phase:          Succeeded" in done.stdout, done.stdout
    left = _json(target, "get", "pods", "-n", installation.namespace)["items"]
    assert "test" not in {p["metadata"]["labels"]["app.kubernetes.io/component"] for p in left}


#: A Pod job that sleeps through a `helm upgrade` that recreates the operator.
THROUGH_UPGRADE = "through-upgrade"
THROUGH_UPGRADE_SECONDS = 40


def test_helm_upgrade_recreates_the_operator_while_a_pod_job_runs_and_nothing_is_lost(
    target: Target, stories: Phases
) -> None:
    """The operator (and its Pod launcher) is replaced while a job Pod runs: the new one adopts
    the Pod instead of starting another, the run ends once under its first attempt, and the
    schedules go on firing."""
    oom = yaml.safe_load((EXAMPLES / "oom.yaml").read_text())
    template = copy.deepcopy(oom["spec"]["job"]["template"])
    template.pop("metadata", None)
    [container] = template["spec"]["containers"]
    container["command"] = ["sleep", str(THROUGH_UPGRADE_SECONDS)]
    container["resources"] = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    run = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": THROUGH_UPGRADE},
        "spec": {"job": {"template": template, "retry": {"maxRetries": 0}}},
    }
    target.kubectl("apply", "-n", JOBS, "-f", "-", stdin=yaml.safe_dump(_placed(run, target)))
    deadline = time.monotonic() + 120
    while True:
        status = (stories.latest.get(THROUGH_UPGRADE) or {}).get("status") or {}
        pods = []
        if status.get("runId") is not None:
            pods = _json(
                target, "get", "pods", "-n", JOBS, "-l", f"sundial.dev/run-id={status['runId']}"
            )["items"]
        if any(p["status"].get("phase") == "Running" for p in pods):
            break
        assert time.monotonic() < deadline, f"its Pod never ran: {status}, {pods}"
        time.sleep(0.5)
    installation = target.installation
    namespace = installation.namespace
    operator = "app.kubernetes.io/component=operator"
    before = {p["metadata"]["uid"] for p in _json(target, "get", "pods", "-n", namespace,
                                                  "-l", operator)["items"]}  # fmt: skip
    upgraded = installation.helm(
        "upgrade", installation.release, str(installs.chart_dir()), "-n", namespace,
        "--reuse-values", "--set-string", f"operator.podAnnotations.upgraded={time.time():.0f}",
        "--wait", "--timeout", "180s", check=False,
    )  # fmt: skip
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    upgraded_at = datetime.now(UTC)
    after = {p["metadata"]["uid"] for p in _json(target, "get", "pods", "-n", namespace,
                                                 "-l", operator)["items"]}  # fmt: skip
    assert after and not after & before, "the upgrade did not replace the operator"
    ended = stories.ended(THROUGH_UPGRADE, within=180)["status"]
    assert (ended["phase"], ended["attempt"]) == ("Succeeded", 1), ended
    pods = _json(target, "get", "pods", "-n", JOBS, "-l", f"sundial.dev/run-id={ended['runId']}")
    assert {p["metadata"]["labels"]["sundial.dev/attempt"] for p in pods["items"]} <= {"1"}
    # hello fires every 10 s: within a minute of the upgrade it has fired again.
    polling_deadline = time.monotonic() + 60
    while True:
        fired = _json(target, "get", "scheduledjob", "hello", "-n", JOBS)["status"]
        if fired.get("lastScheduleTime") and _time(fired["lastScheduleTime"]) > upgraded_at:
            break
        assert time.monotonic() < polling_deadline, f"hello stopped firing: {fired}"
        time.sleep(1)


def test_the_hot_queue_on_the_bundled_redis_runs_the_jobs_of_an_upgraded_release(
    target: Target, stories: Phases
) -> None:
    """One value moves the installed release's hot queue to Redis (the bundled one, its image
    built here): the upgrade switches the database, the runners roll onto Redis, and a run
    applied with kubectl succeeds through it, as ``kubectl get jobruns`` shows."""
    if target.redis_image is None:
        pytest.skip("on a cluster of yours the hot queue is your values file's to turn on")
    installation = target.installation
    port = installs.free_port()
    one_at_a_time = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    repository, _, tag = target.redis_image.rpartition(":")
    values = {
        "hotQueue": {
            "enabled": True,
            "port": port,
            "bundled": {
                "enabled": True,
                "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
                "host": "127.0.0.1",
                "listenAddress": "127.0.0.1",
                "hostNetwork": True,
                **target.placement,
            },
        },
        # Their Pods take ports of the node: a new one fits only once the old one is gone.
        "runner": {"updateStrategy": one_at_a_time},
        "historyApi": {"updateStrategy": one_at_a_time},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as handle:
        yaml.safe_dump(values, handle)
        handle.flush()
        upgraded = installation.helm(
            "upgrade", installation.release, str(installs.chart_dir()),
            "-n", installation.namespace, "--reuse-values", "--values", handle.name,
            "--wait", "--timeout", "240s", check=False,
        )  # fmt: skip
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    run = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": "hello-through-redis"},
        "spec": {"jobRef": {"name": "hello"}, "args": {"name": "the hot queue"}},
    }
    target.kubectl("apply", "-n", JOBS, "-f", "-", stdin=yaml.safe_dump(run))
    ended = stories.ended("hello-through-redis", within=180)["status"]
    assert ended["phase"] == "Succeeded", ended
    # Claimed through Redis: a claimer set the queue's epoch there.
    epoch = target.kubectl(
        "exec", "-n", installation.namespace, "statefulset/sundial-redis", "--",
        "redis-cli", "-h", "127.0.0.1", "-p", str(port), "--raw", "GET", "{sundial:default}:epoch",
    ).stdout.strip()  # fmt: skip
    assert epoch.split(":")[0].isdigit(), epoch


def test_uninstall_leaves_nothing_but_the_kept_crds(target: Target) -> None:
    # The operator's objects first, while its Role in the namespace (watchNamespaces) still
    # lets it take its finalizers off: a namespace's deletion removes that Role too, and the
    # objects would then wait for a finalizer nobody may remove (docs/operations.md).
    target.kubectl("delete", "scheduledjobs,jobruns", "--all", "-n", JOBS, "--timeout=120s")
    deleted = target.kubectl("delete", "namespace", JOBS, "--timeout=120s", check=False)
    if deleted.returncode != 0:
        # Left with its finalizers, a JobRun or ScheduledJob says what the operator did not do.
        left = target.kubectl("get", "sj,jr,pods", "-n", JOBS, "-o", "yaml", check=False).stdout
        log = target.kubectl(
            "logs",
            "-n",
            target.installation.namespace,
            "deploy/sundial-operator",
            "--tail=60",
            check=False,
        ).stdout
        pytest.fail(f"{deleted.stderr}\n--- left in {JOBS}:\n{left[-6000:]}\n--- operator:\n{log}")
    remaining = installs.uninstall(target.installation)
    assert remaining == []
    for crd in installs.CRDS:
        assert _json(target, "get", "crd", crd)["metadata"]["name"] == crd
