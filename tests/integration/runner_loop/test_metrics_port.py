"""A second runner on a taken --metrics-port exits 2 with a sentence naming the port and the
fix, not an OSError traceback. Real runner processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from support.runner_loop import HANDLERS, TESTS_DIR


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
