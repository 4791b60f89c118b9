"""A handler knows when its run became due and when its attempt started (``ctx.run_at``,
``ctx.started_at``), as PostgreSQL recorded them, whatever its execution model: so it can
measure its own pickup lag."""

from __future__ import annotations

import pathlib
from datetime import datetime

import psycopg
import pytest

from support.runner_loop import Runners, create_job, eventually, run_row, submit


@pytest.mark.parametrize("model", ["async", "thread", "process", "subprocess"])
def test_the_handler_sees_the_run_at_and_started_at_the_database_holds(
    dsn: str, runners: Runners, tmp_path: pathlib.Path, model: str
) -> None:
    path = tmp_path / "times.txt"
    job = create_job(dsn, f"loop.times_{model}", execution_model=model)
    [run_id] = submit(dsn, job, args={"path": str(path)})
    with psycopg.connect(dsn) as conn:  # due a moment ago: the lag is not zero
        conn.execute(
            "UPDATE job_runs SET run_at = now() - interval '2.5 seconds' WHERE id = %s", (run_id,)
        )
    runners.start(dsn)

    eventually(lambda: run_row(dsn, run_id)["state"] == "completed", what="the run")
    [line] = path.read_text().splitlines()
    seen_id, run_at, started_at = line.split(" ")
    with psycopg.connect(dsn) as conn:
        stored = conn.execute(
            "SELECT run_at, started_at FROM job_runs WHERE id = %s", (run_id,)
        ).fetchone()
    assert stored is not None
    assert seen_id == str(run_id)
    assert (datetime.fromisoformat(run_at), datetime.fromisoformat(started_at)) == stored
    assert (stored[1] - stored[0]).total_seconds() >= 2.5
