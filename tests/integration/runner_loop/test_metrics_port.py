"""A runner given a --metrics-port that is taken exits 2 with a sentence naming the port and
the fix, not an OSError traceback; a runner left on the default port serves on a free one
instead. Real runner processes."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import urllib.request
from typing import Any

from support.runner_loop import HANDLERS, TESTS_DIR, eventually


def test_a_taken_metrics_port_is_a_clear_error_and_exit_2(dsn: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [
            sys.executable, "-m", "sundial", "runner",
            "--dsn", dsn,
            "--handlers", HANDLERS,
            "--metrics-host", "127.0.0.1",
            "--metrics-port", str(port),
        ]  # fmt: skip
        result = subprocess.run(
            command,
            env=dict(os.environ, PYTHONPATH=str(TESTS_DIR)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 2, result.stderr
    assert f"the metrics port 127.0.0.1:{port} is already in use" in result.stderr
    assert "--metrics-port 0" in result.stderr and "--metrics-port -1" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_second_runner_on_the_default_port_starts_on_a_free_one(
    dsn: str, tmp_path: pathlib.Path
) -> None:
    """Two runners on one host with no --metrics-port: the second does not stop. It says the
    default port is taken and serves on a free port, which 'runner starting' names."""
    from sundial.runner import worker

    log_path = tmp_path / "runner.log"
    with socket.socket() as taken, log_path.open("wb") as log:
        try:
            taken.bind(("127.0.0.1", worker.DEFAULT_METRICS_PORT))
            taken.listen()
        except OSError:
            pass  # another process holds it already: taken either way
        command = [
            sys.executable, "-m", "sundial", "runner",
            "--dsn", dsn,
            "--handlers", HANDLERS,
            "--metrics-host", "127.0.0.1",
            "--concurrency", "async=1",
        ]  # fmt: skip
        runner = subprocess.Popen(
            command, env=dict(os.environ, PYTHONPATH=str(TESTS_DIR)), stdout=log, stderr=log
        )
        try:
            entries = eventually(lambda: _started(log_path, runner), what="the runner to start")
        finally:
            runner.terminate()
            runner.wait(60)
    warning, starting = entries
    assert warning["port"] == worker.DEFAULT_METRICS_PORT
    port = int(starting["metrics_port"])
    assert port != worker.DEFAULT_METRICS_PORT
    assert runner.returncode == 0


def _started(
    log_path: pathlib.Path, runner: subprocess.Popen[bytes]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    entries = []
    for line in log_path.read_text(errors="replace").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    warned = "metrics port taken; serving on any free port"
    warnings = [e for e in entries if e.get("message") == warned]
    starting = [e for e in entries if e.get("message") == "runner starting"]
    if warnings and starting:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{starting[0]['metrics_port']}/metrics", timeout=10
        ) as response:
            assert b"sundial_" in response.read()
        return warnings[0], starting[0]
    assert runner.poll() is None, log_path.read_text()
    return None
