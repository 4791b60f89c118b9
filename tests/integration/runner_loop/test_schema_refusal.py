"""Real daemons against a schema they cannot use: a runner and a scheduler exit 1 with one line
that says what to run, and a runner keeps serving a newer schema that only added."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from sundial.store import migrate
from support.runner_loop import (
    HANDLERS,
    TESTS_DIR,
    Runners,
    create_job,
    eventually,
    run_row,
    submit,
)
from support.store import record_newer_migration

NEWEST = migrate.available()[-1].version


def _newer_release_migrated(dsn: str, *, compatible_from: int | None) -> None:
    record_newer_migration(dsn, NEWEST + 10, compatible_from=compatible_from)


def _sundial(*args: str) -> list[str]:
    return [sys.executable, "-m", "sundial", *args]


def test_a_runner_refuses_a_schema_a_newer_release_contracted(dsn: str) -> None:
    _newer_release_migrated(dsn, compatible_from=NEWEST + 10)
    command = _sundial(
        "runner", "--dsn", dsn, "--handlers", HANDLERS, "--metrics-port", "-1",
        "--concurrency", "async=1",
    )  # fmt: skip
    done = subprocess.run(
        command,
        env=dict(os.environ, PYTHONPATH=str(TESTS_DIR)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: sundial runner does not start: "), done.stderr
    assert "migrated by a newer Sundial" in last
    assert "Traceback" not in done.stderr
    assert dsn not in done.stderr  # the DSN holds the password


def test_a_scheduler_refuses_a_database_behind_it(make_database: Callable[..., str]) -> None:
    dsn = make_database()
    migrate.migrate(dsn, target=migrate.available()[-2].version)
    done = subprocess.run(
        _sundial("scheduler", "--dsn", dsn, "--once"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: sundial scheduler does not start: "), done.stderr
    assert "run `sundial migrate`" in last


def test_a_runner_serves_a_newer_schema_that_only_added(dsn: str, runners: Runners) -> None:
    _newer_release_migrated(dsn, compatible_from=None)
    runners.start(dsn, "--concurrency", "async=1")
    (run_id,) = submit(dsn, create_job(dsn, "loop.noop"))
    eventually(lambda: run_row(dsn, run_id)["state"] == "completed", what="the run to complete")
