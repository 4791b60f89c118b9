"""Two ``sundial scheduler`` processes on the real clock: one leads, fires are created once,
and SIGTERM stops them cleanly, releasing the lease."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from trigger_testing import bulk_schedules

SUNDIAL = shutil.which("sundial", path=str(Path(sys.executable).parent))


def test_two_scheduler_processes_share_the_work_through_the_lease(store_dsn: str) -> None:
    assert SUNDIAL is not None, "the sundial command is installed with the package"
    ids = bulk_schedules(
        store_dsn, 50, "@every 1s", now=datetime.now(UTC), concurrency_policy="Allow"
    )
    processes = [
        subprocess.Popen(
            [
                SUNDIAL,
                "scheduler",
                "--dsn",
                store_dsn,
                "--poll-seconds",
                "0.1",
                "--holder",
                f"scheduler-{index}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in (1, 2)
    ]
    try:
        time.sleep(3)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        errors = [process.communicate(timeout=30)[1] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], errors

    with psycopg.connect(store_dsn) as conn:
        per_fire = conn.execute(
            "SELECT schedule_id, fire_time, count(*) FROM job_runs GROUP BY 1, 2"
        ).fetchall()
        lease = conn.execute(
            "SELECT holder, expires_at <= now() FROM leader_leases WHERE name = 'trigger'"
        ).fetchone()
        states = dict(conn.execute("SELECT state, count(*) FROM job_runs GROUP BY 1").fetchall())
    assert {count for _, _, count in per_fire} == {1}
    fired = {schedule_id for schedule_id, _, _ in per_fire}
    assert fired == set(ids)
    per_schedule = len(per_fire) / len(ids)
    assert 1 <= per_schedule <= 5  # about one fire a second for ~3 s, each exactly once
    # The leader's log names only itself; the lease was released on SIGTERM.
    assert lease is not None and lease[0] in {"scheduler-1", "scheduler-2"} and lease[1]
    leader = int(lease[0].rsplit("-", 1)[1]) - 1
    assert "trigger tick" in errors[leader]
    assert "trigger tick" not in errors[1 - leader]
    assert set(states) <= {"pending", "scheduled"}
