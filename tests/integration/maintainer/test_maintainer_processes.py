"""Real ``sundial`` processes: the scheduler's maintainer reaps under the lease and a standby
takes over when the leader is killed; a runner reaps only with ``--maintenance``; the scheduler
and the pod launcher log JSON lines with the keys every daemon uses."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import IO, Any

import pytest

from support.maintainer import insert_run, states
from support.polling import wait_until

TESTS_DIR = pathlib.Path(__file__).resolve().parents[2]
#: Every line of every daemon has these (observability.json_logs).
KEYS = {"time", "level", "logger", "message"}


class Daemon:
    """One ``python -m sundial …`` child whose stderr goes to a file the test reads."""

    def __init__(self, log_path: pathlib.Path, *args: str) -> None:
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("wb")
        path = os.pathsep.join(filter(None, (str(TESTS_DIR), os.environ.get("PYTHONPATH"))))
        env = dict(os.environ, PYTHONPATH=path)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sundial", *args],
            stdout=self._log,
            stderr=self._log,
            env=env,
        )

    def lines(self) -> list[dict[str, Any]]:
        """Every complete line as JSON; a line that is not JSON fails the test."""
        complete = self.log_path.read_text(errors="replace").split("\n")[:-1]
        return [json.loads(line) for line in complete if line.strip()]

    def said(self, message: str) -> list[dict[str, Any]]:
        return [line for line in self.lines() if line["message"] == message]

    def stop(self, signum: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        code = self.process.wait(30)
        self._log.close()
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.stop()


@pytest.fixture
def daemons(tmp_path: pathlib.Path) -> Iterator[Callable[..., Daemon]]:
    started: list[Daemon] = []

    def start(name: str, *args: str) -> Daemon:
        daemon = Daemon(tmp_path / f"{name}.log", *args)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.close()


def scheduler(daemons: Callable[..., Daemon], dsn: str, holder: str) -> Daemon:
    return daemons(
        holder,
        "scheduler", "--dsn", dsn, "--holder", holder,
        "--poll-seconds", "0.1", "--lease-ttl", "2",
        "--metrics-port", "0", "--metrics-host", "127.0.0.1",
    )  # fmt: skip


def metric(daemon: Daemon, sample: str) -> float | None:
    """One sample of the daemon's /metrics (the port it logged), or None if absent."""
    port = daemon.said("scheduler running")[0]["metrics_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name == sample:
            return float(value)
    return None


def test_the_standby_scheduler_takes_over_and_its_maintainer_reaps(
    daemons: Callable[..., Daemon], store_dsn: str, job: uuid.UUID
) -> None:
    one = scheduler(daemons, store_dsn, "scheduler-1")
    wait_until(lambda: one.said("leading"), what="the first scheduler to lead")
    two = scheduler(daemons, store_dsn, "scheduler-2")
    wait_until(lambda: two.said("standing by"), what="the second scheduler to stand by")
    assert two.said("standing by")[0]["leader"] == "scheduler-1"
    wait_until(lambda: one.said("maintainer leading"), what="the leader's maintainer")

    crashed = insert_run(store_dsn, job, "running", lease_in=-timedelta(seconds=1))
    wait_until(lambda: states(store_dsn)[crashed] == "pending", what="the leader to reap")
    assert [line["count"] for line in one.said("reaped expired leases")] == [1]
    requeued = 'sundial_maintainer_leases_reaped_total{outcome="requeued"}'
    assert metric(one, requeued) == 1.0
    assert metric(one, "sundial_maintainer_leading") == 1.0
    assert metric(two, "sundial_maintainer_leading") == 0.0

    one.stop(signal.SIGKILL)  # no release: the lease has to run out
    wait_until(lambda: two.said("taking over"), within=20, what="the standby to take over")
    wait_until(lambda: two.said("maintainer leading"), what="the new leader's maintainer")
    again = insert_run(store_dsn, job, "running", lease_in=-timedelta(seconds=1))
    wait_until(lambda: states(store_dsn)[again] == "pending", what="the new leader to reap")
    assert two.said("reaped expired leases")
    assert two.stop() == 0

    for daemon in (one, two):
        lines = daemon.lines()
        assert lines and all(set(line) >= KEYS for line in lines), lines
    assert two.said("scheduler running")[0]["holder"] == "scheduler-2"
    # The standby did nothing while it stood by.
    first_lead = min(line["time"] for line in two.said("taking over"))
    assert all(line["time"] > first_lead for line in two.said("reaped expired leases"))


def test_a_runner_reaps_only_with_maintenance(
    daemons: Callable[..., Daemon], store_dsn: str, job: uuid.UUID
) -> None:
    # A queue no runner serves: a reaped run stays pending where the test can see it.
    crashed = insert_run(
        store_dsn, job, "running", lease_in=-timedelta(seconds=1), queue="elsewhere"
    )
    runner = ("runner", "--dsn", store_dsn, "--handlers", "handlers.loop_jobs")
    quiet = daemons("quiet", *runner, "--metrics-port", "-1", "--worker-id", "quiet")
    wait_until(lambda: quiet.said("runner starting"), what="the runner to start")
    time.sleep(2.5)  # ten claim polls and more than two of the old reaper's ticks
    assert states(store_dsn)[crashed] == "running"
    assert quiet.stop() == 0

    refused = daemons("refused", *runner, "--maintenance-seconds", "0.2")
    assert refused.process.wait(30) == 2
    assert "add --maintenance" in refused.log_path.read_text()

    reaping = daemons(
        "reaping", *runner, "--metrics-port", "-1", "--maintenance", "--maintenance-seconds", "0.2"
    )
    wait_until(lambda: states(store_dsn)[crashed] == "pending", what="--maintenance to reap")
    assert reaping.stop() == 0


def test_the_pod_launcher_logs_json_with_the_daemon_keys(
    daemons: Callable[..., Daemon], store_dsn: str, tmp_path: pathlib.Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    launcher = daemons("pods", "pod-launcher", "--dsn", store_dsn, "--kubeconfig", str(kubeconfig))
    started = wait_until(lambda: launcher.said("pod launcher running"), what="the launcher")
    assert started[0]["logger"] == "sundial.pods" and started[0]["queues"] == ["default"]
    assert launcher.stop() == 0
    lines = launcher.lines()
    assert all(set(line) >= KEYS for line in lines), lines
