"""The fault benchmark's Kubernetes faults in their quick form, on the session's cluster.

SLOW (a few minutes, marked ``slow``): ``bench/faults.py --quick --only
operator-kill-9,pod-launcher-kill-9 --kubeconfig <the session's>`` as a child process: the
operator killed with -9 three times while it upserts ScheduledJobs, submits JobRuns and fires,
and the pod launcher killed with -9 three times while it holds pod runs on kwok. Asserts on
its table: nothing lost (every JobRun submitted once, every ScheduledJob stored and fired at
the first time after the restarts, every run completed), no stale write accepted (runners'
at the fenced sink; a pod run's finish from its last attempt's Pod), no duplicate fire.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAULTS = ("operator-kill-9", "pod-launcher-kill-9")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_kubernetes_faults_lose_nothing_and_accept_no_stale_write(
    tmp_path: Path, kubeconfig: Path
) -> None:
    report = tmp_path / "faults.json"
    completed = subprocess.run(
        [sys.executable, "bench/faults.py", "--quick", "--only", ",".join(FAULTS), "--seed", "16",
         "--kubeconfig", str(kubeconfig), "--json", str(report)],
        cwd=ROOT,
        env=dict(os.environ, SUNDIAL_BENCH_LOGS=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=880,
        check=False,
    )  # fmt: skip
    print(completed.stdout)
    assert report.exists(), completed.stdout + completed.stderr
    results = json.loads(report.read_text())
    assert {r["fault"] for r in results} == set(FAULTS)
    for result in results:
        assert result["submitted"] > 0, result
        assert result["lost"] == 0, result
        assert result["stale_accepted"] == 0, result
        assert result["duplicate_fires"] == 0, result
    assert completed.returncode == 0, completed.stdout + completed.stderr
