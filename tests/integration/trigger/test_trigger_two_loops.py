"""Two trigger loops at once, in separate processes: every fire is created exactly once.

Correctness must not depend on the leader lease (a leader can lose it mid-tick), so both
loops tick without it, driven with the same simulated instants at the same time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import psycopg

from sundial.scheduling import cron
from support.trigger import START, bulk_schedules

#: The trigger loop of a child process (support/trigger_process.py), and where it is found.
CHILD = ["-m", "support.trigger_process"]
TESTS_DIR = Path(__file__).resolve().parents[2]
SCHEDULES = {"* * * * *": 250, "*/2 * * * *": 250, "*/3 * * * *": 250, "*/5 * * * *": 250}
STEP = timedelta(seconds=15)
DURATION = timedelta(minutes=10)


def test_two_loops_in_two_processes_create_every_fire_exactly_once(store_dsn: str) -> None:
    ids_by_cron = {
        text: bulk_schedules(store_dsn, count, text, now=START, concurrency_policy="Allow")
        for text, count in SCHEDULES.items()
    }
    children = [
        subprocess.Popen(
            [sys.executable, *CHILD, store_dsn, f"loop-{index}"],
            env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for index in (1, 2)
    ]
    created = [0, 0]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        instant = START
        while instant < START + DURATION:
            instant += STEP
            for child in children:  # both start the same tick before either is waited for
                assert child.stdin is not None
                child.stdin.write(f"tick {instant.isoformat()}\n")
                child.stdin.flush()
            for index, child in enumerate(children):
                assert child.stdout is not None
                word, count = child.stdout.readline().split()
                assert word == "done"
                created[index] += int(count)
    finally:
        for child in children:
            if child.stdin is not None:
                child.stdin.close()
            assert child.wait(timeout=30) == 0
            if child.stdout is not None:
                child.stdout.close()

    with psycopg.connect(store_dsn) as conn:
        per_fire = conn.execute(
            "SELECT schedule_id, fire_time, count(*) FROM job_runs GROUP BY 1, 2"
        ).fetchall()
        fires_total = conn.execute("SELECT sum(fires_total) FROM schedules").fetchone()
    assert {count for _, _, count in per_fire} == {1}
    per_schedule: dict[object, int] = {}
    for schedule_id, _, _ in per_fire:
        per_schedule[schedule_id] = per_schedule.get(schedule_id, 0) + 1
    for text, ids in ids_by_cron.items():
        expected = len(list(cron.fire_times(cron.parse_schedule(text), START, START + DURATION)))
        assert {per_schedule.get(uid, 0) for uid in ids} == {expected}, text
    total = sum(per_schedule.values())
    assert total == 250 * (10 + 5 + 3 + 2)
    # Each run was created by exactly one of the loops, and both did part of the work.
    assert sum(created) == total and min(created) > 0, created
    assert fires_total is not None and fires_total[0] == total
