"""A runner that serves several namespaces keeps a slot the namespace it runs most of may not take:
beside another namespace's flood of long jobs, a quiet namespace's run starts at once, where it
would wait for one of the flood's jobs to end. Real runner processes, real PostgreSQL."""

from __future__ import annotations

import time

import psycopg
import pytest

from support.runner_loop import Runners, create_job, eventually, submit

QUICK = ("--maintenance-seconds", "0.2", "--lease-seconds", "30", "--concurrency", "async=8")
#: The flood's jobs outlast the test's wait, so a slot frees only when the test is over.
FLOOD_SECONDS = 20.0


def _running(dsn: str, namespace: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM job_runs WHERE namespace = %s AND state = 'running'",
            (namespace,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _start_lag(dsn: str, run_id: int) -> float | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM started_at - created_at) FROM job_runs WHERE id = %s",
            (run_id,),
        ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


@pytest.mark.parametrize(("reserved", "starts"), [("1", True), ("0", False)])
def test_a_quiet_namespaces_run_starts_beside_a_flood_of_long_jobs(
    dsn: str, runners: Runners, reserved: str, starts: bool
) -> None:
    flood = create_job(dsn, "loop.sleep", namespace="team-b")
    quiet = create_job(dsn, "loop.sleep", namespace="team-a")
    submit(dsn, flood, 50, {"seconds": FLOOD_SECONDS})
    runner = runners.start(dsn, *QUICK, "--reserved-slots", reserved)
    # The flood takes every slot but the reserved one, and keeps them.
    busy = 8 - int(reserved)
    eventually(lambda: _running(dsn, "team-b") == busy, what=f"team-b to fill {busy} slots")
    [run_id] = submit(dsn, quiet, 1, {"seconds": 0.1})
    if starts:
        lag = eventually(lambda: _start_lag(dsn, run_id), what="team-a's run to start")
        assert lag < 3.0, lag
        assert _running(dsn, "team-b") == busy  # team-b never took the reserved slot
    else:
        # The control: without a reserved slot the run waits for one of the flood's jobs to
        # end, FLOOD_SECONDS after they started.
        time.sleep(3.0)
        assert _start_lag(dsn, run_id) is None
    runner.kill()
