"""Many user JobRuns applied at once beside many ScheduledJobs are all submitted promptly: the
status mirror's passes over every ScheduledJob must not hold them up, on a running operator nor
on one just restarted (which sees every ScheduledJob and every submitted JobRun again).

The ScheduledJobs fire every 10 s and a runner executes their runs, so the mirror always has
writes to make (each fire's mirrored JobRun and status, the window moving on), as beside the
design workload's 1,000 ``@every 10s`` ScheduledJobs; the JobRuns are applied once the fires flow.

What the user sees is ``status.runId``: the test waits for every JobRun to show one, within a
bound the operator missed by far when a submission queued behind the mirror's writes. The
figures are printed (from each JobRun's creationTimestamp to its run's ``run_at``, which for a
JobRun without delay is the moment it was submitted).
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from support.operator import OperatorProcess, RunnerProcess, get_json, running
from support.polling import wait_until

SCHEDULED_JOBS = 300
JOB_RUNS = 300
#: Applied while the operator is down: fewer than those it submitted before, which a restarted
#: operator must not go through ahead of them.
LATER_JOB_RUNS = 50
#: From the last JobRun applied to the last one showing its runId, on a running operator. The
#: operator before ADR 0040 took 48.5 s here (load 11-13), with its lanes and threads 16.5 s.
WITHIN_SECONDS = 30.0
#: From the restart, for the JobRuns applied while it was down (11-16 s measured, either way).
AFTER_RESTART_WITHIN_SECONDS = 60.0


def _create(kubectl: Any, namespace: str, items: list[dict[str, Any]]) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": items}
    kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(listed))


def _job_runs(prefix: str, count: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": f"{prefix}-{index:04d}"},
            "spec": {"job": {"handler": {"name": "tests.ok"}}},
        }
        for index in range(count)
    ]


def _wait_for_run_ids(
    operator: OperatorProcess, kubectl: Any, namespace: str, prefix: str, count: int, within: float
) -> dict[str, dict[str, Any]]:
    """Every JobRun named ``prefix-*`` shows a runId within the bound; their bodies."""

    def submitted() -> dict[str, dict[str, Any]] | None:
        operator.assert_alive()
        # The user JobRuns only: the mirrored ones are many, and this poll must be quick.
        listed = get_json(kubectl, "-n", namespace, "jr", "-l", "!sundial.dev/mirror")
        bodies = {
            body["metadata"]["name"]: body
            for body in listed["items"]
            if body["metadata"]["name"].startswith(f"{prefix}-")
        }
        with_run = [b for b in bodies.values() if (b.get("status") or {}).get("runId")]
        return bodies if len(with_run) == count else None

    return wait_until(  # type: ignore[no-any-return]
        submitted, within=within, what=f"a runId on all {count} {prefix} JobRuns"
    )


def _cpu_seconds(operator: OperatorProcess) -> float:
    """The operator's CPU time so far (user and system), from /proc."""
    fields = Path(f"/proc/{operator.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _lags(dsn: str, bodies: dict[str, dict[str, Any]]) -> str:
    created = {
        int(body["status"]["runId"]): datetime.datetime.fromisoformat(
            body["metadata"]["creationTimestamp"]
        )
        for body in bodies.values()
    }
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT id, run_at FROM job_runs WHERE id = ANY(%s)", (list(created),)
        ).fetchall()
    lags = sorted((run_at - created[run_id]).total_seconds() for run_id, run_at in rows)
    return f"p50 {lags[len(lags) // 2]:.1f} s, max {lags[-1]:.1f} s"


@pytest.fixture
def sundial_operator(
    sundial_crds_applied: None, operator_dsn: str, kubeconfig: Path, namespace: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The operator with its default 15 s lease: the lease under a busy start has a test of
    its own (tests/integration/operator/test_operator_lease.py); this one is about
    submissions, on a machine whose load may be far above its 2 cores."""
    arguments = ["--lease-ttl", "15"]
    operator = OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path, extra_args=arguments)
    with running(operator) as process:
        yield process


def _fired_runs(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM job_runs WHERE schedule_id IS NOT NULL").fetchone()
    return int(row[0]) if row else 0


def test_job_runs_applied_beside_many_scheduled_jobs_are_submitted_promptly(
    sundial_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    tmp_path: Path,
    capsys: Any,
) -> None:
    scheduled = [
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": f"job-{index:04d}"},
            "spec": {"schedule": "@every 10s", "handler": {"name": "tests.ok"}},
        }
        for index in range(SCHEDULED_JOBS)
    ]
    with RunnerProcess(operator_dsn, tmp_path):
        _create(kubectl, namespace, scheduled)
        wait_until(
            lambda: _fired_runs(operator_dsn) >= SCHEDULED_JOBS,
            within=120,
            what=f"{SCHEDULED_JOBS} fired runs",
        )
        _create(kubectl, namespace, _job_runs("first", JOB_RUNS))
        applied = time.monotonic()
        first = _wait_for_run_ids(
            sundial_operator, kubectl, namespace, "first", JOB_RUNS, WITHIN_SECONDS
        )
        running_figure = (
            f"{time.monotonic() - applied:.1f} s ({_lags(operator_dsn, first)};"
            f" operator CPU {_cpu_seconds(sundial_operator):.1f} s since its start)"
        )
        fired = _fired_runs(operator_dsn)

        # Killed, and more JobRuns applied while it is down: the restarted operator sees every
        # ScheduledJob and JobRun again (kopf's initial listing, the mirror's first pass), and the
        # new JobRuns must not wait behind the ones submitted before.
        sundial_operator.kill()
        _create(kubectl, namespace, _job_runs("second", LATER_JOB_RUNS))
        sundial_operator.start()
        restarted = time.monotonic()
        second = _wait_for_run_ids(
            sundial_operator,
            kubectl,
            namespace,
            "second",
            LATER_JOB_RUNS,
            AFTER_RESTART_WITHIN_SECONDS,
        )
        restart_figure = (
            f"{time.monotonic() - restarted:.1f} s ({_lags(operator_dsn, second)};"
            f" operator CPU {_cpu_seconds(sundial_operator):.1f} s since its start)"
        )

    with capsys.disabled():
        print(
            f"\n{JOB_RUNS} JobRuns beside {SCHEDULED_JOBS} ScheduledJobs, every runId shown:"
            f" running operator {running_figure}; {LATER_JOB_RUNS} more, restarted operator"
            f" {restart_figure}; {fired} fired runs by the end of the first"
        )
