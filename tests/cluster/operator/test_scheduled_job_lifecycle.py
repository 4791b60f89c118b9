"""A ScheduledJob becomes a schedule in PostgreSQL; its runs show up as JobRuns and succeed.

The runs are executed by a real ``sundial runner`` process (``support.operator.RunnerProcess``)
running the async handler ``tests.ok`` of tests/handlers/operator_jobs.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from support.operator import (
    OperatorProcess,
    RunnerProcess,
    condition,
    events_for,
    get_json,
    scheduled_job_manifest,
)
from support.polling import wait_until


def test_runs_appear_succeed_and_history_is_pruned(
    sundial_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    tmp_path: Path,
):
    with RunnerProcess(operator_dsn, tmp_path) as runner:
        kubectl(
            "apply",
            "-n",
            namespace,
            "-f",
            "-",
            stdin=scheduled_job_manifest(
                "hello", successfulRunsHistoryLimit=2, failedRunsHistoryLimit=1
            ),
        )

        def ready() -> Any:
            sundial_operator.assert_alive()
            runner.assert_alive()
            body = get_json(kubectl, "-n", namespace, "sj", "hello")
            found = condition(body, "Ready")
            # kopf's finalizer patch and the operator's status write are separate requests;
            # either may reach the apiserver first.
            finalized = "sundial.dev/finalizer" in (body["metadata"].get("finalizers") or ())
            return body if found and found["status"] == "True" and finalized else None

        body = wait_until(ready, within=30, what="Ready=True and the finalizer")
        assert body["status"]["nextScheduleTime"]
        assert body["status"]["observedGeneration"] == body["metadata"]["generation"]
        assert condition(body, "Stalled")["status"] == "False"

        # Four runs at once through the run-now annotation, each acknowledged (removed).
        for value in ("1", "2", "3", "4"):
            kubectl("annotate", "-n", namespace, "sj", "hello", f"sundial.dev/run-now={value}")
            wait_until(
                lambda: (
                    "sundial.dev/run-now"
                    not in (
                        get_json(kubectl, "-n", namespace, "sj", "hello")["metadata"].get(
                            "annotations"
                        )
                        or {}
                    )
                ),
                within=20,
                what="the run-now annotation to be acknowledged",
            )

        def completed_runs() -> int:
            with psycopg.connect(operator_dsn) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM job_runs WHERE schedule_id = %s AND state = 'completed'",
                    (body["metadata"]["uid"],),
                ).fetchone()
            assert row is not None
            return int(row[0])

        wait_until(lambda: completed_runs() >= 4, within=30, what="four completed runs")

        def pruned_window() -> Any:
            runs = get_json(kubectl, "-n", namespace, "jr", "-l", "sundial.dev/scheduledjob=hello")[
                "items"
            ]
            phases = [(run.get("status") or {}).get("phase") for run in runs]
            return runs if len(runs) == 2 and phases == ["Succeeded", "Succeeded"] else None

        runs = wait_until(pruned_window, within=30, what="two Succeeded JobRuns (the limit)")
        for run in runs:
            owner = run["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"], owner["controller"]) == (
                "ScheduledJob",
                "hello",
                True,
            )
            assert run["status"]["attempt"] == 1
            assert run["status"]["startedAt"] and run["status"]["finishedAt"]
            assert run["status"]["duration"].endswith("s")

        # The cron fire itself (every minute) arrives and is mirrored too.
        def scheduled() -> Any:
            sundial_operator.assert_alive()
            status = get_json(kubectl, "-n", namespace, "sj", "hello").get("status") or {}
            return (
                status
                if status.get("lastScheduleTime") and status.get("lastSuccessfulTime")
                else None
            )

        status = wait_until(scheduled, within=90, what="a cron fire (lastScheduleTime)")
        assert status["consecutiveFailures"] == 0
        wait_until(lambda: completed_runs() >= 5, within=30, what="the cron fire's run to complete")
        # The runner's handler executed each completed run once, and its finish is what
        # completed them (the lease owner is the runner's worker id).
        with psycopg.connect(operator_dsn) as conn:
            completed = conn.execute(
                "SELECT id, attempt, lease_owner FROM job_runs"
                " WHERE schedule_id = %s AND state = 'completed' ORDER BY id",
                (body["metadata"]["uid"],),
            ).fetchall()
        ran = runner.ran()
        assert {(run_id, attempt) for run_id, attempt, _ in completed} <= set(ran)
        assert len(ran) == len(set(ran))
        assert {owner for _, _, owner in completed} == {runner.worker_id}

        table = kubectl("get", "sj,jr", "-n", namespace).stdout
        lines = table.splitlines()
        header = lines[0].split()
        for column in ("NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "READY", "ACTIVE", "AGE"):
            assert column in header, table
        sj_row = next(line for line in lines if line.startswith("scheduledjob.sundial.dev/hello"))
        assert "*/1 * * * *" in sj_row and "True" in sj_row and "false" in sj_row, table
        jr_rows = [line for line in lines if line.startswith("jobrun.sundial.dev/hello-")]
        assert jr_rows, table
        for row in jr_rows:
            assert "hello" in row.split()[1:2], table
        # The window's two Succeeded runs; the newest JobRun may not have its phase yet (the
        # mirror writes it a pass after PostgreSQL says completed), so it is not asserted.
        assert sum("Succeeded" in row for row in jr_rows) >= 2, table
        assert not any("Failed" in row for row in jr_rows), table
        jr_header = next(line for line in lines if line.startswith("NAME") and "PHASE" in line)
        for column in ("JOB", "PHASE", "ATTEMPT", "REASON", "STARTED", "DURATION"):
            assert column in jr_header, table

        reasons = {event["reason"] for event in events_for(kubectl, namespace, "hello")}
        assert "SuccessfulCreate" in reasons

    # The full history, beyond the JobRun window, from PostgreSQL.
    history = subprocess.run(
        [
            sys.executable,
            "-m",
            "sundial",
            "runs",
            "--dsn",
            operator_dsn,
            "--job",
            f"{namespace}/hello",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert history[0].split()[:3] == ["ID", "JOB", "STATE"]
    assert sum(" completed " in line for line in history[1:]) >= 5


def test_deleting_a_scheduled_job_deactivates_its_schedule(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str, operator_dsn: str
):
    kubectl("apply", "-n", namespace, "-f", "-", stdin=scheduled_job_manifest("bye"))
    body = wait_until(
        lambda: (lambda b: b if (condition(b, "Ready") or {}).get("status") == "True" else None)(
            get_json(kubectl, "-n", namespace, "sj", "bye")
        ),
        within=30,
        what="Ready=True",
    )
    kubectl("delete", "-n", namespace, "sj", "bye", "--timeout=30s")
    with psycopg.connect(operator_dsn) as conn:
        row = conn.execute(
            "SELECT s.active, j.active FROM schedules s JOIN job_definitions j ON j.id = s.job_id"
            " WHERE s.id = %s",
            (body["metadata"]["uid"],),
        ).fetchone()
    assert row == (False, False)
