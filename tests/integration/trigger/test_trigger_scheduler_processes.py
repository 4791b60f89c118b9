"""Two ``sundial scheduler`` processes on the real clock: one leads, fires are created once,
and SIGTERM stops them cleanly, releasing the lease."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from support.trigger import bulk_schedules

SUNDIAL = shutil.which("sundial", path=str(Path(sys.executable).parent))


def wait_for_logs(paths: list[Path], wanted: set[str], within: float) -> None:
    """Until the processes' logs together hold every message of ``wanted``: a process that is
    slow to start (imports on a loaded machine) is waited for, not signalled mid-import."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        logs = "".join(path.read_text(errors="replace") for path in paths)
        if all(f'"message": "{message}"' in logs for message in wanted):
            return
        time.sleep(0.1)
    raise AssertionError(f"no {sorted(wanted)} in the schedulers' logs within {within}s")


def _took_the_trigger_lease(log: str) -> bool:
    return any(
        entry.get("logger") == "sundial.trigger"
        and entry.get("message") in {"leading", "taking over"}
        for entry in (json.loads(line) for line in log.splitlines() if line.startswith("{"))
    )


def test_two_scheduler_processes_share_the_work_through_the_lease(
    store_dsn: str, tmp_path: Path
) -> None:
    assert SUNDIAL is not None, "the sundial command is installed with the package"
    ids = bulk_schedules(
        store_dsn, 50, "@every 1s", now=datetime.now(UTC), concurrency_policy="Allow"
    )
    logs = [tmp_path / f"scheduler-{index}.log" for index in (1, 2)]
    sinks = [log.open("w") for log in logs]
    processes = [
        subprocess.Popen(
            [
                SUNDIAL,
                "scheduler",
                "--dsn",
                store_dsn,
                "--poll-seconds",
                "0.1",
                "--holder",
                f"scheduler-{index}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            text=True,
        )
        for index, sink in zip((1, 2), sinks, strict=True)
    ]
    try:
        wait_for_logs(logs, {"leading", "standing by"}, within=60)
        led_at = time.monotonic()
        time.sleep(3)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=30)
        for sink in sinks:
            sink.close()
    led_for = time.monotonic() - led_at
    errors = [log.read_text(errors="replace") for log in logs]
    assert [process.returncode for process in processes] == [0, 0], errors

    with psycopg.connect(store_dsn) as conn:
        per_fire = conn.execute(
            "SELECT schedule_id, fire_time, count(*) FROM job_runs GROUP BY 1, 2"
        ).fetchall()
        lease = conn.execute(
            "SELECT holder, expires_at <= now() FROM leader_leases WHERE name = 'trigger'"
        ).fetchone()
        states = dict(conn.execute("SELECT state, count(*) FROM job_runs GROUP BY 1").fetchall())
    assert {count for _, _, count in per_fire} == {1}
    fired = {schedule_id for schedule_id, _, _ in per_fire}
    assert fired == set(ids)
    per_schedule = len(per_fire) / len(ids)
    # About one fire a second while a leader led (each exactly once, asserted above).
    assert 1 <= per_schedule <= led_for + 3
    # Only a process that led fired (the lease may change hands on a loaded machine, or as
    # the first one stopped: each fire exactly once is what holds whoever led); the lease was
    # released on SIGTERM.
    assert lease is not None and lease[0] in {"scheduler-1", "scheduler-2"} and lease[1]
    ticked = [text for text in errors if "trigger tick" in text]
    assert ticked, "neither scheduler fired"
    assert all(_took_the_trigger_lease(text) for text in ticked), errors
    assert set(states) <= {"pending", "scheduled"}
