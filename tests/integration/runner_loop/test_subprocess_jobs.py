"""What a subprocess job gets: no database credentials in its environment, and the kill
grace its handler was registered with. Real runner processes."""

from __future__ import annotations

import json
import pathlib
import time

from support.runner_loop import Runners, create_job, eventually, run_row, submit


def test_a_subprocess_job_gets_no_database_credentials(
    dsn: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "env.json"
    job = create_job(dsn, "loop.subprocess_env", execution_model=None)
    (run_id,) = submit(dsn, job, args={"path": str(out)})
    secrets = {
        "SUNDIAL_DSN": dsn,
        "DATABASE_URL": dsn,
        "PGPASSWORD": "hunter2",
        "PGHOST": "db.internal",
        "UNRELATED_SETTING": "kept",
    }
    runners.start(dsn, env=secrets)

    eventually(lambda: run_row(dsn, run_id)["state"] == "completed", what="the subprocess job")
    environment = json.loads(out.read_text())
    assert environment["UNRELATED_SETTING"] == "kept"  # the filter is not "drop everything"
    leaked = {
        name
        for name, value in environment.items()
        if name in ("SUNDIAL_DSN", "DATABASE_URL") or name.startswith("PG") or dsn in value
    }
    assert leaked == set(), f"the job saw the runner's credentials: {sorted(leaked)}"
    assert environment["SUNDIAL_RUN_ID"] == str(run_id)


def test_the_kill_grace_is_the_handlers_not_the_runners(dsn: str, runners: Runners) -> None:
    # loop.subprocess_stubborn ignores SIGTERM and is registered with kill_grace_seconds=1;
    # the runner's own grace would be 10 s (min(10, --grace-seconds 30)).
    job = create_job(
        dsn, "loop.subprocess_stubborn", execution_model=None, timeout_seconds=1, max_retries=0
    )
    (run_id,) = submit(dsn, job)
    runners.start(dsn, "--grace-seconds", "30")
    eventually(lambda: run_row(dsn, run_id)["state"] == "running", what="the claim")
    started = time.monotonic()
    eventually(lambda: run_row(dsn, run_id)["state"] == "timed_out", what="the end")
    elapsed = time.monotonic() - started
    assert elapsed < 6, f"stopping took {elapsed:.1f}s: timeout 1 s + kill grace 1 s expected"
