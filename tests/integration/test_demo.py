"""`make demo` end to end: scheduler and runner processes turn the demo manifests into runs.

This is the README's first command minus the venv; it proves the manifests, the trigger,
the runner, retries and the fencing token work together as separate processes.
"""

from __future__ import annotations

import re
import subprocess
import sys


def test_demo_fires_runs_and_retries_the_flaky_job() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sundial.localdev.demo", "--seconds", "22", "--interval", "11"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.split("Runs by job and state:")[-1]
    completed = {
        job: int(count)
        for job, state, count in re.findall(r"^\s+(\w+)\s+(\w+)\s+(\d+)$", summary, re.M)
        if state == "completed"
    }
    assert completed.get("hello", 0) >= 2, result.stdout
    assert completed.get("report", 0) >= 1, result.stdout
    assert completed.get("flaky", 0) >= 1, result.stdout
    # The flaky job fails attempt 1 on purpose: its completed runs show attempt 2.
    assert re.search(r"^\d+\s+flaky\s+completed\s+2\s", result.stdout, re.M), result.stdout
