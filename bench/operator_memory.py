"""The operator's peak memory and time to Ready with N ScheduledJobs on the local cluster.

Not a test: prints figures. Starts a throwaway PostgreSQL and the local control plane of
``hack/cluster`` (binaries built once; see tests/cluster), applies the CRDs, starts
``sundial operator`` as a subprocess, applies N ScheduledJobs (``0 3 * * *``: none fires
during the run) and waits until every one reports Ready=True. Then it samples the operator's
peak resident set (VmHWM in /proc/<pid>/status) and its current RSS after a few idle mirror
passes, and counts the API requests the operator sent for ScheduledJobs and JobRuns while
idle (the apiserver's ``apiserver_request_total`` by verb, watches excluded; nothing else
calls the apiserver then; a resync LISTs every 5 minutes, in pages of 500). Readiness is
polled every 5 s with one raw LIST (``kubectl get -o json`` every 2 s cost more than half a
core on its own); the last Ready condition's
``lastTransitionTime`` gives the same figure to the second, free of the polling. The
operator's CPU time (utime + stime from /proc) is printed until Ready and while idle, and its
heap trims (``operator.heap``) from its log. Load averages are printed with the figures: the
machine may be shared.

With ``--heap DIR`` the operator runs under ``bench/operator_heap.py`` (tracemalloc with
``--heap-frames`` frames per allocation; 0: object counts and malloc figures only) and writes
a heap report into DIR once all are Ready and again when idle: where the memory goes.

The operator runs with ``MALLOC_ARENA_MAX=2``, as its image sets it (``operator/Dockerfile``:
without it glibc may give each of the API client's worker threads arenas of its own);
``--arenas 0`` runs without it, for a comparison.

    .venv/bin/python bench/operator_memory.py [--jobs 1000] [--mirror-seconds 3] [--heap DIR]
        [--idle-seconds 630]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import kubernetes

from sundial.localdev import cluster, crds, postgres
from sundial.store import migrate

REPOSITORY = Path(__file__).resolve().parents[1]


def memory_kib(pid: int) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            values[key] = int(rest.split()[0])
    return values


def request_counts(kubectl: Any) -> collections.Counter[str]:
    """apiserver_request_total for scheduledjobs and jobruns by verb, every verb but WATCH."""
    counts: collections.Counter[str] = collections.Counter()
    for line in kubectl("get", "--raw", "/metrics").stdout.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels, _, value = line.rpartition(" ")
        verb = labels.partition('verb="')[2].partition('"')[0]
        if 'group="sundial.dev"' in labels and verb != "WATCH":
            counts[verb] += int(float(value))
    return counts


def ready_conditions(api: Any) -> list[dict[str, Any]]:
    """The Ready=True conditions of the bench's ScheduledJobs."""
    response = api.list_namespaced_custom_object(
        "sundial.dev", "v1alpha1", "bench", "scheduledjobs", _preload_content=False
    )
    return [
        condition
        for item in json.loads(response.data)["items"]
        for condition in (item.get("status") or {}).get("conditions") or ()
        if condition["type"] == "Ready" and condition["status"] == "True"
    ]


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds(data_dir: Path) -> float:
    """utime + stime of the PostgreSQL server: its postmaster and every process it runs now
    (the operator's connections among them)."""
    postmaster = int((data_dir / "postmaster.pid").read_text().splitlines()[0])
    children = subprocess.run(
        ["pgrep", "-P", str(postmaster)], capture_output=True, text=True, check=False
    ).stdout.split()
    total = 0.0
    for pid in [postmaster, *map(int, children)]:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # ended meanwhile
            total += cpu_seconds(pid)
    return total


def trims(log_path: Path) -> list[dict[str, Any]]:
    """The operator's heap trims (``operator.heap``), from its log."""
    found = []
    for line in log_path.read_text(errors="replace").splitlines():
        if '"returned free heap to the OS"' in line:
            found.append(json.loads(line))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--mirror-seconds", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=None,
        help="the idle window (default: 30 s or 10 mirror passes); past 300 s it holds the "
        "5-minute resyncs (a LIST, and every ScheduledJob synced again): the steady state",
    )
    parser.add_argument("--heap", type=Path, default=None, help="write heap reports into DIR")
    parser.add_argument("--heap-frames", type=int, default=4)
    parser.add_argument("--arenas", type=int, default=2, help="MALLOC_ARENA_MAX (0: unset)")
    parser.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        metavar="FILE",
        help="after the idle window, sample the idle operator with py-spy (on PATH) for as long "
        "again and write its collapsed stacks to FILE: where the idle CPU goes",
    )
    options = parser.parse_args()

    state = Path(tempfile.mkdtemp(prefix="sundial-bench-operator-"))
    with postgres.throwaway_postgres() as server:
        dsn = server.dsn
        migrate.migrate(dsn)
        local = cluster.start(state / "cluster", owner_pid=os.getpid())
        try:
            kubectl = local.kubectl
            kubectl("apply", "--server-side", "-f", str(REPOSITORY / "crds"))
            crds.wait_established(kubectl)
            kubectl("create", "namespace", "bench")
            log_path = state / "operator.log"
            environment = {**os.environ, "KUBECONFIG": str(local.kubeconfig)}
            environment.pop("MALLOC_ARENA_MAX", None)
            if options.arenas:
                environment["MALLOC_ARENA_MAX"] = str(options.arenas)
            launch = [sys.executable, "-m", "sundial"]
            if options.heap is not None:
                options.heap.mkdir(parents=True, exist_ok=True)
                launch = [sys.executable, str(REPOSITORY / "bench" / "operator_heap.py")]
                environment["SUNDIAL_HEAP_DIR"] = str(options.heap)
                environment["SUNDIAL_HEAP_FRAMES"] = str(options.heap_frames)
            with log_path.open("wb") as log:
                operator = subprocess.Popen(
                    [
                        *launch,
                        "operator",
                        "--dsn",
                        dsn,
                        "--namespace",
                        "bench",
                        "--liveness-port",
                        "0",
                        "--mirror-seconds",
                        str(options.mirror_seconds),
                        # As the chart runs it: its launcher's Pods are collected by the
                        # mirror's Pod sweeps, every 30 s.
                        "--pod-instance",
                        "bench",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=environment,
                )
            try:
                started = time.monotonic()
                for first in range(0, options.jobs, 250):
                    items = [
                        {
                            "apiVersion": "sundial.dev/v1alpha1",
                            "kind": "ScheduledJob",
                            "metadata": {"name": f"job-{index:05d}"},
                            "spec": {"schedule": "0 3 * * *", "handler": {"name": "bench.noop"}},
                        }
                        for index in range(first, min(first + 250, options.jobs))
                    ]
                    kubectl(
                        "apply",
                        "-n",
                        "bench",
                        "-f",
                        "-",
                        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
                    )
                applied = time.monotonic() - started
                applied_at = datetime.datetime.now(datetime.UTC)
                load_applied = os.getloadavg()
                api = kubernetes.config.new_client_from_config(str(local.kubeconfig))  # type: ignore[no-untyped-call]
                custom = kubernetes.client.CustomObjectsApi(api)
                ready = 0
                conditions: list[dict[str, Any]] = []
                while time.monotonic() - started < options.timeout:
                    if operator.poll() is not None:
                        sys.exit(f"the operator exited with {operator.returncode}; see {log_path}")
                    conditions = ready_conditions(custom)
                    ready = len(conditions)
                    if ready == options.jobs:
                        break
                    time.sleep(5)
                all_ready = time.monotonic() - started
                cpu_ready = cpu_seconds(operator.pid)
                load_ready = os.getloadavg()
                # The operator's own clock, to the second, free of this loop's 5 s polling.
                last_transition = max(
                    (
                        datetime.datetime.fromisoformat(condition["lastTransitionTime"])
                        for condition in conditions
                    ),
                    default=None,
                )
                _heap_report(operator, options.heap, 1)
                time.sleep(options.mirror_seconds * 4)  # a few idle mirror passes
                idle_seconds = options.idle_seconds or max(30.0, options.mirror_seconds * 10)
                before = request_counts(kubectl)
                cpu_before = cpu_seconds(operator.pid)
                postgres_before = postgres_cpu_seconds(Path(server.data_dir))
                time.sleep(idle_seconds)
                postgres_idle = postgres_cpu_seconds(Path(server.data_dir)) - postgres_before
                idle_by_verb = request_counts(kubectl) - before
                idle_requests = idle_by_verb.total()
                idle_cpu = cpu_seconds(operator.pid) - cpu_before
                memory = memory_kib(operator.pid)
                _heap_report(operator, options.heap, 2)
                if options.py_spy is not None:
                    subprocess.run(
                        [
                            "py-spy",
                            "record",
                            "--pid",
                            str(operator.pid),
                            "--format",
                            "raw",
                            "--duration",
                            str(int(idle_seconds)),
                            "--rate",
                            "200",
                            "--output",
                            str(options.py_spy),
                        ],
                        check=True,
                        capture_output=True,
                    )
                passes = idle_seconds / options.mirror_seconds
                print(f"ScheduledJobs:            {options.jobs} (Ready: {ready})")
                print(f"applied in:               {applied:.1f} s (load {_load(load_applied)})")
                print(
                    f"all Ready after:          {all_ready:.1f} s "
                    f"({all_ready - applied:.1f} s after the last apply; load {_load(load_ready)})"
                )
                if last_transition is not None:
                    print(
                        "last Ready transition:    "
                        f"{(last_transition - applied_at).total_seconds():.1f} s after the last "
                        "apply (the operator's lastTransitionTime, to the second)"
                    )
                print(
                    f"operator CPU until Ready: {cpu_ready:.1f} s "
                    f"({cpu_ready / options.jobs * 1e3:.2f} ms per ScheduledJob)"
                )
                print(f"operator peak RSS VmHWM:  {memory['VmHWM'] / 1024:.1f} MiB")
                print(f"operator RSS when idle:   {memory['VmRSS'] / 1024:.1f} MiB")
                print(
                    f"idle API requests:        {idle_requests} in {idle_seconds:.0f} s "
                    f"(about {idle_requests / passes:.1f} per mirror pass; "
                    + "".join(f"{verb} {n}; " for verb, n in sorted(idle_by_verb.items()))
                    + f"load {_load(os.getloadavg())})"
                )
                print(
                    f"operator CPU when idle:   {idle_cpu:.2f} s in {idle_seconds:.0f} s "
                    f"({idle_cpu / passes * 1e3:.0f} ms per mirror pass)"
                )
                print(
                    f"PostgreSQL CPU when idle: {postgres_idle:.2f} s in {idle_seconds:.0f} s "
                    "(the whole server, the operator's connections included)"
                )
                done = trims(log_path)
                print(
                    f"heap trims:               {len(done)}"
                    + (
                        f" (released {sum(t['released_mib'] or 0 for t in done):.1f} MiB in "
                        f"{sum(t['cpu_ms'] for t in done):.1f} ms of CPU)"
                        if done
                        else ""
                    )
                )
                print(f"MALLOC_ARENA_MAX:         {environment.get('MALLOC_ARENA_MAX', 'unset')}")
                if options.heap is not None:
                    print(f"heap reports:             {options.heap}/heap-1.txt (Ready), -2 (idle)")
                print(
                    "reproduce: .venv/bin/python bench/operator_memory.py "
                    f"--jobs {options.jobs} --mirror-seconds {options.mirror_seconds} "
                    f"--arenas {options.arenas} --idle-seconds {idle_seconds:.0f}"
                )
            finally:
                operator.send_signal(signal.SIGTERM)
                operator.wait(timeout=60)
        finally:
            local.stop()


def _heap_report(operator: subprocess.Popen[bytes], directory: Path | None, number: int) -> None:
    """Ask the wrapped operator for heap report ``number`` and wait until it is written."""
    if directory is None:
        return
    operator.send_signal(signal.SIGUSR1)
    report = directory / f"heap-{number}.txt"
    deadline = time.monotonic() + 300
    while not report.exists() and time.monotonic() < deadline:
        time.sleep(1)


def _load(averages: tuple[float, float, float]) -> str:
    return " ".join(f"{value:.2f}" for value in averages)


if __name__ == "__main__":
    main()
