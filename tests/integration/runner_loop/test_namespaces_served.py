"""A runner runs its handlers only for the namespaces it serves, and tells each handler whose
run it is. Real runner processes: one team's runner on a queue and handler that another team
uses too never runs the other team's run, whatever its arguments."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import psycopg

from support.runner_loop import TESTS_DIR, Runners, create_job, eventually, run_row, submit

QUICK = ("--maintenance-seconds", "0.2", "--lease-seconds", "3")


def _reason(dsn: str, run_id: int) -> str | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT unclaimable_reason FROM job_runs WHERE id = %s", (run_id,)
        ).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def test_a_runner_serves_its_own_namespace_only(
    dsn: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "ran"
    team_a = create_job(dsn, "loop.record_namespace", namespace="team-a", execution_model=None)
    team_b = create_job(dsn, "loop.record_namespace", namespace="team-b", execution_model=None)
    (theirs,) = submit(dsn, team_b, args={"path": str(out)})
    (ours,) = submit(dsn, team_a, args={"path": str(out)})
    runners.start(dsn, *QUICK, "--namespace", "team-a")

    eventually(lambda: run_row(dsn, ours)["state"] == "completed", what="team-a's run")
    reason = eventually(lambda: _reason(dsn, theirs), what="a reason on team-b's run")
    assert reason.startswith("no live runner serves handler loop.record_namespace on queue default")
    assert "in namespace team-b" in reason and "--namespace team-b" in reason
    assert run_row(dsn, theirs)["state"] == "pending"
    assert out.read_text() == f"{ours} team-a\n"

    runners.start(dsn, *QUICK, "--namespace", "team-b")
    eventually(lambda: run_row(dsn, theirs)["state"] == "completed", what="team-b's run")
    assert out.read_text() == f"{ours} team-a\n{theirs} team-b\n"


def test_a_namespace_that_is_no_namespace_name_is_refused(dsn: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sundial", "runner", "--dsn", dsn, "--handlers",
         "handlers.loop_jobs", "--namespace", "team-a,Team_B"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
    )  # fmt: skip
    assert result.returncode == 2
    assert "'Team_B' is not a namespace name" in result.stderr
