"""The Kubernetes faults of bench/faults.py: kill -9 of the operator and of the pod launcher.

Both run on the local control plane of hack/cluster (kwok's simulated nodes, no real Pods),
started once per `bench/faults.py` run the first time a fault here needs it and stopped with
the run; the CRDs are applied from crds/. Each fault has its own namespace and database.

* ``operator-kill-9``: `sundial operator` (holder name kept across restarts, as a StatefulSet
  Pod's is; its default 15 s lease) upserts ScheduledJobs (``@every 10s``, runner mode,
  ``bench.sink``) and submits user JobRuns (``bench.sink``), which two `sundial runner`s
  execute against the fenced sink. It is killed three times at random points while the
  objects are applied and restarted; it is also restarted whenever it exits on its own, as the
  kubelet would (it exits by design when a lease renewal comes too late). Lost: a JobRun whose
  run was never created, a ScheduledJob that has no schedule, or a schedule that did not fire
  again after the last restart, plus the sink audit of every run (faults.Fault.audit).
* ``pod-launcher-kill-9``: `sundial pod-launcher` launches pod-mode runs (kwok runs each Pod
  for 2 s; a 15 s launcher lease) and is killed three times while it holds leases. Each
  restart has a new worker id, as a Deployment's Pod would, so the dead launcher's leases
  expire, the maintainer of `sundial scheduler` requeues their runs and the new launcher
  starts new attempts while the old attempts' Pods may still end. Pods run no code on kwok,
  so the fenced sink of a pod run is its finish: the launcher ends a run from one Pod's
  outcome under that attempt's fence. Lost: a run not completed, or completed with no Pod
  recorded; stale accepted: a run completed from a Pod of another attempt than its last (a
  Pod's name ends with its attempt); stale rejected: Pods of superseded attempts at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import stack

from sundial.localdev import cluster, crds

if TYPE_CHECKING:
    from faults import Fault, Sizes

ROOT = Path(__file__).resolve().parents[1]
_CLUSTERS: dict[int, cluster.LocalCluster] = {}
#: A running cluster to use instead of starting one (`bench/faults.py --kubeconfig`).
KUBECONFIG: Path | None = None


def local_cluster(f: Fault) -> cluster.LocalCluster:
    """The run's cluster: started at the first call and stopped when the run's resources
    close, or the one of ``KUBECONFIG`` (left running)."""
    key = id(f.resources)
    if key not in _CLUSTERS:
        if KUBECONFIG is not None:
            started = cluster.LocalCluster(KUBECONFIG, cluster.bin_dir() / "kubectl")
        else:
            state = Path(tempfile.mkdtemp(prefix="sundial-faults-cluster-"))
            f.resources.callback(shutil.rmtree, state, ignore_errors=True)
            # Builds only what the cache outside the clone lacks: on a fresh machine the
            # control plane's binaries, 12-18 minutes once (hack/cluster/README.md).
            print("  building the local cluster's missing binaries, if any", flush=True)
            cluster.build(log_path=state / "build.log")
            started = cluster.start(state / "cluster", owner_pid=os.getpid())
            f.resources.callback(started.stop)
        f.resources.callback(_CLUSTERS.pop, key, None)
        _CLUSTERS[key] = started
        started.kubectl("apply", "--server-side", "-f", str(ROOT / "crds"))
        crds.wait_established(started.kubectl)
    return _CLUSTERS[key]


def _namespace(kube: cluster.LocalCluster, f: Fault) -> str:
    """A namespace of the fault's own, deleted with the run's resources."""
    name = f"fault-{f.name}-{uuid.uuid4().hex[:6]}"
    kube.kubectl("create", "namespace", name)
    f.resources.callback(kube.kubectl, "delete", "namespace", name, "--wait=false", check=False)
    return name


def _apply(kube: cluster.LocalCluster, namespace: str, items: list[dict[str, Any]]) -> None:
    for first in range(0, len(items), 200):
        document = {"apiVersion": "v1", "kind": "List", "items": items[first : first + 200]}
        for attempt in range(5):
            applied = kube.kubectl(
                "apply", "-n", namespace, "-f", "-", stdin=json.dumps(document), check=False
            )
            if applied.returncode == 0:
                break
            time.sleep(1 + attempt)
        else:
            raise RuntimeError(f"kubectl apply failed: {applied.stderr.strip()}")


def _list(kube: cluster.LocalCluster, namespace: str, kind: str) -> list[dict[str, Any]]:
    listed = kube.kubectl("get", kind, "-n", namespace, "-o", "json")
    return list(json.loads(listed.stdout)["items"])


class Supervised:
    """A process restarted whenever it exits, as the kubelet restarts a crashed container: the
    operator exits by design when its lease renewal comes too late (ADR 0008), which a 3 s
    lease on a loaded machine does. ``exits`` counts those exits; our kills are not counted."""

    def __init__(self, start: Callable[[], subprocess.Popen[bytes]]) -> None:
        self._start = start
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.exits = 0
        self.child = start()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stopped.wait(0.5):
            with self._lock:
                if self.child.poll() is not None and not self._stopped.is_set():
                    self.exits += 1
                    self.child = self._start()

    def kill_and_restart(self) -> None:
        with self._lock:
            self.child.kill()
            self.child.wait()
            self.child = self._start()

    def stop(self) -> None:
        """Stop watching (the fault's Processes stop the child)."""
        self._stopped.set()
        self._thread.join()


def operator_kill_9(f: Fault, size: Sizes) -> None:
    kube = local_cluster(f)
    namespace = _namespace(kube, f)
    schedules, jobruns = size.schedules // 10, size.runs // 5
    f.runner(200)
    f.runner(200)
    env = {"KUBECONFIG": str(kube.kubeconfig)}
    arguments = [
        "operator", "--dsn", f.dsn, "--namespace", namespace, "--liveness-port", "0",
        "--holder", "operator-0", "--lease-ttl", OPERATOR_LEASE, "--mirror-seconds", "2",
        "--no-pod-launcher",
    ]  # fmt: skip
    operator = Supervised(lambda: f.processes.start("operator", arguments, env=env))
    scheduled = [
        {
            "apiVersion": "sundial.dev/v1alpha1", "kind": "ScheduledJob",
            "metadata": {"name": f"sched-{index:05d}"},
            "spec": {
                "schedule": "@every 10s", "spreadSeconds": 5,
                "handler": {"name": "bench.sink", "args": {"seconds": 0.2}},
            },
        }
        for index in range(schedules)
    ]  # fmt: skip
    oneshots = [
        {
            "apiVersion": "sundial.dev/v1alpha1", "kind": "JobRun",
            "metadata": {"name": f"run-{index:05d}"},
            "spec": {"job": {"handler": {"name": "bench.sink", "args": {"seconds": 0.5}}}},
        }
        for index in range(jobruns)
    ]  # fmt: skip
    failures: list[BaseException] = []

    def apply_all() -> None:
        try:
            _apply(kube, namespace, scheduled)
            _apply(kube, namespace, oneshots)
        except BaseException as error:  # re-raised below, in the fault's thread
            failures.append(error)

    applier = threading.Thread(target=apply_all, daemon=True)
    applier.start()
    # Three kills at random points of the three kinds of work: upserting ScheduledJobs,
    # submitting JobRuns, and firing (the trigger and the mirror while fired runs execute).
    points = [
        ("schedules stored", "SELECT count(*) FROM schedules", f.rng.uniform(0.2, 0.8) * schedules),
        ("JobRuns submitted", "SELECT count(*) FROM job_runs WHERE schedule_id IS NULL",
         f.rng.uniform(0.2, 0.8) * jobruns),
        ("fired runs", "SELECT count(*) FROM job_runs WHERE schedule_id IS NOT NULL",
         f.rng.uniform(0.1, 0.5) * schedules),
    ]  # fmt: skip
    kills = []
    for what, count_query, threshold in points:
        deadline = time.monotonic() + size.budget * 2
        while time.monotonic() < deadline and f.query(count_query)[0][0] < threshold:
            time.sleep(0.2)
        [(reached,)] = f.query(count_query)
        kills.append(f"{reached} {what}")
        operator.kill_and_restart()
        f.last_injection = time.monotonic()
    applier.join(timeout=size.budget * 3)
    if failures:
        raise failures[0]
    # Every ScheduledJob upserted and every JobRun submitted, or the budget spent.
    wanted = {item["metadata"]["name"] for item in oneshots}
    deadline = time.monotonic() + size.budget * 2
    uids: dict[str, str] = {}
    created: dict[str, str] = {}  # uid -> creationTimestamp
    stored = 0
    while time.monotonic() < deadline:
        listed = [o for o in _list(kube, namespace, "jobruns") if o["metadata"]["name"] in wanted]
        uids = {o["metadata"]["name"]: o["metadata"]["uid"] for o in listed}
        created = {o["metadata"]["uid"]: o["metadata"]["creationTimestamp"] for o in listed}
        [(stored,)] = f.query("SELECT count(*) FROM schedules WHERE active")
        [(submitted,)] = f.query(
            f"SELECT count(*) FROM {stack.ALL_RUNS} r WHERE r.idempotency_key = ANY(%s)",
            (list(uids.values()),),
        )
        if stored >= schedules and submitted >= len(wanted) and set(uids) >= wanted:
            break
        time.sleep(1)
    in_budget = submitted
    # Every schedule must fire again after the last restart and the upserts. Not at one grid
    # time: an operator that fenced itself there has its missed fires coalesced on return.
    check = stack.grid_instant(10, 0)
    deadline = time.monotonic() + size.budget
    fired = 0
    while time.monotonic() < deadline:
        [(fired,)] = f.query(
            "SELECT count(DISTINCT schedule_id) FROM schedule_fires WHERE fire_time >= %s",
            (check,),
        )
        if fired >= schedules:
            break
        time.sleep(0.5)
    stack.suspend_schedules(f.dsn)
    f.wait_terminal(size.budget)
    [(submitted,)] = f.query(
        f"SELECT count(*) FROM {stack.ALL_RUNS} r WHERE r.idempotency_key = ANY(%s)",
        (list(uids.values()),),
    )
    f.result.lost += (schedules - stored) + (schedules - fired) + (len(wanted) - submitted)
    lags = _submission_lags(f, created)
    # The mirror catches up on its own: wait for it a little, report how far it got.
    succeeded = 0
    until = time.monotonic() + 60
    while time.monotonic() < until:
        phases = [
            (o.get("status") or {}).get("phase")
            for o in _list(kube, namespace, "jobruns")
            if o["metadata"]["name"] in wanted
        ]
        succeeded = phases.count("Succeeded")
        if succeeded == len(wanted):
            break
        time.sleep(2)
    operator.stop()
    f.result.notes.append(
        f"operator kill -9 at {', '.join(kills)}, restarted under the same holder"
        f" (it also exited {operator.exits} times on its own, restarted as a kubelet would);"
        f" {stored}/{schedules} ScheduledJobs stored, {fired}/{schedules} fired from"
        f" {check:%H:%M:%S} on; {submitted}/{len(wanted)} JobRuns submitted"
        f" ({in_budget} within the {size.budget * 2:.0f} s budget after the last kill;"
        f" from creation to run, {lags}), {succeeded} shown Succeeded"
    )


def _submission_lags(f: Fault, created: dict[str, str]) -> str:
    """Percentiles of the time from each JobRun's creationTimestamp to its run's run_at (a
    JobRun without delay is submitted to run at once, so run_at is when it was submitted)."""
    from datetime import datetime

    rows = f.query(
        f"SELECT r.idempotency_key, r.run_at FROM {stack.ALL_RUNS} r"
        " WHERE r.idempotency_key = ANY(%s)",
        (list(created),),
    )
    lags = sorted(
        (run_at - datetime.fromisoformat(created[key].replace("Z", "+00:00"))).total_seconds()
        for key, run_at in rows
    )
    if not lags:
        return "none submitted"
    return (
        f"p50 {lags[len(lags) // 2]:.0f} s, p95 {lags[int(len(lags) * 0.95)]:.0f} s,"
        f" max {lags[-1]:.0f} s"
    )


#: The operator's default lease TTL. With 3 s and 1,000 ScheduledJobs it crash-looped on this
#: machine: each restart lost its lease within seconds while it resumed the objects, and
#: exited (by design). A restart under the same holder takes the lease back at once anyway.
OPERATOR_LEASE = "15"
#: The launcher renews its leases between the steps that create and watch Pods, so on this
#: loaded machine a 3 s lease expired under a live launcher (runs were requeued and
#: dead-lettered with no kill); 15 s keeps the fault about the kill.
LAUNCHER_LEASE = "15"

POD_RUNS = """
SELECT id, state, attempt, pod_name FROM job_runs
UNION ALL SELECT id, state, attempt, pod_name FROM finished_runs
"""


def pod_launcher_kill_9(f: Fault, size: Sizes) -> None:
    from sundial.api import common
    from sundial.store import pool as store_pool
    from sundial.store import schedules as store_schedules

    kube = local_cluster(f)
    namespace = _namespace(kube, f)
    for _ in range(120):  # Pods are admitted once the namespace's ServiceAccount exists
        if kube.kubectl("get", "sa", "default", "-n", namespace, check=False).returncode == 0:
            break
        time.sleep(0.5)
    job = uuid.uuid4()
    spec = common.JobSpec.model_validate(
        {
            "template": {
                "metadata": {"annotations": {"sundial.dev/kwok-running-seconds": "2"}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
                },
            },
            # Each kill costs the runs it held a lost lease: more than the three kills.
            "retry": {"maxRetries": 5, "maxLostLeases": 10},
        }
    )

    async def upsert() -> None:
        pool = await store_pool.open_pool(f.dsn, min_size=1, max_size=1)
        try:
            await store_schedules.upsert_job(
                pool, uid=job, namespace=namespace, name="pod-fault", generation=1, spec=spec
            )
        finally:
            await pool.close()

    import asyncio

    asyncio.run(upsert())
    f.scheduler("s1")
    env = {"KUBECONFIG": str(kube.kubeconfig)}

    def launcher(worker: str) -> Any:
        return f.processes.start(
            "pod-launcher",
            [
                "pod-launcher", "--dsn", f.dsn, "--kubeconfig", str(kube.kubeconfig),
                "--namespace", namespace, "--worker", worker, "--instance", "fault",
                "--lease-seconds", LAUNCHER_LEASE, "--poll-seconds", "0.2", "--max-pods", "200",
            ],
            env=env,
        )  # fmt: skip

    current = launcher("launcher-0")
    f.submit(job, size.runs // 5, 0.0)
    held = []
    for index in range(1, 4):
        held.append(_wait_owner(f, f"launcher-{index - 1}", budget=60))
        time.sleep(f.rng.uniform(0.0, 1.5))
        current.kill()
        current.wait()
        f.last_injection = time.monotonic()
        current = launcher(f"launcher-{index}")
    f.wait_terminal(size.budget * 2)
    pods = _list(kube, namespace, "pods")
    audit_pods(f, pods)
    f.result.notes.append(
        f"pod launcher kill -9 x3 holding {held} runs, restarted under a new worker id;"
        f" {len(pods)} Pods left, {f.result.stale_rejected} of superseded attempts"
    )


def _wait_owner(f: Fault, owner: str, budget: float) -> int:
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        [(held,)] = f.query(
            "SELECT count(*) FROM job_runs WHERE state = 'running' AND lease_owner = %s", (owner,)
        )
        if held:
            return int(held)
        time.sleep(0.1)
    return 0


def audit_pods(f: Fault, pods: list[dict[str, Any]]) -> None:
    """The pod runs' sink audit (see the module docstring). faults.Fault.audit counts their
    states and attempts and skips the sink table for them (handlers named ``pod:``)."""
    attempts_seen: dict[int, set[int]] = {}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        with contextlib.suppress(KeyError, ValueError):
            run_id, attempt = int(labels["sundial.dev/run-id"]), int(labels["sundial.dev/attempt"])
            attempts_seen.setdefault(run_id, set()).add(attempt)
    r = f.result
    for run_id, state, attempt, pod_name in f.query(POD_RUNS):
        if state != "completed":
            continue  # counted lost by faults.Fault.audit
        if not pod_name:
            r.lost += 1
        elif not str(pod_name).endswith(f"-{attempt}"):
            r.stale_accepted += 1
        r.stale_rejected += len({a for a in attempts_seen.get(run_id, set()) if a < attempt})


FAULTS: dict[str, Callable[[Fault, Sizes], None]] = {
    "operator-kill-9": operator_kill_9,
    "pod-launcher-kill-9": pod_launcher_kill_9,
}
