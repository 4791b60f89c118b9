"""What one pod launcher step reads from the apiserver, with K ended Pods kept around.

Not a test: prints figures (docs/adr/0009-pod-launcher.md, decision 1). Starts a throwaway
PostgreSQL and the local control plane of hack/cluster (or uses --dsn / --kubeconfig), then in
namespace ``bench-reads``:

- K ended Pods of the installation, built by ``pod_manifest`` (Sundial's labels, environment
  and security context: a real Pod's size), of runs no store row knows — what the mirror keeps
  for the JobRun windows (docs/adr/0011-finished-pod-gc.md);
- H pod-mode runs held by a ``PodLauncher`` whose Pods run for ever (kwok).

It then times S launcher steps, counting every GET over the wire (``localdev.kube_reads``),
and, for comparison, S LISTs of what the step listed before the change (every Pod of the
installation, no field selector), through the same client. Medians:

    .venv/bin/python bench/pod_launcher_reads.py [--kept 1000] [--held 20] [--steps 10]

Measured 2026-11-30 on this machine (2 shared cores, load ~4.5), defaults:

    1000 ended Pods kept, 20 running runs held, medians of 10:
    step (live LIST + GETs)   requests   1  objects    20  bytes     91,138  median    17.3 ms
    before: LIST of all Pods  requests   1  objects  1020  bytes  5,042,402  median   421.8 ms

Requests, objects and bytes are exact; the times include Python's JSON decoding and move with
the machine's load (a run beside a cluster test suite: 14.0 ms and 1,357.5 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client, config

from sundial.api import scheduled_job
from sundial.localdev import cluster, kube_reads, postgres
from sundial.pods import launcher, manifests, pod_api
from sundial.store import migrate, runs, schedules
from sundial.store import pool as store_pool

NAMESPACE = "bench-reads"
INSTANCE = "bench"
OUTCOME = "sundial.dev/kwok-outcome"
POD_TEMPLATE: dict[str, Any] = {
    "spec": {
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
    }
}
FOREIGN_RUN = 10_000_000  # run ids of the kept Pods: no store row has them


def kept_pod(run_id: int) -> dict[str, Any]:
    spec = manifests.LaunchSpec(
        run_id=run_id,
        attempt=1,
        job_id=str(uuid.uuid4()),
        job_namespace=NAMESPACE,
        job_name=f"job-{run_id % 10_000:04d}",
        handler="",
        template=POD_TEMPLATE,
        args={},
        idempotency_key=f"kept-{run_id}",
        fire_time=datetime.now(UTC),
        timeout_seconds=3600,
    )
    return manifests.pod_manifest(spec, manifests.ManifestSettings(instance=INSTANCE))


def count_phase(core: client.CoreV1Api, phase: str) -> int:
    listing = core.list_namespaced_pod(
        NAMESPACE,
        label_selector=f"{manifests.LABEL_INSTANCE}={INSTANCE}",
        field_selector=f"status.phase={phase}",
    )
    return len(listing.items)


async def wait_for(what: str, check: Any, within: float = 300) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not reached within {within} s")
        await asyncio.sleep(0.5)


async def submit_held_runs(pool: store_pool.Pool, held: int) -> None:
    spec = scheduled_job.ScheduledJobSpec.model_validate(
        {
            "schedule": "0 0 1 1 *",
            "suspend": True,
            "template": {"metadata": {"annotations": {OUTCOME: "run-forever"}}, **POD_TEMPLATE},
        }
    )
    for number in range(held):
        uid = uuid.uuid4()
        await schedules.upsert(
            pool,
            uid=uid,
            namespace=NAMESPACE,
            name=f"held-{number:04d}",
            generation=1,
            spec=spec,
            now=datetime.now(UTC),
        )
        await runs.submit(pool, uid)


def report(name: str, samples: list[tuple[kube_reads.Reads, float]]) -> None:
    def median(values: list[float]) -> float:
        return statistics.median(values)

    print(
        f"{name:24s}  requests {median([r.requests for r, _ in samples]):3.0f}"
        f"  objects {median([r.objects for r, _ in samples]):5.0f}"
        f"  bytes {median([r.body_bytes for r, _ in samples]):10,.0f}"
        f"  median {1000 * median([seconds for _, seconds in samples]):7.1f} ms"
    )


async def bench(dsn: str, kubeconfig: Path, kept: int, held: int, steps: int) -> None:
    setup_api = config.new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(setup_api)
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    for _ in range(300):  # Pods are refused until the default ServiceAccount exists
        if core.list_namespaced_service_account(NAMESPACE).items:
            break
        await asyncio.sleep(0.2)
    await asyncio.gather(
        *(
            asyncio.to_thread(core.create_namespaced_pod, NAMESPACE, kept_pod(FOREIGN_RUN + n))
            for n in range(kept)
        )
    )
    await wait_for(
        f"{kept} kept Pods Succeeded",
        lambda: asyncio.to_thread(lambda: count_phase(core, "Succeeded") == kept),
    )

    migrate.migrate(dsn)
    pool = await store_pool.open_pool(dsn, min_size=2, max_size=8)
    measured_api = config.new_client_from_config(config_file=str(kubeconfig))
    reads = kube_reads.count_reads(measured_api)
    try:
        await submit_held_runs(pool, held)
        settings = launcher.LauncherSettings(
            worker="bench-reads",
            namespaces=[NAMESPACE],
            manifest=manifests.ManifestSettings(instance=INSTANCE),
        )
        pod_launcher = launcher.PodLauncher(pool, measured_api, settings)

        async def all_running() -> bool:
            await pod_launcher.step()
            return await asyncio.to_thread(lambda: count_phase(core, "Running") == held)

        await wait_for(f"{held} held Pods Running", all_running)
        await pod_launcher.step()
        step_samples = []
        for _ in range(steps):
            reads.take()
            started = time.perf_counter()
            await pod_launcher.step()
            step_samples.append((reads.take(), time.perf_counter() - started))
        assert len(pod_launcher.held) == held, pod_launcher.held

        pods = pod_api.PodApi(measured_api, delete_grace_seconds=0)
        selector = f"{manifests.LABEL_INSTANCE}={INSTANCE}"
        list_samples = []
        for _ in range(steps):
            reads.take()
            started = time.perf_counter()
            await pods.list([NAMESPACE], selector)
            list_samples.append((reads.take(), time.perf_counter() - started))
    finally:
        await pool.close()
    print(f"{kept} ended Pods kept, {held} running runs held, medians of {steps}:")
    report("step (live LIST + GETs)", step_samples)
    report("before: LIST of all Pods", list_samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kept", type=int, default=1000, help="ended Pods kept around")
    parser.add_argument("--held", type=int, default=20, help="running runs the launcher holds")
    parser.add_argument("--steps", type=int, default=10)
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
            asyncio.run(bench(args.dsn, kubeconfig, args.kept, args.held, args.steps))
        else:
            with postgres.throwaway_postgres() as server:
                asyncio.run(bench(server.dsn, kubeconfig, args.kept, args.held, args.steps))
    print("command: .venv/bin/python " + " ".join(["bench/pod_launcher_reads.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
