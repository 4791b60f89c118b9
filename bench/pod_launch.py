"""Pod mode against native CronJobs on the same local cluster, side by side in one run.

Not a test: prints figures (DESIGN.md section 11). Starts a throwaway PostgreSQL and the local
control plane of hack/cluster (or uses --dsn / --kubeconfig), then creates:

- N Sundial ScheduledJobs (pod mode, ``* * * * *``, spread 0) in namespace ``bench-sundial``,
  fired by ``scheduler.trigger.TriggerLoop`` and launched by ``pods.launcher.PodLauncher``,
  both in this process with their default settings (poll 1 s);
- N native CronJobs (``* * * * *``) in ``bench-cron``, run by kube-controller-manager's CronJob
  and Job controllers;

with the same one-container template (kwok succeeds it after 1 s). A watch on Pods records when
each Pod was first seen. Fire time: Sundial's ``sundial.dev/fire-time`` annotation; for a
CronJob Pod, its Job's name ends with the scheduled time in minutes since the epoch (the
controller's naming). For every minute boundary after setup, for each system:

- skew: Pod first seen by the watch minus its fire time (p50, p99, max);
- launch rate: Pods of that minute / (last Pod seen - fire time), in Pods per second.

    .venv/bin/python bench/pod_launch.py [--jobs 50] [--minutes 2]

Measured 2026-11-29 on this machine (2 shared cores, load ~3), `--jobs 100 --minutes 2`:

    sundial  23:46  pods 100  skew p50 2.56 s  p99  4.07 s  max  4.07 s  launch rate 24.6 pods/s
    sundial  23:47  pods 100  skew p50 1.09 s  p99  1.62 s  max  1.68 s  launch rate 59.6 pods/s
    cronjob  23:46  pods 100  skew p50 9.02 s  p99 20.32 s  max 20.42 s  launch rate  4.9 pods/s
    cronjob  23:47  pods 100  skew p50 9.13 s  p99 19.58 s  max 20.08 s  launch rate  5.0 pods/s

Not profiled. The CronJob path is two controllers (CronJob creates Jobs, Job creates Pods),
run by kube-controller-manager with its default client rate limit and worker counts (hack/cluster
sets none), which plausibly explains ~5 Pods/s; Sundial's launcher creates Pods directly. Sundial's
first minute is slower than its second (warm-up, one sample: repeat before quoting it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
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

SUNDIAL_NS = "bench-sundial"
CRON_NS = "bench-cron"
POD_SPEC: dict[str, Any] = {
    "terminationGracePeriodSeconds": 1,
    "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
}


class PodClock:
    """First-seen time of every Pod in the two namespaces, from one watch per namespace."""

    def __init__(self, core: client.CoreV1Api) -> None:
        self.seen: dict[tuple[str, str], tuple[float, float]] = {}  # -> (seen, fire time)
        self._core = core
        self._watches = [watch.Watch(), watch.Watch()]
        self._lock = threading.Lock()

    def start(self) -> None:
        for namespace, watcher in zip((SUNDIAL_NS, CRON_NS), self._watches, strict=True):
            threading.Thread(target=self._record, args=(namespace, watcher), daemon=True).start()

    def stop(self) -> None:
        for watcher in self._watches:
            watcher.stop()

    def _record(self, namespace: str, watcher: watch.Watch) -> None:
        with contextlib.suppress(Exception):  # the watch ends when the benchmark stops it
            for event in watcher.stream(self._core.list_namespaced_pod, namespace):
                seen = time.time()
                pod = event["object"]
                key = (namespace, pod.metadata.name)
                fire = _fire_time(namespace, pod)
                with self._lock:
                    if key not in self.seen and fire is not None:
                        self.seen[key] = (seen, fire)


def _fire_time(namespace: str, pod: Any) -> float | None:
    if namespace == SUNDIAL_NS:
        stamp = (pod.metadata.annotations or {}).get(manifests.ANNOTATION_FIRE_TIME)
        return None if stamp is None else datetime.fromisoformat(stamp).timestamp()
    job_name = (pod.metadata.labels or {}).get("job-name", "")
    suffix = job_name.rsplit("-", 1)[-1]
    return float(int(suffix) * 60) if suffix.isdigit() else None


def create_cronjobs(batch: client.BatchV1Api, jobs: int) -> None:
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
                        "template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}},
                    }
                },
            },
        }
        batch.create_namespaced_cron_job(CRON_NS, body)


async def create_scheduled_jobs(pool: store_pool.Pool, jobs: int) -> None:
    spec = scheduled_job.ScheduledJobSpec.model_validate(
        {
            "schedule": "* * * * *",
            "concurrencyPolicy": "Allow",
            "template": {"spec": POD_SPEC},
        }
    )
    for number in range(jobs):
        await schedules.upsert(
            pool,
            uid=uuid.uuid4(),
            namespace=SUNDIAL_NS,
            name=f"job-{number:04d}",
            generation=1,
            spec=spec,
            now=datetime.now(UTC),
        )


def summarize(name: str, seen: dict[tuple[str, str], tuple[float, float]], after: float) -> None:
    by_minute: dict[float, list[float]] = defaultdict(list)
    namespace = SUNDIAL_NS if name == "sundial" else CRON_NS
    for (pod_namespace, _name), (seen_at, fire) in seen.items():
        if pod_namespace == namespace and fire >= after:
            by_minute[fire].append(seen_at - fire)
    for fire in sorted(by_minute):
        skews = sorted(by_minute[fire])
        p99 = skews[min(len(skews) - 1, round(0.99 * (len(skews) - 1)))]
        rate = len(skews) / max(skews[-1], 1e-3)
        minute = datetime.fromtimestamp(fire, UTC).strftime("%H:%M")
        print(
            f"{name:8s} {minute}  pods {len(skews):5d}  skew p50 {statistics.median(skews):6.2f} s"
            f"  p99 {p99:6.2f} s  max {skews[-1]:6.2f} s  launch rate {rate:7.1f} pods/s"
        )


async def _service_account_ready(core: client.CoreV1Api, namespace: str) -> None:
    # Pods are refused until the namespace's default ServiceAccount exists.
    for _ in range(300):
        if core.list_namespaced_service_account(namespace).items:
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"no default ServiceAccount in {namespace} after 60 s")


async def bench(dsn: str, kubeconfig: Path, jobs: int, minutes: int) -> None:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(api)
    for namespace in (SUNDIAL_NS, CRON_NS):
        core.create_namespace({"metadata": {"name": namespace}})
    for namespace in (SUNDIAL_NS, CRON_NS):
        await _service_account_ready(core, namespace)
    migrate.migrate(dsn)
    pool = await store_pool.open_pool(dsn, min_size=2, max_size=8)
    clock = PodClock(core)
    clock.start()
    stop = asyncio.Event()
    try:
        await create_scheduled_jobs(pool, jobs)
        create_cronjobs(client.BatchV1Api(api), jobs)
        settings = launcher.LauncherSettings(
            worker="bench-launcher",
            namespaces=[SUNDIAL_NS],
            max_pods=max(200, 4 * jobs),
            claim_batch=max(50, jobs),
            manifest=manifests.ManifestSettings(instance="bench"),
        )
        pod_launcher = launcher.PodLauncher(pool, api, settings)
        loop = trigger.TriggerLoop(pool, holder="bench-trigger")
        tasks = [asyncio.create_task(pod_launcher.run(stop)), asyncio.create_task(loop.run(stop))]
        # Count only minutes that both systems had fully set up before.
        after = (time.time() // 60 + 1) * 60
        end = after + minutes * 60 + 45
        print(f"{jobs} ScheduledJobs and {jobs} CronJobs set up; measuring {minutes} minute(s)")
        await asyncio.sleep(end - time.time())
        stop.set()
        await asyncio.gather(*tasks)
    finally:
        clock.stop()
        await pool.close()
    last_fire = after + (minutes - 1) * 60
    seen = {key: value for key, value in clock.seen.items() if value[1] <= last_fire}
    summarize("sundial", seen, after)
    summarize("cronjob", seen, after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--minutes", type=int, default=2)
    parser.add_argument("--dsn", default=None, help="an empty, migratable database")
    parser.add_argument("--kubeconfig", type=Path, default=None, help="a cluster with kwok nodes")
    args = parser.parse_args()

    @contextlib.contextmanager
    def kube() -> Iterator[Path]:
        if args.kubeconfig:
            yield args.kubeconfig
            return
        local = cluster.start(Path(tempfile.mkdtemp(prefix="sundial-bench-")))
        try:
            yield local.kubeconfig
        finally:
            local.stop()

    with kube() as kubeconfig:
        if args.dsn:
            asyncio.run(bench(args.dsn, kubeconfig, args.jobs, args.minutes))
        else:
            with postgres.throwaway_postgres() as server:
                asyncio.run(bench(server.dsn, kubeconfig, args.jobs, args.minutes))
    print("command: .venv/bin/python " + " ".join(["bench/pod_launch.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
