"""A tenant cannot get a neighbour's runner to run its run, nor hold the neighbour's runs back.

One operator serves both namespaces and real ``sundial runner`` processes run the handlers.
``bob`` (``edit`` in team-b only, ``kubectl --as``) uses team-a's queue and handler names with
arguments of his own: team-a's runner, which serves team-a, never runs his run, and the run
waits ``Unclaimable`` with a reason that names his namespace. Then, on a runner shared by
both teams, he floods it with priority-9 runs that hold their slots: team-a's priority-1 run
still starts at once (the fair-share claim and the slot a runner keeps for a quieter
namespace).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from support.operator import OperatorProcess, apply, get_json, running, scheduled_job_manifest
from support.polling import wait_until
from support.runner_loop import Runners

pytestmark = pytest.mark.timeout(180)

AS_BOB = ("--as", "bob")
QUICK = ("--maintenance-seconds", "0.2", "--lease-seconds", "30")
#: Fires never: every run here is a JobRun.
YEARLY = "0 0 1 1 *"
#: The flood's jobs outlast the test, so a slot frees only when it is over.
FLOOD_SECONDS = 60


@pytest.fixture
def runners(tmp_path: Path) -> Iterator[Runners]:
    started = Runners(tmp_path)
    try:
        yield started
    finally:
        for _ in started.close():
            pass


def _job_run(name: str, job: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": name},
        "spec": {"jobRef": {"name": job}, **spec},
    }


def _as_bob(kubectl: Any, namespace: str, *items: Any) -> None:
    listing = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [json.loads(i) if isinstance(i, str) else i for i in items],
    }
    kubectl(*AS_BOB, "apply", "-n", namespace, "-f", "-", stdin=json.dumps(listing))


def _status(kubectl: Any, namespace: str, name: str) -> dict[str, Any]:
    return dict(get_json(kubectl, "-n", namespace, "jr", name).get("status") or {})


def test_a_neighbours_runner_never_runs_my_run_on_its_queue_and_handler(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    kubectl: Any,
    team_a: str,
    team_b: str,
    tmp_path: Path,
    runners: Runners,
) -> None:
    ran = tmp_path / "ran"
    billing = {"handler": {"name": "loop.record_namespace"}, "queue": "billing"}
    both = ["--namespace", team_b]
    with running(OperatorProcess(operator_dsn, kubeconfig, team_a, tmp_path, extra_args=both)):
        apply(kubectl, team_a, scheduled_job_manifest("billing", schedule=YEARLY, **billing))
        # bob names the same queue and handler, with arguments of his own.
        _as_bob(
            kubectl,
            team_b,
            scheduled_job_manifest("billing", schedule=YEARLY, **billing),
            _job_run("charge", "billing", args={"path": str(ran), "amount": 10_000}),
        )
        apply(kubectl, team_a, json.dumps(_job_run("charge", "billing", args={"path": str(ran)})))
        runners.start(operator_dsn, *QUICK, "--queue", "billing", "--namespace", team_a)

        wait_until(
            lambda: _status(kubectl, team_a, "charge").get("phase") == "Succeeded",
            within=60,
            what="team-a's run to succeed",
        )

        def reason(status: dict[str, Any]) -> str | None:
            found = [c for c in status.get("conditions") or () if c["type"] == "Reconciling"]
            return found[0]["reason"] if found else None

        # WaitingForRunner at first; Unclaimable once the runner's maintenance has looked.
        theirs = wait_until(
            lambda: reason(s := _status(kubectl, team_b, "charge")) == "Unclaimable" and s,
            within=60,
            what="bob's run to wait Unclaimable",
        )
        assert f"in namespace {team_b}" in theirs["waiting"], theirs
        assert theirs.get("phase") == "Pending", theirs
        ours = _status(kubectl, team_a, "charge")["runId"]
        assert ran.read_text() == f"{ours} {team_a}\n"  # his arguments reached no handler


def _running(dsn: str, namespace: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM job_runs WHERE namespace = %s AND state = 'running'",
            (namespace,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _start_lag(dsn: str, namespace: str) -> float | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM started_at - created_at) FROM job_runs WHERE namespace = %s",
            (namespace,),
        ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def test_a_flood_at_priority_9_does_not_hold_back_a_neighbours_run(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    kubectl: Any,
    team_a: str,
    team_b: str,
    tmp_path: Path,
    runners: Runners,
) -> None:
    sleep = {"handler": {"name": "loop.sleep"}}
    both = ["--namespace", team_b]
    with running(OperatorProcess(operator_dsn, kubeconfig, team_a, tmp_path, extra_args=both)):
        apply(
            kubectl, team_a, scheduled_job_manifest("report", schedule=YEARLY, priority=1, **sleep)
        )
        flood = [
            _job_run(f"flood-{i}", "flood", args={"seconds": FLOOD_SECONDS}) for i in range(24)
        ]
        _as_bob(
            kubectl,
            team_b,
            scheduled_job_manifest("flood", schedule=YEARLY, priority=9, **sleep),
            *flood,
        )
        # One runner for both teams, eight slots: the flood takes all but the one it keeps.
        runners.start(
            operator_dsn, *QUICK, "--namespace", team_a, "--namespace", team_b,
            "--concurrency", "async=8",
        )  # fmt: skip
        wait_until(
            lambda: _running(operator_dsn, team_b) == 7, within=60, what="the flood in 7 slots"
        )
        apply(kubectl, team_a, json.dumps(_job_run("report", "report", args={"seconds": 0.1})))
        lag = wait_until(
            lambda: _start_lag(operator_dsn, team_a), within=30, what="team-a's run to start"
        )
        assert lag < 3.0, f"team-a's run waited {lag:.1f} s behind the flood"
        wait_until(
            lambda: _status(kubectl, team_a, "report").get("phase") == "Succeeded",
            within=30,
            what="team-a's run to succeed",
        )
        assert _running(operator_dsn, team_b) == 7  # the flood never took the kept slot
