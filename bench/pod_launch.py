"""Pod mode against native CronJobs on the same local cluster, side by side in one run.

Not a test: prints figures (docs/performance.md). Starts a throwaway PostgreSQL and the local
control plane of hack/cluster (or uses --dsn / --kubeconfig), then, for each scenario (kwok's
simulated nodes; with --real-node, then the cluster's real node too), creates:

- N Sundial ScheduledJobs (pod mode, ``* * * * *``, spread 0) in namespace ``bench-sundial``,
  fired by ``scheduler.trigger.TriggerLoop`` and launched by ``pods.launcher.PodLauncher``,
  both in this process with their default settings (poll 1 s);
- N native CronJobs (``* * * * *``) in ``bench-cron``, run by kube-controller-manager's CronJob
  and Job controllers;

with the same one-container template (``sleep 1``; kwok succeeds it after 1 s, the real node
runs it in the busybox image of hack/images/build, ``imagePullPolicy: Never``, with the node
selector and toleration that put it there and nowhere else). A watch on Pods records when each
Pod was first seen and first seen started (phase Running or later). Fire time: Sundial's
``sundial.dev/fire-time`` annotation; for a CronJob Pod, its Job's name ends with the
scheduled time in minutes since the epoch (the controller's naming). For every minute boundary
after setup, for each scenario and system:

- created: Pod first seen by the watch minus its fire time (p50, p99);
- running: Pod first seen started minus its fire time (p50, p99, max);
- rate: Pods of that minute / (last Pod started - fire time), in Pods per second.

    .venv/bin/python bench/pod_launch.py [--jobs 50] [--minutes 2] [--real-node]

--real-node joins the cluster's real node (hack/cluster/node-up: root, cgroups, containerd;
docs/adr/0018 for the images) and runs the real scenario after the kwok one; one table prints
both. It needs a cluster this process starts (not --kubeconfig).

Measured 2026-11-29 on this machine (2 shared cores, load ~3), `--jobs 100 --minutes 2`:

    sundial  23:46  pods 100  skew p50 2.56 s  p99  4.07 s  max  4.07 s  launch rate 24.6 pods/s
    sundial  23:47  pods 100  skew p50 1.09 s  p99  1.62 s  max  1.68 s  launch rate 59.6 pods/s
    cronjob  23:46  pods 100  skew p50 9.02 s  p99 20.32 s  max 20.42 s  launch rate  4.9 pods/s
    cronjob  23:47  pods 100  skew p50 9.13 s  p99 19.58 s  max 20.08 s  launch rate  5.0 pods/s

Measured 2026-12-01, `--jobs 50 --minutes 1 --real-node` (load average 15-22: several other
sessions' test suites ran at the same time, so treat these as a loaded machine's figures):

    nodes system   minute  pods  created s (p50 p99)  running s (p50 p99 max)  Pods/s
    kwok  sundial  09:33    50    2.83   4.07    4.58   7.33   7.33    6.8
    kwok  cronjob  09:33    50    3.20  10.20    5.20  10.25  10.25    4.9
    real  sundial  09:35    50    1.59   2.91   38.10  39.46  39.46    1.3
    real  cronjob  09:35    50    2.35   4.51   30.27  42.08  42.08    1.2

On the real node both systems' 100 Pods of a minute start together on one kubelet, whose
start rate (about 1.2 Pods/s on this loaded machine; not profiled) bounds both: Sundial
creates its Pods sooner, the node starts them no faster. With `--jobs 10` (load 10-16) the
real node started its 20 Pods within 9.7 s (running p50 9.0 s Sundial, 7.0 s CronJob).

Not profiled. The CronJob path is two controllers (CronJob creates Jobs, Job creates Pods),
run by kube-controller-manager with its default client rate limit and worker counts (hack/cluster
sets none), which plausibly explains ~5 Pods/s; Sundial's launcher creates Pods directly. Sundial's
first minute is slower than its second (warm-up, one sample: repeat before quoting it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

from sundial.api import scheduled_job
from sundial.localdev import cluster, postgres
from sundial.pods import launcher, manifests
from sundial.scheduler import trigger
from sundial.store import migrate, schedules
from sundial.store import pool as store_pool

ROOT = Path(__file__).resolve().parents[1]
#: How hack/cluster/node-up labels and taints the real node: only Pods that ask land there.
REAL_NODE_PLACEMENT: dict[str, Any] = {
    "nodeSelector": {"sundial.dev/node-kind": "real"},
    "tolerations": [{"key": "sundial.dev/real-node", "operator": "Exists", "effect": "NoSchedule"}],
}
STARTED_PHASES = frozenset({"Running", "Succeeded", "Failed"})


@dataclasses.dataclass(frozen=True)
class Scenario:
    """Where the Pods run: ``kwok`` (simulated nodes) or ``real`` (the real node)."""

    nodes: str
    pod_spec: dict[str, Any]

    @property
    def sundial_namespace(self) -> str:
        return f"bench-sundial-{self.nodes}"

    @property
    def cron_namespace(self) -> str:
        return f"bench-cron-{self.nodes}"


def kwok_scenario() -> Scenario:
    container = {"name": "main", "image": "busybox:1.36", "command": ["sleep", "1"]}
    return Scenario("kwok", {"terminationGracePeriodSeconds": 1, "containers": [container]})


def real_scenario(busybox: str) -> Scenario:
    container = {
        "name": "main",
        "image": busybox,
        "imagePullPolicy": "Never",
        "command": ["sleep", "1"],
    }
    spec = {"terminationGracePeriodSeconds": 1, "containers": [container], **REAL_NODE_PLACEMENT}
    return Scenario("real", spec)


@dataclasses.dataclass
class Seen:
    fire: float
    created: float
    started: float | None = None


class PodClock:
    """When each Pod of the namespaces was first seen and first seen started (one watch each)."""

    def __init__(self, core: client.CoreV1Api, sundial_namespace: str, cron_namespace: str) -> None:
        self.seen: dict[tuple[str, str], Seen] = {}
        self.sundial_namespace = sundial_namespace
        self._namespaces = (sundial_namespace, cron_namespace)
        self._core = core
        self._watches = [watch.Watch(), watch.Watch()]
        self._lock = threading.Lock()

    def start(self) -> None:
        for namespace, watcher in zip(self._namespaces, self._watches, strict=True):
            threading.Thread(target=self._record, args=(namespace, watcher), daemon=True).start()

    def stop(self) -> None:
        for watcher in self._watches:
            watcher.stop()

    def _record(self, namespace: str, watcher: watch.Watch) -> None:
        with contextlib.suppress(Exception):  # the watch ends when the benchmark stops it
            for event in watcher.stream(self._core.list_namespaced_pod, namespace):
                now = time.time()
                pod = event["object"]
                key = (namespace, pod.metadata.name)
                fire = self._fire_time(namespace, pod)
                if fire is None:
                    continue
                with self._lock:
                    seen = self.seen.setdefault(key, Seen(fire, now))
                    if seen.started is None and (pod.status.phase or "") in STARTED_PHASES:
                        seen.started = now

    def _fire_time(self, namespace: str, pod: Any) -> float | None:
        return _fire_time(namespace == self.sundial_namespace, pod)


def _fire_time(sundial: bool, pod: Any) -> float | None:
    if sundial:
        stamp = (pod.metadata.annotations or {}).get(manifests.ANNOTATION_FIRE_TIME)
        return None if stamp is None else datetime.fromisoformat(stamp).timestamp()
    job_name = (pod.metadata.labels or {}).get("job-name", "")
    suffix = job_name.rsplit("-", 1)[-1]
    return float(int(suffix) * 60) if suffix.isdigit() else None


def create_cronjobs(batch: client.BatchV1Api, scenario: Scenario, jobs: int) -> None:
    for number in range(jobs):
        body = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": f"cron-{number:04d}"},
            "spec": {
                "schedule": "* * * * *",
                "concurrencyPolicy": "Allow",
                "successfulJobsHistoryLimit": 1,
                "failedJobsHistoryLimit": 1,
                "jobTemplate": {
                    "spec": {
                        "backoffLimit": 0,
                        "template": {"spec": {**scenario.pod_spec, "restartPolicy": "Never"}},
                    }
                },
            },
        }
        batch.create_namespaced_cron_job(scenario.cron_namespace, body)


async def create_scheduled_jobs(
    pool: store_pool.Pool, scenario: Scenario, jobs: int
) -> list[uuid.UUID]:
    spec = scheduled_job.ScheduledJobSpec.model_validate(
        {
            "schedule": "* * * * *",
            "concurrencyPolicy": "Allow",
            "template": {"spec": scenario.pod_spec},
        }
    )
    uids = [uuid.uuid4() for _ in range(jobs)]
    for number, uid in enumerate(uids):
        await schedules.upsert(
            pool,
            uid=uid,
            namespace=scenario.sundial_namespace,
            name=f"job-{number:04d}",
            generation=1,
            spec=spec,
            now=datetime.now(UTC),
        )
    return uids


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summarize(scenario: Scenario, clock: PodClock, after: float, last_fire: float) -> list[str]:
    """One row per system and minute: created and running skew, and Pods started per second."""
    rows = []
    for system, namespace in (
        ("sundial", scenario.sundial_namespace),
        ("cronjob", scenario.cron_namespace),
    ):
        by_minute: dict[float, list[Seen]] = defaultdict(list)
        for (pod_namespace, _name), seen in clock.seen.items():
            if pod_namespace == namespace and after <= seen.fire <= last_fire:
                by_minute[seen.fire].append(seen)
        for fire in sorted(by_minute):
            created = sorted(seen.created - fire for seen in by_minute[fire])
            running = sorted(seen.started - fire for seen in by_minute[fire] if seen.started)
            never = len(created) - len(running)
            minute = datetime.fromtimestamp(fire, UTC).strftime("%H:%M")
            row = (
                f"{scenario.nodes:5s} {system:8s} {minute}  {len(created):4d}"
                f"  {statistics.median(created):6.2f} {_percentile(created, 0.99):6.2f}"
            )
            if running:
                rate = len(running) / max(running[-1], 1e-3)
                row += (
                    f"  {statistics.median(running):6.2f} {_percentile(running, 0.99):6.2f}"
                    f" {running[-1]:6.2f}  {rate:5.1f}"
                )
            if never:
                row += f"  ({never} never seen started)"
            rows.append(row)
    return rows


async def _service_account_ready(core: client.CoreV1Api, namespace: str) -> None:
    # Pods are refused until the namespace's default ServiceAccount exists.
    for _ in range(300):
        if core.list_namespaced_service_account(namespace).items:
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"no default ServiceAccount in {namespace} after 60 s")


async def bench(
    dsn: str, kubeconfig: Path, scenario: Scenario, jobs: int, minutes: int
) -> list[str]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(api)
    namespaces = (scenario.sundial_namespace, scenario.cron_namespace)
    for namespace in namespaces:
        core.create_namespace({"metadata": {"name": namespace}})
    for namespace in namespaces:
        await _service_account_ready(core, namespace)
    migrate.migrate(dsn)
    pool = await store_pool.open_pool(dsn, min_size=2, max_size=8)
    clock = PodClock(core, *namespaces)
    clock.start()
    stop = asyncio.Event()
    batch = client.BatchV1Api(api)
    uids: list[uuid.UUID] = []
    try:
        uids = await create_scheduled_jobs(pool, scenario, jobs)
        create_cronjobs(batch, scenario, jobs)
        settings = launcher.LauncherSettings(
            worker=f"bench-launcher-{scenario.nodes}",
            namespaces=[scenario.sundial_namespace],
            max_pods=max(200, 4 * jobs),
            claim_batch=max(50, jobs),
            manifest=manifests.ManifestSettings(instance="bench"),
        )
        pod_launcher = launcher.PodLauncher(pool, api, settings)
        loop = trigger.TriggerLoop(pool, holder=f"bench-trigger-{scenario.nodes}")
        tasks = [asyncio.create_task(pod_launcher.run(stop)), asyncio.create_task(loop.run(stop))]
        # Count only minutes that both systems had fully set up before.
        after = (time.time() // 60 + 1) * 60
        end = after + minutes * 60 + 45
        print(
            f"{scenario.nodes}: {jobs} ScheduledJobs and {jobs} CronJobs set up;"
            f" measuring {minutes} minute(s)",
            flush=True,
        )
        await asyncio.sleep(end - time.time())
        stop.set()
        await asyncio.gather(*tasks)
    finally:
        clock.stop()
        # the next scenario shares the database and the cluster: nothing of this one fires on
        for uid in uids:
            await schedules.deactivate(pool, uid)
        for number in range(jobs):
            with contextlib.suppress(client.ApiException):
                batch.delete_namespaced_cron_job(f"cron-{number:04d}", scenario.cron_namespace)
        await pool.close()
    return summarize(scenario, clock, after, after + (minutes - 1) * 60)


def build_images(*names: str) -> dict[str, str]:
    """``hack/images/build NAMES``: the image references and archives its env file names."""
    built = subprocess.run(
        [str(ROOT / "hack" / "images" / "build"), *names], capture_output=True, text=True
    )
    if built.returncode != 0:
        raise SystemExit(f"hack/images/build failed:\n{built.stderr}")
    env_file = Path(built.stdout.strip().splitlines()[-1])
    os.environ["SUNDIAL_IMAGES_ENV"] = str(env_file)
    return dict(line.split("=", 1) for line in env_file.read_text().splitlines())


def join_real_node(local: cluster.LocalCluster) -> None:
    """``hack/cluster/node-up`` on the cluster this process started; ``down`` removes it."""
    assert local.hack_dir is not None and local.state_dir is not None
    joined = subprocess.run(
        [str(local.hack_dir / "node-up")],
        env={**os.environ, "SUNDIAL_CLUSTER_DIR": str(local.state_dir)},
        capture_output=True,
        text=True,
    )
    if joined.returncode != 0:
        raise SystemExit(
            f"hack/cluster/node-up failed (a real node needs root, cgroups and"
            f" containerd):\n{joined.stderr}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--minutes", type=int, default=2)
    parser.add_argument("--dsn", default=None, help="an empty, migratable database")
    parser.add_argument("--kubeconfig", type=Path, default=None, help="a cluster with kwok nodes")
    parser.add_argument(
        "--real-node",
        action="store_true",
        help="also run the Pods on the cluster's real node (hack/cluster/node-up), busybox image",
    )
    args = parser.parse_args()
    if args.real_node and args.kubeconfig:
        parser.error("--real-node joins a node to a cluster this run starts: drop --kubeconfig")
    scenarios = [kwok_scenario()]
    if args.real_node:
        scenarios.append(real_scenario(build_images("pause", "busybox")["SUNDIAL_IMAGE_BUSYBOX"]))

    @contextlib.contextmanager
    def kube() -> Iterator[Path]:
        if args.kubeconfig:
            yield args.kubeconfig
            return
        local = cluster.start(Path(tempfile.mkdtemp(prefix="sundial-bench-")))
        try:
            if args.real_node:
                join_real_node(local)
            yield local.kubeconfig
        finally:
            local.stop()

    async def run_all(dsn: str, kubeconfig: Path) -> list[str]:
        rows = []
        for scenario in scenarios:
            rows += await bench(dsn, kubeconfig, scenario, args.jobs, args.minutes)
        return rows

    with kube() as kubeconfig:
        if args.dsn:
            rows = asyncio.run(run_all(args.dsn, kubeconfig))
        else:
            with postgres.throwaway_postgres() as server:
                rows = asyncio.run(run_all(server.dsn, kubeconfig))
    print("nodes system   minute  pods  created s (p50 p99)  running s (p50 p99 max)  Pods/s")
    print("\n".join(rows))
    print("command: .venv/bin/python " + " ".join(["bench/pod_launch.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
