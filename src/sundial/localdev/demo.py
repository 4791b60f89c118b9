"""``make demo``: Sundial on a local Kubernetes cluster, from nothing, in one command.

What it starts, in order, each step named on screen (docs/adr/0029-the-demo.md):

1. the control plane's binaries, built once from Kubernetes' Go modules when they are not
   cached (a cold first run takes 12 to 18 minutes: the screen says so and shows the step);
2. a throwaway PostgreSQL (``localdev.postgres``) with Sundial's migrations;
3. the local cluster of ``hack/cluster``: with one real kubelet node where the machine allows it
   (``hack/cluster/node-up --check`` passes; the images built by ``hack/images/build``), and
   kwok's simulated nodes otherwise (or ``--no-real-node``); or the user's kube context with
   ``--kube-context``;
4. Sundial's Helm chart (``charts/sundial``): CRDs, RBAC, the job Pods' ServiceAccount;
   the CRDs are waited for until Established before anything is applied. With the real node
   the chart also runs the operator, a runner (the ``examples`` image: the runner image with
   ``examples/handlers``) and its bundled PostgreSQL there as Pods (``localdev.install``),
   and the throwaway PostgreSQL of step 2 is not started;
5. on kwok's nodes, which cannot run containers, the operator and a runner as local processes
   against the same cluster and PostgreSQL (the screen says so). Job Pods run on the real node
   when there is one;
6. ``examples/demo/``: a cron job in the runner, a Pod job OOMKilled once and then run with
   more memory, a delayed one-shot JobRun and a small DAG of JobRuns.

Then one screen shows the ScheduledJobs and JobRuns live (redrawn in place on a terminal,
plain lines elsewhere) until Ctrl-C, ``--seconds`` or, with ``--until-first-runs``, until a
run of each kind has succeeded. Whatever way it ends, everything it started is stopped and
removed: the processes, the cluster, PostgreSQL and its temporary directory (on a cluster of
the user's, the namespaces and the release it made; the CRDs stay, as Helm keeps them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sundial import errors
from sundial.localdev import cluster, crds, demo_screen, postgres
from sundial.localdev import install as installs
from sundial.localdev import real_node as real_nodes
from sundial.store import migrate

__all__ = ["main"]

_REPO = Path(__file__).resolve().parents[3]
_EXAMPLES = _REPO / "examples" / "demo"
_HANDLERS = _REPO / "examples" / "handlers"
_CHART = _REPO / "charts" / "sundial"
NAMESPACE = "sundial-demo"
RELEASE_NAMESPACE = "sundial-system"
RELEASE = "sundial"
#: The runs --until-first-runs waits for: the delayed one-shot, the OOM job, the whole DAG.
_NAMED_RUNS = ("hello-in-20s", "needs-more-memory", "extract", "transform", "report", "load")
_CRON_JOB = "hello"
#: What the real node runs: job Pods' busybox, and the chart's operator, runner, PostgreSQL.
_IMAGE_NAMES = ("pause", "busybox", "examples", "operator", "postgres")
_NODE_IMAGES = ("BUSYBOX", *installs.IMAGES)
_STEPS = 7


class DemoError(errors.SundialError, RuntimeError):
    """A step failed; the message says which and where its log is."""


class _Demo:
    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.work = Path(tempfile.mkdtemp(prefix="sundial-demo-"))
        self.children: list[subprocess.Popen[bytes]] = []
        self.kubeconfig: Path | None = None
        self.kubectl_path: Path = Path("kubectl")
        self.helm_path: Path = Path("helm")
        self.context_args: list[str] = []
        self.own_cluster: cluster.LocalCluster | None = None
        self.installed_release = False
        #: The env file of hack/images/build when the cluster has a real node.
        self.images_env: dict[str, str] | None = None
        self.images_env_path: Path | None = None
        #: Why there is no real node ("" when there is one; None: --no-real-node).
        self.lacking: str | None = None
        #: The chart's installation on the real node (operator and runner as Pods).
        self.installation: installs.Installation | None = None

    # -- output ------------------------------------------------------------------------------

    def step(self, number: int, text: str) -> None:
        print(f"[{number}/{_STEPS}] {text}", flush=True)

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.kubectl_path), *self.context_args, *args]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if check and result.returncode != 0:
            raise DemoError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    # -- steps -------------------------------------------------------------------------------

    def binaries(self) -> None:
        hack = cluster.find_hack_dir()
        missing = cluster.missing_binaries(hack)
        if not missing:
            self.step(1, "Kubernetes binaries: cached")
        else:
            self.step(
                1,
                f"Building {', '.join(missing)} from Kubernetes' Go modules: a cold first run "
                "takes 12 to 18 minutes on two cores, once (cached afterwards)",
            )
            log = self.work / "build.log"
            _with_ticker(lambda: cluster.build(log_path=log, hack_dir=hack), log)
        bin_dir = cluster.bin_dir(hack)
        self.kubectl_path = bin_dir / "kubectl"
        self.helm_path = bin_dir / "helm"

    def database(self, server: postgres.ThrowawayPostgres) -> None:
        applied = migrate.migrate(server.dsn)
        print(f"      {server.dsn} ({len(applied)} migrations applied)", flush=True)

    @property
    def on_real_node(self) -> bool:
        return not self.options.kube_context and self.lacking == ""

    def decide_nodes(self) -> None:
        if not self.options.kube_context and self.options.real_node:
            self.lacking = real_node_lacks(cluster.find_hack_dir())

    def kubernetes(self) -> None:
        if self.options.kube_context:
            self.step(3, f"Kubernetes: the kube context {self.options.kube_context!r}")
            self.context_args = ["--context", self.options.kube_context]
            self.kubectl("version")
            return
        environment: dict[str, str] = {}
        lacking = self.lacking
        if lacking is None:
            self.step(3, "Kubernetes: the local cluster of hack/cluster, kwok's nodes (asked)")
        elif lacking:
            self.step(3, "Kubernetes: the local cluster of hack/cluster, kwok's nodes")
            print(f"      no real node here: {lacking}", flush=True)
        else:
            self.step(3, "Kubernetes: the local cluster of hack/cluster with a real node")
            env_file = self.build_images()
            self.images_env = _read_env_file(env_file)
            self.images_env_path = env_file
            environment = {
                "SUNDIAL_REAL_NODE": "1",
                "SUNDIAL_IMAGES_ENV": str(env_file),
                "SUNDIAL_NODE_IMAGES": " ".join(_NODE_IMAGES),
            }
        started = time.monotonic()
        self.own_cluster = cluster.start(
            self.work / "cluster", owner_pid=os.getpid(), environment=environment
        )
        self.kubeconfig = self.own_cluster.kubeconfig
        self.context_args = ["--kubeconfig", str(self.kubeconfig)]
        print(f"      up in {time.monotonic() - started:.1f}s; KUBECONFIG={self.kubeconfig}")

    def build_images(self) -> Path:
        """``hack/images/build``'s env file for the real node's images (cached by content;
        minutes when cold or when src/ changed: the operator and runner images hold it).
        ``SUNDIAL_IMAGES_ENV`` names one built before, as for hack/cluster/node-up."""
        given = os.environ.get("SUNDIAL_IMAGES_ENV")
        if given:
            print(f"      images: SUNDIAL_IMAGES_ENV={given}", flush=True)
            return Path(given)
        print(
            f"      building the images {', '.join(_IMAGE_NAMES)} (cached by content; a cold "
            "build takes minutes)",
            flush=True,
        )
        log = self.work / "images.log"
        script = cluster.find_hack_dir().parent / "images" / "build"
        lines: list[str] = []

        def build() -> None:
            with log.open("w") as sink:
                result = subprocess.run(
                    [str(script), *_IMAGE_NAMES],
                    stdout=subprocess.PIPE,
                    stderr=sink,
                    text=True,
                )
            if result.returncode != 0:
                raise DemoError(f"hack/images/build failed; see {log}")
            lines.extend(result.stdout.strip().splitlines())

        _with_ticker(build, log)
        return Path(lines[-1])

    def chart_on_real_node(self) -> None:
        self.step(4, f"Installing the chart charts/sundial as release {RELEASE!r} on the real node")
        assert self.own_cluster is not None and self.images_env_path is not None
        node = real_nodes.start(self.own_cluster, self.images_env_path, images=_NODE_IMAGES)
        self.installation = installs.install(
            self.own_cluster, node, release=RELEASE, namespace=RELEASE_NAMESPACE,
            job_namespaces=[NAMESPACE],
        )  # fmt: skip
        self.installed_release = True
        print(
            f"      operator, history API, runner and PostgreSQL Ready as Pods after "
            f"{self.installation.ready_seconds:.1f}s",
            flush=True,
        )
        waited = crds.wait_established(self.kubectl)
        print(f"      CRDs Established after {waited:.1f}s")
        self.step(5, "Operator and runner as Pods on the real node, from the images built here")
        listed = self.kubectl("get", "pods", "-n", RELEASE_NAMESPACE, "-o", "wide")
        for line in listed.stdout.splitlines():
            print(f"      {line}", flush=True)

    def chart(self) -> None:
        self.step(4, f"Installing the chart charts/sundial as release {RELEASE!r}")
        self.kubectl("create", "namespace", NAMESPACE)
        values = {
            # kwok cannot run the operator and runner Pods: they run as local processes.
            "operator": {"replicas": 0},
            "historyApi": {"replicas": 0},
            "runner": {"enabled": False},
            "migrations": {"enabled": False},
            "jobPods": {"namespaces": [NAMESPACE]},
            "crds": {"keep": False},
        }
        values_file = self.work / "values.json"
        values_file.write_text(json.dumps(values), encoding="utf-8")
        command = [
            str(self.helm_path),
            *(["--kubeconfig", str(self.kubeconfig)] if self.kubeconfig else []),
            *(["--kube-context", self.options.kube_context] if self.options.kube_context else []),
            "install", RELEASE, str(_CHART),
            "--namespace", RELEASE_NAMESPACE, "--create-namespace",
            "--values", str(values_file),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise DemoError(f"helm install failed: {result.stderr.strip()}")
        self.installed_release = True
        waited = crds.wait_established(self.kubectl)
        print(f"      CRDs Established after {waited:.1f}s")

    def processes(self, dsn: str) -> None:
        why = (
            "a cluster of yours: its nodes may not hold the example handlers' image"
            if self.options.kube_context
            else "kwok's nodes run no containers"
        )
        self.step(5, f"Operator and runner as local processes ({why})")
        environment = dict(os.environ)
        if self.kubeconfig:
            environment["KUBECONFIG"] = str(self.kubeconfig)
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(_HANDLERS), environment.get("PYTHONPATH")])
        )
        operator = [
            "operator", "--dsn", dsn, "--namespace", NAMESPACE, "--liveness-port", "0",
            "--holder", "sundial-demo", "--lease-ttl", "5", "--mirror-seconds", "1",
            "--pod-service-account", "sundial-job",
        ]  # fmt: skip
        if self.options.kube_context:
            environment["SUNDIAL_KUBE_CONTEXT"] = self.options.kube_context
        runner = [
            "runner", "--dsn", dsn, "--handlers", "hello", "--metrics-port", "-1",
            "--poll-seconds", "0.5",
        ]  # fmt: skip
        for name, args in (("operator", operator), ("runner", runner)):
            log = self.work / f"{name}.log"
            with log.open("wb") as sink:
                child = subprocess.Popen(
                    [sys.executable, "-m", "sundial", *args],
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    env=environment,
                    start_new_session=True,  # Ctrl-C reaches the demo, which stops them in order
                )
            self.children.append(child)
            print(f"      {name}: pid {child.pid}, log {log}", flush=True)

    def examples(self) -> None:
        self.step(6, f"Applying examples/demo/ in namespace {NAMESPACE!r}")
        for name in ("cron.yaml", "oneshot.yaml", "oom.yaml", "dag.yaml"):
            path = _EXAMPLES / name
            if self.images_env is not None and name == "oom.yaml":
                path = self.work / name
                text = (_EXAMPLES / name).read_text(encoding="utf-8")
                path.write_text(on_real_node(text, self.images_env), encoding="utf-8")
            self.kubectl("apply", "--server-side", "-n", NAMESPACE, "-f", str(path))
            where = " (its Pods on the real node)" if path.parent == self.work else ""
            print(f"      applied examples/demo/{name}{where}", flush=True)

    def watch(self) -> int:
        until = "a run of each kind succeeded" if self.options.until_first_runs else "Ctrl-C"
        limit = f" or {self.options.seconds:.0f} s" if self.options.seconds else ""
        self.step(7, f"Watching ScheduledJobs and JobRuns until {until}{limit}")
        screen = demo_screen.Screen(sys.stdout)
        deadline = time.monotonic() + self.options.seconds if self.options.seconds else None
        while True:
            for child in self.children:
                if child.poll() is not None:
                    raise DemoError(
                        f"a child process exited with {child.returncode}; logs in {self.work}"
                    )
            listed = self.kubectl("get", "sj,jr", "-n", NAMESPACE, "-o", "json", check=False)
            items = json.loads(listed.stdout).get("items", []) if listed.returncode == 0 else []
            rows = demo_screen.table(items)
            progress = first_runs(items)
            footer = [
                "first successes: "
                + ", ".join(f"{k} {'yes' if v else 'not yet'}" for k, v in progress.items()),
                f"logs: {self.work}   Ctrl-C stops and removes everything",
            ]
            screen.show(rows, title=f"Sundial demo - namespace {NAMESPACE}", footer=footer)
            if self.options.until_first_runs and all(progress.values()):
                print("every kind of run succeeded once:", ", ".join(progress), flush=True)
                return 0
            failed = [row.name for row in rows if row.kind == "jr" and row.phase == "Failed"]
            if self.options.until_first_runs and set(failed) & set(_NAMED_RUNS):
                raise DemoError(f"JobRuns failed: {', '.join(failed)}; logs in {self.work}")
            if deadline is not None and time.monotonic() > deadline:
                return 0 if not self.options.until_first_runs else 1
            time.sleep(self.options.interval)

    # -- the end -----------------------------------------------------------------------------

    def cleanup(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in self.children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(timeout=10)
        if self.own_cluster is not None:
            self.own_cluster.stop()
        elif self.installed_release:
            # While the operator runs, so it takes its finalizers off: the namespace's deletion
            # would remove its Role first and leave the namespace Terminating
            # (docs/operations.md, "Deleting a namespace").
            self.kubectl(
                "delete", "scheduledjobs,jobruns", "--all", "-n", NAMESPACE, "--timeout=60s",
                check=False,
            )  # fmt: skip
            self.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
            subprocess.run(
                [str(self.helm_path), "--kube-context", self.options.kube_context,
                 "uninstall", RELEASE, "--namespace", RELEASE_NAMESPACE],
                capture_output=True, check=False,
            )  # fmt: skip
            self.kubectl("delete", "namespace", RELEASE_NAMESPACE, "--wait=false", check=False)
        shutil.rmtree(self.work, ignore_errors=True)
        pids = " ".join(str(child.pid) for child in self.children)
        print(f"stopped and removed: processes {pids or '-'}, {self.work}", flush=True)


def first_runs(items: Sequence[Mapping[str, Any]]) -> dict[str, bool]:
    """Which kinds of run have succeeded once: cron, one-shot, OOM then more memory, DAG."""
    succeeded: dict[str, Mapping[str, Any]] = {}
    cron = False
    for item in items:
        if item.get("kind") != "JobRun":
            continue
        status = item.get("status") or {}
        if status.get("phase") != "Succeeded":
            continue
        metadata = item.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if labels.get("sundial.dev/scheduledjob") == _CRON_JOB:
            cron = True
        succeeded[str(metadata.get("name"))] = status
    oom = succeeded.get("needs-more-memory")
    return {
        "cron": cron,
        "one-shot": "hello-in-20s" in succeeded,
        "oom-then-more-memory": oom is not None and int(oom.get("attempt") or 0) >= 2,
        "dag": all(name in succeeded for name in ("extract", "transform", "report", "load")),
    }


def real_node_lacks(hack_dir: Path) -> str:
    """What keeps this machine from a real node (``node-up --check``); "" when nothing."""
    node_up = hack_dir / "node-up"
    if not node_up.is_file():
        return "this checkout has no hack/cluster/node-up"
    result = subprocess.run([str(node_up), "--check"], capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return ""
    return " ".join((result.stdout + result.stderr).split())[:300] or "node-up --check failed"


def _read_env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            values[key.strip()] = value.strip().strip("\"'")
    return values


def on_real_node(manifest: str, images: Mapping[str, str]) -> str:
    """The JobRun manifests of ``manifest`` with their Pods sent to the real node: its
    nodeSelector and toleration, and the busybox image imported there (no registry)."""
    import yaml

    documents = []
    for document in yaml.safe_load_all(manifest):
        template = ((document or {}).get("spec", {}).get("job") or {}).get("template")
        if template:
            pod = template.setdefault("spec", {})
            pod["nodeSelector"] = {"sundial.dev/node-kind": "real"}
            pod["tolerations"] = [
                {"key": "sundial.dev/real-node", "operator": "Exists", "effect": "NoSchedule"}
            ]
            for container in pod.get("containers", []):
                container["image"] = images["SUNDIAL_IMAGE_BUSYBOX"]
                container["imagePullPolicy"] = "Never"
        documents.append(document)
    return yaml.safe_dump_all(documents, sort_keys=False)


def _with_ticker(work: Any, log: Path) -> None:
    """Run ``work`` while a line shows the elapsed time and the build log's last line."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as error:  # re-raised in the caller's thread
            failure.append(error)

    thread = threading.Thread(target=target, daemon=True)
    started = time.monotonic()
    thread.start()
    tty = sys.stdout.isatty()
    last_shown = 0.0
    while thread.is_alive():
        thread.join(timeout=1)
        elapsed = time.monotonic() - started
        tail = _last_line(log)
        if tty:
            print(f"\r\x1b[K      {elapsed:5.0f}s  {tail[:100]}", end="", flush=True)
        elif elapsed - last_shown >= 30:
            last_shown = elapsed
            print(f"      {elapsed:.0f}s: {tail[:100]}", flush=True)
    if tty:
        print()
    if failure:
        raise failure[0]


def _last_line(path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = path.read_text(errors="replace").strip().splitlines()
        if lines:
            return lines[-1]
    return "starting"


def _next_steps(options: argparse.Namespace, kubeconfig: Path | None) -> str:
    env = f"KUBECONFIG={kubeconfig} " if kubeconfig else ""
    return f"""
What to try next (against your own cluster: `make demo DEMO_ARGS=--kube-context=NAME`):
  {env}kubectl get sj,jr -n {NAMESPACE}          # phases, attempts, reasons
  kubectl describe jr needs-more-memory -n {NAMESPACE}   # the OOM kill, then more memory
  kubectl sundial get jr -n {NAMESPACE} -o wide  # the plugin (installed with the package)
  kubectl sundial run hello -n {NAMESPACE}       # a run now, like create job --from=cronjob
  docs/reference.md, docs/failure-modes.md, docs/comparison.md
  Argo CD health checks and actions: merge hack/argocd-cm into argocd-cm (docs/argocd.md)
"""


def _run(options: argparse.Namespace) -> int:
    demo = _Demo(options)
    print(f"Sundial demo: temporary files in {demo.work}", flush=True)
    try:
        if not options.kube_context:
            demo.binaries()
        else:
            demo.step(1, "Kubernetes binaries: using kubectl and helm from the PATH")
            demo.kubectl_path = Path(shutil.which("kubectl") or "kubectl")
            demo.helm_path = Path(shutil.which("helm") or "helm")
        demo.decide_nodes()
        if demo.on_real_node:
            demo.step(2, "PostgreSQL: the chart's bundled one, as a Pod on the real node (step 4)")
            demo.kubernetes()
            demo.chart_on_real_node()
            demo.examples()
            code = demo.watch()
            print(_next_steps(options, demo.kubeconfig), flush=True)
            return code
        demo.step(2, "PostgreSQL: a throwaway server in the temporary directory")
        with postgres.throwaway_postgres() as server:
            demo.database(server)
            demo.kubernetes()
            demo.chart()
            demo.processes(server.dsn)
            demo.examples()
            code = demo.watch()
            print(_next_steps(options, demo.kubeconfig), flush=True)
            return code
    except KeyboardInterrupt:
        print("\ninterrupted: stopping", flush=True)
        return 130
    except (DemoError, cluster.ClusterError, postgres.PostgresNotFoundError) as error:
        print(f"demo failed: {error}", file=sys.stderr, flush=True)
        return 1
    finally:
        demo.cleanup()


@contextlib.contextmanager
def _signals_as_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt``, so either one cleans up.

    SIGINT is set explicitly: Python only installs its Ctrl-C handler when SIGINT was not
    ignored at start, and a shell without job control starts background commands (``make demo &``,
    a CI step) with SIGINT ignored, so Ctrl-C would be lost and the demo would run on."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {
        signum: signal.signal(signum, interrupt) for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make demo", description="Sundial on a local Kubernetes cluster, in one command."
    )
    parser.add_argument(
        "--kube-context",
        default=None,
        help="install into this context of your kubeconfig instead of a local cluster",
    )
    parser.add_argument(
        "--no-real-node",
        dest="real_node",
        action="store_false",
        help="use kwok's simulated nodes even where a real node could run",
    )
    parser.add_argument(
        "--until-first-runs",
        action="store_true",
        help="stop once a run of each kind succeeded (exit 0), for tests and CI",
    )
    parser.add_argument(
        "--seconds", type=float, default=0.0, help="stop after this long (0: until Ctrl-C)"
    )
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between redraws")
    options = parser.parse_args(argv)
    with _signals_as_interrupt():
        return _run(options)


if __name__ == "__main__":
    raise SystemExit(main())
