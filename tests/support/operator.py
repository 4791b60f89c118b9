"""Helpers for the operator's cluster tests: the operator and the runner as subprocesses.

``RunnerProcess`` is a real ``sundial runner`` with the handlers of
tests/handlers/operator_jobs.py (``tests.ok``, an async handler). ``StoreWorker`` is kept for
tests that steer what a run does by its handler name or need the order runs started in: a
thread running the worker's side of the real protocol - ``claims.claim`` (SKIP LOCKED, a
lease and a fencing attempt) then ``claims.finish`` - against the same PostgreSQL as the
operator. Its handlers are named by what they do: ``ok`` succeeds, ``fail`` raises, ``slow``
takes a few seconds. Nothing here mocks PostgreSQL or the apiserver.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sundial.attempt import finishes
from sundial.store import claims
from sundial.store import pool as store_pool
from support.polling import wait_until

REPOSITORY = Path(__file__).resolve().parents[2]
TESTS = REPOSITORY / "tests"


class OperatorProcess:
    """``python -m sundial operator`` against the test cluster and database."""

    def __init__(
        self,
        dsn: str,
        kubeconfig: Path,
        namespace: str | None,
        log_dir: Path,
        *,
        liveness_port: int = 0,
        name: str = "operator",
        extra_args: Sequence[str] = (),
    ) -> None:
        self.extra_args = list(extra_args)
        self.liveness_port = liveness_port
        self.name = name
        self.dsn = dsn
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.log_dir = log_dir
        self.holder = f"test-operator-{uuid.uuid4().hex[:8]}"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"{self.name}-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        environment = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment,
                cwd=REPOSITORY,
            )

    def command(self) -> list[str]:
        command = [
            sys.executable,
            "-m",
            "sundial",
            "operator",
            "--dsn",
            self.dsn,
            "--liveness-port",
            str(self.liveness_port),
            "--holder",
            self.holder,
            "--lease-ttl",
            "5",
            "--mirror-seconds",
            "1",
        ]
        command += ["--namespace", self.namespace] if self.namespace else ["--all-namespaces"]
        return command + self.extra_args

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def peak_rss_kib(self) -> int:
        """VmHWM of the running process, in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise AssertionError("no VmHWM in /proc/<pid>/status")

    def kill(self) -> None:
        """SIGKILL: no cleanup, no lease release - a crash."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        try:
            code = self.process.wait(timeout=20)
            print(f"{self.name} stopped in {time.monotonic() - started:.1f}s with {code}")
            return code
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(
            (self.log_dir / f"{self.name}-{n}.log").read_text(errors="replace")
            for n in range(1, self.starts + 1)
        )

    def assert_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(
                f"the {self.name} exited with {self.process.returncode}:\n{self.logs()[-5000:]}"
            )


class RunnerProcess:
    """``python -m sundial runner --handlers handlers.operator_jobs``; stopped with SIGTERM
    on exit, which must drain and exit 0."""

    def __init__(
        self, dsn: str, log_dir: Path, *, name: str = "runner", extra_args: Sequence[str] = ()
    ) -> None:
        self.dsn = dsn
        self.extra_args = list(extra_args)
        self.worker_id = f"test-runner-{uuid.uuid4().hex[:8]}"
        self.log_path = log_dir / f"{name}.log"
        self.record_path = log_dir / f"{name}-ran.txt"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RunnerProcess:
        command = [
            sys.executable, "-m", "sundial", "runner",
            "--dsn", self.dsn,
            "--handlers", "handlers.operator_jobs",
            "--worker-id", self.worker_id,
            "--metrics-port", "-1",
            "--poll-seconds", "0.2",
            *self.extra_args,
        ]  # fmt: skip
        environment = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])),
            "SUNDIAL_TEST_RECORD": str(self.record_path),
        }
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=environment, cwd=REPOSITORY
            )
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired as error:
                self.process.kill()
                self.process.wait(timeout=10)
                message = f"the runner did not stop on SIGTERM:\n{self.logs()}"
                raise AssertionError(message) from error
        if exc_info[0] is None:
            assert self.process.returncode == 0, self.logs()

    def assert_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(
                f"the runner exited with {self.process.returncode}:\n{self.logs()}"
            )

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]

    def ran(self) -> list[tuple[int, int]]:
        """(run id, attempt) of every run its handlers executed, in order."""
        if not self.record_path.exists():
            return []
        return [
            (int(run_id), int(attempt))
            for run_id, attempt in (
                line.split() for line in self.record_path.read_text().splitlines() if line
            )
        ]


class StoreWorker:
    """A worker thread on the real claim/finish protocol (see the module docstring)."""

    def __init__(self, dsn: str, *, slow_seconds: float = 3.0) -> None:
        self.dsn = dsn
        self.slow_seconds = slow_seconds
        self.finished: list[tuple[int, str, int]] = []  # (run id, handler, attempt)
        self.started_order: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name="store-worker", daemon=True)
        self.error: BaseException | None = None

    def __enter__(self) -> StoreWorker:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self.error is not None:
            raise self.error

    def _main(self) -> None:
        try:
            asyncio.run(self._loop())
        except BaseException as error:  # surfaced in __exit__
            self.error = error

    async def _loop(self) -> None:
        pool = await store_pool.open_pool(self.dsn, min_size=1, max_size=2, name="test-worker")
        try:
            while not self._stop.is_set():
                claimed = await claims.claim(pool, "test-worker", limit=20, lease_seconds=30)
                if not claimed:
                    await asyncio.sleep(0.1)
                    continue
                self.started_order.extend(run.id for run in claimed)
                outcomes = []
                for run in claimed:
                    if run.handler.endswith("slow"):
                        await asyncio.sleep(self.slow_seconds)
                    if run.handler.endswith("fail"):
                        outcomes.append(finishes.failed(run, "RuntimeError: told to fail"))
                    else:
                        outcomes.append(finishes.succeeded(run))
                    self.finished.append((run.id, run.handler, run.attempt))
                await claims.finish(pool, "test-worker", outcomes)
        finally:
            await pool.close()


def get_json(kubectl: Callable[..., Any], *args: str) -> Any:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def scheduled_job_manifest(name: str, **spec: Any) -> str:
    body = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {"schedule": "*/1 * * * *", "handler": {"name": "tests.ok"}, **spec},
    }
    return json.dumps(body)


def condition(body: dict[str, Any], condition_type: str) -> dict[str, Any] | None:
    for found in (body.get("status") or {}).get("conditions") or ():
        if found["type"] == condition_type:
            return dict(found)
    return None


def events_for(kubectl: Callable[..., Any], namespace: str, name: str) -> list[dict[str, Any]]:
    listing = get_json(
        kubectl, "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}"
    )
    return list(listing["items"])


#: The kwok stages' annotations (hack/cluster/kwok/stages.yaml) that choose a Pod's end.
KWOK_OUTCOME = "sundial.dev/kwok-outcome"
KWOK_RUNNING_SECONDS = "sundial.dev/kwok-running-seconds"


def pod_job(
    name: str,
    outcome: str,
    *,
    schedule: str = "0 0 1 1 *",
    run_now: bool = True,
    pod_annotations: dict[str, str] | None = None,
    **spec: Any,
) -> str:
    """A pod-mode ScheduledJob whose Pods end as ``outcome`` says (kwok). By default it fires
    once a year and its run comes from ``sundial.dev/run-now``."""
    metadata: dict[str, Any] = {"name": name}
    if run_now:
        metadata["annotations"] = {"sundial.dev/run-now": "1"}
    body = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": metadata,
        "spec": {"schedule": schedule, "template": pod_template(outcome, pod_annotations), **spec},
    }
    return json.dumps(body)


def pod_job_run(
    name: str, outcome: str, *, pod_annotations: dict[str, str] | None = None, **job: Any
) -> str:
    """A user JobRun with an inline pod job whose Pods end as ``outcome`` says (kwok); ``job``:
    more fields of the inline job (``retry``, ``oom``, ...)."""
    body = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": name},
        "spec": {"job": {"template": pod_template(outcome, pod_annotations), **job}},
    }
    return json.dumps(body)


def pod_template(outcome: str, pod_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A Pod template kwok ends as ``outcome`` says."""
    return {
        "metadata": {"annotations": {KWOK_OUTCOME: outcome, **(pod_annotations or {})}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "command": ["true"],
                    "resources": {"limits": {"memory": "64Mi"}},
                }
            ],
        },
    }


def apply(kubectl: Callable[..., Any], namespace: str, manifest: str) -> None:
    """``kubectl apply`` of a JSON or YAML ``manifest`` in ``namespace``."""
    kubectl("apply", "-n", namespace, "-f", "-", stdin=manifest)


def mirrored_runs(kubectl: Callable[..., Any], namespace: str, job: str) -> list[dict[str, Any]]:
    listing = get_json(kubectl, "-n", namespace, "jr", "-l", f"sundial.dev/scheduledjob={job}")
    return list(listing["items"])


def finished_run(
    operator: OperatorProcess,
    kubectl: Callable[..., Any],
    namespace: str,
    job: str,
    phase: str,
    *,
    with_exit_code: bool = True,
    timeout: float = 60,
) -> dict[str, Any]:
    """The first mirrored JobRun of ``job`` in ``phase`` (showing its Pod's exit code, unless
    ``with_exit_code`` is False: a Pod that never started has none)."""

    def done() -> Any:
        operator.assert_alive()
        for run in mirrored_runs(kubectl, namespace, job):
            status = run.get("status") or {}
            if status.get("phase") == phase and (not with_exit_code or "exitCode" in status):
                return run
        return None

    found: dict[str, Any] = wait_until(
        done, within=timeout, what=f"a {phase} JobRun of {job} with its Pod's data"
    )
    return found


def attempts_of(run_id: str, attempts: int) -> list[str]:
    """How the Pod Events of attempts 1..``attempts`` of a run begin (``pod_hooks``)."""
    return [f"run {run_id} attempt {attempt}:" for attempt in range(1, attempts + 1)]


def warnings_once(
    kubectl: Callable[..., Any],
    namespace: str,
    name: str,
    reason: str,
    subjects: Sequence[str],
    *,
    timeout: float = 30,
    event_type: str = "Warning",
) -> list[dict[str, Any]]:
    """The Warning (or ``event_type``) Events ``reason`` on the object ``name``, once there is
    one whose message begins with each of ``subjects``; fails unless each subject has exactly
    one Event, posted once (``count`` 1), and there is no other."""

    def found() -> Any:
        events = [e for e in events_for(kubectl, namespace, name) if e["reason"] == reason]
        return events if len(events) >= len(subjects) else None

    events: list[dict[str, Any]] = wait_until(
        found, within=timeout, what=f"{len(subjects)} {reason} Events on {name}"
    )
    assert {event["type"] for event in events} == {event_type}, events
    assert all(event["count"] == 1 for event in events), events
    matched = sorted(
        subject for event in events for subject in subjects if event["message"].startswith(subject)
    )
    assert (len(events), matched) == (len(subjects), sorted(subjects)), events
    return events


@contextlib.contextmanager
def running(process: OperatorProcess) -> Iterator[OperatorProcess]:
    """``process`` started, then stopped (SIGTERM); its log is printed if it failed."""
    process.start()
    try:
        yield process
    finally:
        code = process.stop()
        if code not in (0, None, -9):
            print(process.logs()[-5000:])
