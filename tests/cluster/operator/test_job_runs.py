"""User JobRuns: one run each, a DAG in order, cancel, and re-applying changes nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from support.operator import (
    OperatorProcess,
    RunnerProcess,
    StoreWorker,
    get_json,
    scheduled_job_manifest,
)
from support.polling import wait_until


def job_run(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": name},
        "spec": spec,
    }


def manifests(*objects: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})


def phase_of(kubectl: Any, namespace: str, name: str) -> str | None:
    body = get_json(kubectl, "-n", namespace, "jr", name)
    phase: str | None = (body.get("status") or {}).get("phase")
    return phase


def run_count(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM job_runs").fetchone()
    assert row is not None
    return int(row[0])


def test_a_dag_runs_in_order_cancel_works_and_reapplying_creates_nothing(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str, operator_dsn: str
):
    inline = {"handler": {"name": "tests.slow", "executionModel": "async"}}
    dag = manifests(
        job_run("extract", job=inline, args={"day": "2026-11-29"}),
        job_run("transform", job={"handler": {"name": "tests.ok"}}, dependsOn=["extract"]),
        job_run("load", job={"handler": {"name": "tests.ok"}}, dependsOn=["transform", "extract"]),
        job_run("later", job={"handler": {"name": "tests.ok"}}, delaySeconds=3600),
    )
    with StoreWorker(operator_dsn, slow_seconds=2.0) as worker:
        # The children are created before their parent's run exists: they wait for it.
        kubectl("apply", "-n", namespace, "-f", "-", stdin=dag)

        def all_succeeded() -> bool:
            sundial_operator.assert_alive()
            return all(
                phase_of(kubectl, namespace, name) == "Succeeded"
                for name in ("extract", "transform", "load")
            )

        wait_until(all_succeeded, within=60, what="the DAG to succeed")
        statuses = {
            name: get_json(kubectl, "-n", namespace, "jr", name)["status"]
            for name in ("extract", "transform", "load")
        }
        assert statuses["transform"]["startedAt"] >= statuses["extract"]["finishedAt"]
        assert statuses["load"]["startedAt"] >= statuses["transform"]["finishedAt"]
        order = [int(statuses[name]["runId"]) for name in ("extract", "transform", "load")]
        assert [run for run in worker.started_order if run in order] == order

        assert phase_of(kubectl, namespace, "later") == "Pending"
        kubectl(
            "patch",
            "-n",
            namespace,
            "jr",
            "later",
            "--type=merge",
            "-p",
            '{"spec":{"cancel":true}}',
        )
        wait_until(
            lambda: phase_of(kubectl, namespace, "later") == "Cancelled",
            within=20,
            what="the cancelled JobRun",
        )

        before = run_count(operator_dsn)
        assert before == 4
        result = kubectl("apply", "-n", namespace, "-f", "-", stdin=dag)
        assert "created" not in result.stdout
        # Proof the operator has processed everything after the re-apply: a new JobRun
        # applied afterwards succeeds; only its run is new.
        kubectl(
            "apply",
            "-n",
            namespace,
            "-f",
            "-",
            stdin=manifests(job_run("marker", job={"handler": {"name": "tests.ok"}})),
        )
        wait_until(
            lambda: phase_of(kubectl, namespace, "marker") == "Succeeded",
            within=20,
            what="the marker JobRun",
        )
        assert run_count(operator_dsn) == before + 1


def test_a_job_run_with_job_ref_runs_the_scheduled_job_with_merged_args(
    sundial_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    tmp_path: Path,
):
    kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=scheduled_job_manifest(
            "nightly", schedule="0 3 * * *", handler={"name": "tests.ok", "args": {"a": 1, "b": 1}}
        ),
    )
    with RunnerProcess(operator_dsn, tmp_path):
        # Its event may come before the ScheduledJob is stored: the JobRun stores it first.
        kubectl(
            "apply",
            "-n",
            namespace,
            "-f",
            "-",
            stdin=manifests(job_run("nightly-now", jobRef={"name": "nightly"}, args={"b": 2})),
        )
        wait_until(
            lambda: phase_of(kubectl, namespace, "nightly-now") == "Succeeded",
            within=40,
            what="the jobRef JobRun to succeed",
        )
    run_id = int(get_json(kubectl, "-n", namespace, "jr", "nightly-now")["status"]["runId"])
    with psycopg.connect(operator_dsn) as conn:
        row = conn.execute("SELECT args FROM job_runs WHERE id = %s", (run_id,)).fetchone()
    assert row is not None and row[0] == {"a": 1, "b": 2}


def test_a_job_run_naming_a_missing_scheduled_job_is_stalled(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str
):
    kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=manifests(job_run("orphan", jobRef={"name": "nobody"})),
    )

    def stalled() -> Any:
        sundial_operator.assert_alive()
        body = get_json(kubectl, "-n", namespace, "jr", "orphan")
        for found in (body.get("status") or {}).get("conditions") or ():
            if found["type"] == "Stalled" and found["status"] == "True":
                return found
        return None

    found = wait_until(stalled, within=20, what="Stalled=True JobNotFound")
    assert found["reason"] == "JobNotFound"
    assert "nobody" in found["message"]


def test_a_job_run_due_more_than_a_year_after_it_was_made_is_stalled_not_stored(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str
):
    """``runAt`` is bounded as ``delaySeconds`` is, from the JobRun's creation: a run due in
    the year 9999 would wait as a row of the hot table for ever. One due within the year is
    stored and waits."""
    kubectl(
        "apply", "-n", namespace, "-f", "-",
        stdin=scheduled_job_manifest("yearly", suspend=True),
    )  # fmt: skip
    within = (datetime.now(UTC) + timedelta(days=300)).strftime("%Y-%m-%dT%H:%M:%SZ")
    kubectl(
        "apply", "-n", namespace, "-f", "-",
        stdin=manifests(
            job_run("far", jobRef={"name": "yearly"}, runAt="9999-12-31T23:59:59Z"),
            job_run("within", jobRef={"name": "yearly"}, runAt=within),
        ),
    )  # fmt: skip

    def status_of(name: str) -> dict[str, Any]:
        sundial_operator.assert_alive()
        return get_json(kubectl, "-n", namespace, "jr", name).get("status") or {}

    stored = wait_until(
        lambda: status_of("within") if status_of("within").get("runId") else None,
        within=30,
        what="the JobRun due within the year stored",
    )
    assert stored["phase"] == "Pending"

    def stalled() -> Any:
        for found in status_of("far").get("conditions") or ():
            if found["type"] == "Stalled" and found["status"] == "True":
                return found
        return None

    found = wait_until(stalled, within=20, what="Stalled=True InvalidSpec")
    assert found["reason"] == "InvalidSpec"
    assert "spec.runAt" in found["message"] and "366 days" in found["message"]
    assert "runId" not in status_of("far")


def test_a_finished_job_run_is_deleted_after_its_ttl_and_its_run_stays(
    sundial_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    tmp_path: Path,
):
    with RunnerProcess(operator_dsn, tmp_path):
        kubectl(
            "apply",
            "-n",
            namespace,
            "-f",
            "-",
            stdin=manifests(
                job_run(
                    "short-lived", job={"handler": {"name": "tests.ok"}}, ttlSecondsAfterFinished=2
                )
            ),
        )

        def gone() -> bool:
            sundial_operator.assert_alive()
            result = kubectl("get", "-n", namespace, "jr", "short-lived", check=False)
            return result.returncode != 0 and "NotFound" in result.stderr

        wait_until(gone, within=30, what="the JobRun to be deleted after its TTL")
    with psycopg.connect(operator_dsn) as conn:
        row = conn.execute("SELECT state FROM job_runs").fetchone()
    assert row == ("completed",)


def test_cancelling_a_mirrored_job_run_cancels_its_run(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str
):
    # No worker: the run stays pending until it is cancelled.
    kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=scheduled_job_manifest("waiting", schedule="0 3 * * *"),
    )
    wait_until(
        lambda: (get_json(kubectl, "-n", namespace, "sj", "waiting").get("status") or {}).get(
            "observedGeneration"
        ),
        within=30,
        what="the ScheduledJob to be stored",
    )
    kubectl("annotate", "-n", namespace, "sj", "waiting", "sundial.dev/run-now=go")

    def mirrored() -> Any:
        sundial_operator.assert_alive()
        items = get_json(kubectl, "-n", namespace, "jr", "-l", "sundial.dev/scheduledjob=waiting")[
            "items"
        ]
        pending = [item for item in items if (item.get("status") or {}).get("phase") == "Pending"]
        return pending[0]["metadata"]["name"] if pending else None

    name = wait_until(mirrored, within=30, what="the mirrored JobRun, Pending")
    kubectl("patch", "-n", namespace, "jr", name, "--type=merge", "-p", '{"spec":{"cancel":true}}')
    wait_until(
        lambda: phase_of(kubectl, namespace, name) == "Cancelled",
        within=20,
        what="the mirrored JobRun Cancelled",
    )
