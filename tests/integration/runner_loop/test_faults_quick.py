"""The fault benchmark's quick form as a test: nothing lost, no stale write accepted.

SLOW (about 3 minutes, marked ``slow``): it runs ``bench/faults.py --quick`` as a child
process, i.e. the real stack (a throwaway PostgreSQL, `sundial scheduler`, `sundial runner`s)
through kill -9 of runners and of the scheduler leader, a SIGSTOP past the lease, two
PostgreSQL restarts, the primary killed and its synchronous standby promoted, two leaders, a
poison job, a downstream outage and many schedules due at once, and asserts on its table:
lost == 0, stale writes accepted at the fenced sink == 0, duplicate fires == 0. Runs executed
more than once are allowed (at least once) and printed. The faults that need Kubernetes (the
operator's and the pod launcher's kill -9) run in tests/cluster/test_faults_on_kubernetes.py,
on that session's cluster. The hot queue's own faults run the same way on Redis (below).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FAULTS = (
    "runner-kill-9", "runner-sigstop", "scheduler-kill-9", "postgres-restart-x2",
    "postgres-failover", "two-leaders", "poison", "downstream-outage", "thundering-schedules",
)  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_faults_lose_nothing_and_accept_no_stale_write(tmp_path: Path) -> None:
    report = tmp_path / "faults.json"
    completed = subprocess.run(
        [
            sys.executable,
            "bench/faults.py",
            "--quick",
            "--only",
            ",".join(FAULTS),
            "--seed",
            "16",
            "--json",
            str(report),
        ],
        cwd=ROOT,
        env=dict(os.environ, SUNDIAL_BENCH_LOGS=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=580,
        check=False,
    )
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


#: On the Redis hot queue: Redis killed without persistence (it comes back empty), its primary
#: killed and the replica promoted (one that had received little, one that had every write:
#: the runners' leases survive under the old epoch), and every relay killed while runs stream in.
HOT_QUEUE_FAULTS = ("redis-kill-9", "redis-failover", "redis-failover-caught-up", "relay-kill-9")


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_hot_queue_loses_nothing_and_accepts_no_stale_write_when_redis_fails(
    tmp_path: Path,
) -> None:
    report = tmp_path / "faults.json"
    completed = subprocess.run(
        [
            sys.executable, "bench/faults.py", "--quick", "--hot-queue",
            "--only", ",".join(HOT_QUEUE_FAULTS), "--seed", "7", "--json", str(report),
        ],
        cwd=ROOT,
        env=dict(os.environ, SUNDIAL_BENCH_LOGS=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=380,
        check=False,
    )  # fmt: skip
    print(completed.stdout)
    assert report.exists(), completed.stdout + completed.stderr
    results = json.loads(report.read_text())
    assert {r["fault"] for r in results} == set(HOT_QUEUE_FAULTS)
    for result in results:
        assert result["submitted"] > 0 and result["completed"] == result["submitted"], result
        assert result["lost"] == 0, result
        assert result["stale_accepted"] == 0, result
    assert completed.returncode == 0, completed.stdout + completed.stderr
