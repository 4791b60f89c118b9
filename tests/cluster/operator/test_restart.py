"""The operator killed with SIGKILL mid-stream and started again: every fire exactly once.

The schedule's next fire passes while no operator runs; the restarted one (same holder name, so
it takes its lease back at once) fires it late under the default Coalesce policy - no missed
fire - and a second crash right after changes nothing - no duplicate fire.
"""

from __future__ import annotations

import datetime
import itertools
from pathlib import Path
from typing import Any

import psycopg

from support.operator import (
    OperatorProcess,
    RunnerProcess,
    condition,
    get_json,
    scheduled_job_manifest,
)
from support.polling import wait_until


def fires(dsn: str, schedule_id: str) -> list[datetime.datetime]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT fire_time FROM schedule_fires WHERE schedule_id = %s ORDER BY fire_time",
            (schedule_id,),
        ).fetchall()
    return [row[0] for row in rows]


def runs_of(dsn: str, schedule_id: str) -> list[tuple[int, datetime.datetime, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT id, fire_time, state FROM job_runs WHERE schedule_id = %s ORDER BY id",
            (schedule_id,),
        ).fetchall()
    return [(row[0], row[1], row[2]) for row in rows]


def test_a_killed_operator_neither_misses_nor_repeats_a_fire(
    sundial_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    tmp_path: Path,
):
    kubectl("apply", "-n", namespace, "-f", "-", stdin=scheduled_job_manifest("tick"))
    body = wait_until(
        lambda: (lambda b: b if (condition(b, "Ready") or {}).get("status") == "True" else None)(
            get_json(kubectl, "-n", namespace, "sj", "tick")
        ),
        within=30,
        what="Ready=True",
    )
    uid = body["metadata"]["uid"]
    with psycopg.connect(operator_dsn) as conn:
        row = conn.execute("SELECT next_fire_time FROM schedules WHERE id = %s", (uid,)).fetchone()
    assert row is not None
    first_fire: datetime.datetime = row[0]

    sundial_operator.kill()
    assert fires(operator_dsn, uid) == [], "the first fire came before the crash"
    # Let the fire come due while nothing runs.
    wait_until(
        lambda: datetime.datetime.now(datetime.UTC) > first_fire + datetime.timedelta(seconds=2),
        within=65,
        what="the next fire time to pass with the operator down",
        every=0.5,
    )
    assert fires(operator_dsn, uid) == []

    with RunnerProcess(operator_dsn, tmp_path):
        sundial_operator.start()

        def fired_and_mirrored() -> Any:
            sundial_operator.assert_alive()
            runs = get_json(kubectl, "-n", namespace, "jr", "-l", "sundial.dev/scheduledjob=tick")
            phases = [(item.get("status") or {}).get("phase") for item in runs["items"]]
            return phases if "Succeeded" in phases else None

        wait_until(fired_and_mirrored, within=30, what="the late fire to run and be mirrored")
        assert fires(operator_dsn, uid) == [first_fire]

        # Crash again straight away, and start again: nothing is fired twice.
        sundial_operator.kill()
        sundial_operator.start()
        wait_until(
            lambda: (
                "operator running" in sundial_operator.logs().split("\n")[-1]
                or sundial_operator.logs().count("operator running") >= 3
            ),
            within=30,
            what="the third start to lead",
        )

        def caught_up() -> Any:
            sundial_operator.assert_alive()
            status = get_json(kubectl, "-n", namespace, "sj", "tick").get("status") or {}
            return status.get("lastSuccessfulTime")

        wait_until(caught_up, within=30, what="the status after the second restart")
    all_fires = fires(operator_dsn, uid)
    assert all_fires[0] == first_fire
    assert len(all_fires) == len(set(all_fires))
    # Any later fire is the next minute, never a repeat or a gap.
    for earlier, later in itertools.pairwise(all_fires):
        assert later - earlier == datetime.timedelta(minutes=1)
    assert [fire for _, fire, _ in runs_of(operator_dsn, uid)] == all_fires
