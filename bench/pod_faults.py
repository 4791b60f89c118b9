"""Pod storms on the real node, for bench/faults.py: many Pods OOM-killed, or evicted, at once.

Each fault runs the shipped `sundial pod-launcher` and `sundial scheduler` (for its maintainer:
due retries promoted, expired leases reaped) against the fault's own database, and real
containers on the real node of a local cluster (hack/cluster, docs/adr/0017), one cluster for
every storm of a faults.py run, removed at its end. Where the machine cannot host the node (not
root, no writable cgroups, containerd/runc/CNI missing, no images, no control-plane binaries),
the fault is skipped and its row says what is missing.

Pods cannot reach PostgreSQL (no database credential goes into a Pod, and the node's Pods reach
nothing off their bridge), so the fenced sink of the other faults is not theirs. A thread
watches the fault's Pods and keeps every Pod's last state; the outcome finalizer
(docs/adr/0023) guarantees that is the kubelet's final status. The audit then compares what the
store accepted with what the Pods say:

* lost: runs not in the end state the job's policy gives them;
* stale accepted: an attempt outcome the store committed that its Pod contradicts (an attempt
  recorded as failed whose Pod's final status is of another failure class, a run completed
  whose last attempt's Pod did not succeed), or two Pods of one run alive at once;
* executed more than once: completed runs whose completing attempt is not the first (by design
  here: an OOM-killed or evicted first attempt is retried);
* recover s: from the last injected end (the last first-attempt Pod seen OOMKilled, the last
  eviction accepted) until every run was terminal.

The storms:

* ``oom-storm``: Pods that need 48 MB under a 32Mi limit, all started at once. The job's OOM
  budget (``oom.maxRetries`` 2) and memory bump (``memoryIncreasePercent`` 100: 64Mi on the
  second attempt) make each complete on attempt 2 without spending ``retry.maxRetries`` (0).
  A quarter of the runs belong to a job that needs 256 MB, capped at 64Mi
  (``oom.maxMemory``) with ``oom.maxRetries`` 1: each is dead-lettered after two OOM kills.
* ``eviction-storm``: Pods that run until SIGTERM, all evicted through the Eviction API at
  once once Running. Each eviction is a disruption (``DisruptionTarget``), an infrastructure
  retry that does not count against ``maxRetries`` (0 here): attempt 2 completes.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import stack
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from sundial.api import scheduled_job
from sundial.localdev import cluster, real_node
from sundial.pods import manifests, outcomes
from sundial.pods.outcomes import PodState
from sundial.store import pool as store_pool
from sundial.store import runs, schedules

#: What each end of a Pod is charged as, by the failure table (docs/adr/0010).
_CLASS_OF = {
    PodState.OOM_KILLED: "oom",
    PodState.DISRUPTED: "infrastructure",
    PodState.FAILED: "error",
    PodState.GONE: "crash",
    PodState.DEADLINE_EXCEEDED: "timeout",
    PodState.NEVER_STARTED: "start_failure",
}
_NONROOT = 65532
_ALL_RUNS = """(
    SELECT id, job_id, state, attempt, retries_used, infra_retries_used, oom_retries_used,
           failure_reason FROM job_runs
    UNION ALL
    SELECT id, job_id, state, attempt, retries_used, infra_retries_used, oom_retries_used,
           failure_reason FROM finished_runs
)"""


class Unavailable(Exception):
    """The real node cannot run here; the message says what is missing."""


@dataclass
class Node:
    """The storms' cluster and real node, started on first use and stopped by ``close``."""

    local: cluster.LocalCluster | None = None
    node: real_node.RealNode | None = None
    skip: str | None = None
    state_dir: Path | None = None

    def get(self) -> tuple[cluster.LocalCluster, real_node.RealNode]:
        if self.skip is not None:
            raise Unavailable(self.skip)
        if self.local is not None and self.node is not None:
            return self.local, self.node
        try:
            self.local, self.node = self._start()
        except Unavailable as error:
            self.skip = str(error)
            raise
        except cluster.ClusterError as error:
            self.skip = f"the real node did not start: {error}"[:400]
            raise Unavailable(self.skip) from error
        return self.local, self.node

    def _start(self) -> tuple[cluster.LocalCluster, real_node.RealNode]:
        if os.geteuid() != 0:
            raise Unavailable("the real node needs root")
        built = cluster.missing_binaries()
        if built:
            raise Unavailable(
                f"the local control plane is not built ({', '.join(built)}): hack/cluster/build"
            )
        real_node.install_packages()
        lacking = real_node.missing()
        if lacking:
            raise Unavailable("this machine cannot run the real node: " + "; ".join(lacking))
        log = Path(tempfile.gettempdir()) / f"sundial-bench-images-{os.getpid()}.log"
        images = real_node.images_env(log_path=log, names=("pause", "busybox"))
        self.state_dir = Path(tempfile.mkdtemp(prefix="sundial-bench-pods-"))
        local = cluster.start(self.state_dir, owner_pid=os.getpid())
        try:
            node = real_node.start(local, images, images=("BUSYBOX",))
        except cluster.ClusterError:
            local.stop()
            raise
        atexit.register(self.close)
        return local, node

    def close(self) -> None:
        if self.local is not None:
            self.local.stop()
            self.local = None


#: One cluster for every storm of a run; stopped at exit (and by its watchdog if killed).
NODE = Node()


class PodRecorder:
    """Every Pod of a namespace as last seen by a watch, and the moments of chosen events."""

    def __init__(self, core: client.CoreV1Api, namespace: str) -> None:
        self.core = core
        self.namespace = namespace
        self.last: dict[str, dict[str, Any]] = {}
        #: (run, attempt) of Pods seen alive (Pending or Running) at once with another
        #: attempt's alive Pod of the same run.
        self.overlaps: set[tuple[int, int]] = set()
        #: Pod name -> when it was first seen OOMKilled (first attempts also apart).
        self.oom_seen: dict[str, float] = {}
        self.first_oom_seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        version = None
        while not self._stop.is_set():
            try:
                for event in self._watch.stream(
                    self.core.list_namespaced_pod,
                    self.namespace,
                    resource_version=version,
                    timeout_seconds=30,
                    _preload_content=False,
                ):
                    body = event["raw_object"]
                    version = body["metadata"]["resourceVersion"]
                    self._seen(body)
            except Exception:  # a 410 or a cut connection: relist, nothing is lost for good
                version = None
                if self._stop.wait(0.5):
                    return

    def _seen(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        with self._lock:
            self.last[name] = pod
            if outcomes.classify(pod).state is PodState.OOM_KILLED:
                self.oom_seen.setdefault(name, time.monotonic())
                if _attempt(pod) == 1:
                    self.first_oom_seen.setdefault(name, time.monotonic())
            alive = [p for p in self.last.values() if not _ended(p) and _run(p) == _run(pod)]
            if len({_attempt(p) for p in alive}) > 1:
                self.overlaps.update((_run(p), _attempt(p)) for p in alive)

    def pods(self) -> dict[tuple[int, int], dict[str, Any]]:
        with self._lock:
            return {(_run(p), _attempt(p)): p for p in self.last.values()}

    def close(self) -> None:
        self._stop.set()
        self._watch.stop()
        self._thread.join(timeout=35)


def _run(pod: dict[str, Any]) -> int:
    return int(pod["metadata"]["labels"][manifests.LABEL_RUN_ID])


def _attempt(pod: dict[str, Any]) -> int:
    return int(pod["metadata"]["labels"][manifests.LABEL_ATTEMPT])


def _ended(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


@dataclass
class Storm:
    """One storm's namespace, jobs, launcher and recorder on the real node."""

    f: Any  # faults.Fault (not imported: faults imports this module)
    local: cluster.LocalCluster
    node: real_node.RealNode
    namespace: str = field(default_factory=lambda: f"storm-{uuid.uuid4().hex[:8]}")
    jobs: dict[str, uuid.UUID] = field(default_factory=dict)
    launcher_log: Path = Path(os.devnull)

    def __post_init__(self) -> None:
        api = config.new_client_from_config(config_file=str(self.local.kubeconfig))
        self.core = client.CoreV1Api(api)
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        self.pods = PodRecorder(self.core, self.namespace)

    def template(self, command: list[str], **container: Any) -> dict[str, Any]:
        return {
            "spec": {
                **real_node.placement(),
                "terminationGracePeriodSeconds": 2,
                "securityContext": {"runAsUser": _NONROOT, "runAsGroup": _NONROOT},
                "containers": [
                    {
                        "name": "main",
                        "image": self.node.images["BUSYBOX"],
                        "imagePullPolicy": "Never",
                        "command": command,
                        **container,
                    }
                ],
            }
        }

    def define(self, name: str, spec: dict[str, Any]) -> None:
        uid = uuid.uuid4()
        model = scheduled_job.ScheduledJobSpec.model_validate(
            {"schedule": "0 0 1 1 *", "suspend": True, **spec}
        )

        async def go(pool: store_pool.Pool) -> None:
            await schedules.upsert(
                pool, uid=uid, namespace=self.namespace, name=name, generation=1,
                spec=model, now=datetime.now(UTC),
            )  # fmt: skip

        _with_pool(self.f.dsn, go)
        self.jobs[name] = uid

    def submit(self, name: str, count: int) -> list[int]:
        async def go(pool: store_pool.Pool) -> list[int]:
            return [(await runs.submit(pool, self.jobs[name])).run_id for _ in range(count)]

        ids: list[int] = _with_pool(self.f.dsn, go)
        return ids

    def start(self, max_pods: int) -> None:
        """The shipped processes: a scheduler (its maintainer) and a pod launcher."""
        self.f.scheduler("s1")
        self.launcher_log = (
            self.f.processes.log_dir / f"sundial-bench-pod-launcher-{self.namespace}.log"
        )
        log = open(self.launcher_log, "wb")  # noqa: SIM115
        launcher = subprocess.Popen(
            [
                sys.executable, "-m", "sundial", "pod-launcher", "--dsn", self.f.dsn,
                "--kubeconfig", str(self.local.kubeconfig), "--namespace", self.namespace,
                "--instance", self.namespace, "--lease-seconds", "10", "--poll-seconds", "1",
                "--max-pods", str(max_pods), "--log-level", "WARNING",
            ],
            env=self.f.processes.env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        self.f.processes.children.append(launcher)

    def wait_running(self, run_ids: list[int], budget: float) -> bool:
        deadline = time.monotonic() + budget
        wanted = set(run_ids)
        while time.monotonic() < deadline:
            running = {
                run for (run, attempt), pod in self.pods.pods().items()
                if attempt == 1 and (pod.get("status") or {}).get("phase") == "Running"
            }  # fmt: skip
            if wanted <= running:
                return True
            time.sleep(0.2)
        return False

    def audit(self, expected: dict[int, tuple[str, int]]) -> None:
        """``expected``: run id -> (its end state, its last attempt)."""
        r = self.f.result
        rows = self.f.query(
            f"SELECT id, state, attempt, retries_used, failure_reason FROM {_ALL_RUNS} r"
        )
        recorded = {
            (run, attempt): reason
            for run, attempt, reason in self.f.query(
                "SELECT run_id, attempt, failure_reason FROM job_run_attempts"
            )
        }
        pods = self.pods.pods()
        r.submitted = len(rows)
        for run_id, state, attempt, retries_used, _reason in rows:
            if (state, attempt) != expected.get(run_id) or retries_used != 0:
                r.lost += 1
            if state == "completed":
                r.completed += 1
                r.executed_twice += attempt > 1
                last = pods.get((run_id, attempt))
                if last is None or outcomes.classify(last).state is not PodState.SUCCEEDED:
                    r.stale_accepted += 1
        for (run_id, attempt), reason in recorded.items():
            pod = pods.get((run_id, attempt))
            if reason is None:
                continue
            seen = None if pod is None else _CLASS_OF.get(outcomes.classify(pod).state)
            if seen != reason:
                r.stale_accepted += 1
                r.notes.append(f"run {run_id} attempt {attempt}: stored {reason}, Pod {seen}")
        r.stale_accepted += len(self.pods.overlaps)
        # The launcher's fenced finishes that the store turned away (a lease lost meanwhile).
        r.stale_rejected = self.launcher_log.read_text(errors="replace").count("finish discarded")

    def close(self) -> None:
        self.pods.close()
        with contextlib.suppress(Exception):
            # The launcher is stopped by then (faults.py's close); take the finalizers off.
            for pod in self.core.list_namespaced_pod(self.namespace).items:
                self.core.patch_namespaced_pod(
                    pod.metadata.name, self.namespace, {"metadata": {"finalizers": None}}
                )
            self.core.delete_namespace(self.namespace)


def _with_pool(dsn: str, work: Callable[[store_pool.Pool], Any]) -> Any:
    async def go() -> Any:
        pool = await store_pool.open_pool(dsn, min_size=1, max_size=2)
        try:
            return await work(pool)
        finally:
            await pool.close()

    return asyncio.run(go())


@contextlib.contextmanager
def storm(f: Any) -> Iterator[Storm | None]:
    """The fault's storm, or None (the row says why) where the real node cannot run."""
    try:
        local, node = NODE.get()
    except Unavailable as error:
        f.result.notes.append(f"skipped: {error}")
        f.audit = lambda: f.result
        yield None
        return
    s = Storm(f, local, node)
    # faults.py audits at the sink after the fault; a storm's audit is against its Pods.
    f.audit = lambda: f.result
    try:
        yield s
    finally:
        f.result.load = stack.load_average()
        f.processes.stop_all()
        s.close()


def oom_storm(f: Any, size: Any) -> None:
    count = 12 if size.quick else 40
    with storm(f) as s:
        if s is None:
            return
        # dd reads into a 48 MB buffer (touched): OOM under 32Mi, fits in 64Mi.
        fits = s.template(
            ["sh", "-c", "dd if=/dev/zero of=/dev/null bs=48M count=1 2>/dev/null"],
            resources={"limits": {"memory": "32Mi"}, "requests": {"memory": "32Mi"}},
        )
        never = s.template(
            ["sh", "-c", "dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null"],
            resources={"limits": {"memory": "32Mi"}, "requests": {"memory": "32Mi"}},
        )
        no_retries = {"maxRetries": 0, "backoffBaseSeconds": 1, "backoffCapSeconds": 1}
        s.define("bumped", {"template": fits, "retry": no_retries,
                            "oom": {"maxRetries": 2, "memoryIncreasePercent": 100}})  # fmt: skip
        s.define("capped", {"template": never, "retry": no_retries,
                            "oom": {"maxRetries": 1, "memoryIncreasePercent": 100,
                                    "maxMemory": "64Mi"}})  # fmt: skip
        capped = count // 4
        expected = {run: ("completed", 2) for run in s.submit("bumped", count - capped)}
        expected.update({run: ("dead_lettered", 2) for run in s.submit("capped", capped)})
        s.start(max_pods=count * 2)
        f.last_injection = time.monotonic()
        f.wait_terminal(size.budget + 180)
        if s.pods.first_oom_seen:  # recovery counts from the storm: the last first OOM kill
            ended = f.last_injection + f.result.recover_seconds
            f.last_injection = max(s.pods.first_oom_seen.values())
            f.result.recover_seconds = max(0.0, ended - f.last_injection)
        # An OOM kill the runtime reported as a plain SIGKILL (Error 137, no OOMKilled): the
        # failure table charges it as an error (exit 137 alone is any SIGKILL), so with
        # maxRetries 0 that run is dead-lettered there. Counted apart, never hidden.
        misreported = sorted(
            key
            for key, pod in s.pods.pods().items()
            if (o := outcomes.classify(pod)).state is PodState.FAILED
            and o.exit_code == outcomes.SIGKILL_EXIT_CODE
        )
        for run_id, attempt in misreported:
            expected[run_id] = ("dead_lettered", attempt)
        s.audit(expected)
        [(oom_used, bumped)] = f.query(
            f"SELECT count(*) FILTER (WHERE oom_retries_used > 0), count(*) FILTER"
            f" (WHERE state = 'completed' AND oom_retries_used = 1) FROM {_ALL_RUNS} r"
        )
        limits = sorted(
            {
                f"{int(c['resources']['limits']['memory']) // 2**20}Mi"
                if str(c["resources"]["limits"]["memory"]).isdigit()
                else str(c["resources"]["limits"]["memory"])
                for (_, attempt), p in s.pods.pods().items()
                if attempt == 2
                for c in p["spec"]["containers"]
            }
        )
        f.result.notes.append(
            f"{count} Pods OOM at once ({capped} capped at 64Mi, oom.maxRetries 1):"
            f" {len(s.pods.oom_seen)} OOM kills seen; {oom_used} runs spent OOM retries,"
            f" {bumped} completed after one; attempt-2 limits {', '.join(limits)};"
            f" {len(misreported)} OOM kills the runtime reported as Error 137"
            + (f" (run, attempt: {misreported})" if misreported else "")
        )


def eviction_storm(f: Any, size: Any) -> None:
    count = 12 if size.quick else 40
    with storm(f) as s:
        if s is None:
            return
        command = ['trap "exit 143" TERM; [ "$SUNDIAL_ATTEMPT" = 1 ] && while :; do sleep 1;'
                   ' done; sleep 1']  # fmt: skip
        s.define("evicted", {"template": s.template(["sh", "-c", *command]),
                             "retry": {"maxRetries": 0, "backoffBaseSeconds": 1,
                                       "backoffCapSeconds": 1}})  # fmt: skip
        run_ids = s.submit("evicted", count)
        s.start(max_pods=count * 2)
        if not s.wait_running(run_ids, size.budget + 120):
            f.result.notes.append("not every first Pod was Running in time")
        firsts = {run: p for (run, attempt), p in s.pods.pods().items() if attempt == 1}

        def evict(pod: dict[str, Any]) -> int:
            name = pod["metadata"]["name"]
            body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=s.namespace))
            for _ in range(20):
                try:
                    s.core.create_namespaced_pod_eviction(name, s.namespace, body)
                    return 1
                except ApiException as error:
                    if error.status != 429:  # 429: a disruption budget said later
                        raise
                time.sleep(0.5)
            return 0

        with ThreadPoolExecutor(max_workers=16) as pool:
            accepted = sum(pool.map(evict, firsts.values()))
        f.last_injection = time.monotonic()
        f.wait_terminal(size.budget + 60)
        s.audit({run: ("completed", 2) for run in run_ids})
        final = {run: p for (run, attempt), p in s.pods.pods().items() if attempt == 1}
        disrupted = sum(
            1
            for p in final.values()
            if ("DisruptionTarget", "True") in outcomes.classify(p).conditions
        )
        [(infra, counted)] = f.query(
            f"SELECT count(*) FILTER (WHERE infra_retries_used = 1),"
            f" count(*) FILTER (WHERE retries_used > 0) FROM {_ALL_RUNS} r"
        )
        f.result.notes.append(
            f"{accepted} of {count} evictions accepted at once; {disrupted} Pods ended with"
            f" DisruptionTarget; {infra} runs spent one infrastructure retry, {counted} spent"
            f" maxRetries"
        )


FAULTS: dict[str, Callable[[Any, Any], None]] = {
    "oom-storm": oom_storm,
    "eviction-storm": eviction_storm,
}
