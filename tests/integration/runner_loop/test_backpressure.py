"""A run counts against the runner's bound until its finish is committed (ADR 0028).

Every finish is held back: a transaction locks the rows that are running, so the finisher's
next write waits on them while the handlers (no-ops) keep returning at once. A runner that
freed a run's place when its handler returned claimed on and on (docs/adr/0028: 84,000 rows
`running` under 500 slots); this one stops at ``max_unfinished`` and goes on once the
finishes are committed.
"""

from __future__ import annotations

import time

import psycopg

from support.runner_loop import Runners, create_job, eventually, states, submit

RUNS = 3000


def test_claims_stop_at_the_bound_while_finishes_wait(dsn: str, runners: Runners) -> None:
    submit(dsn, create_job(dsn, "loop.noop"), RUNS)
    with psycopg.connect(dsn) as blocker, psycopg.connect(dsn, autocommit=True) as probe:
        runner = runners.start(dsn, "--concurrency", "async=20", "--max-unfinished", "40")
        (started,) = runner.logged("runner starting")
        bound = started["max_unfinished"]  # 40, or the slots if more (other models too)
        assert bound < RUNS / 10
        locked = eventually(
            lambda: (
                blocker.execute(
                    "SELECT id FROM job_runs WHERE state = 'running' FOR UPDATE"
                ).fetchall()
                or blocker.rollback()
            ),
            what="running rows to lock",
        )
        assert locked
        peak = 0
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            (running,) = probe.execute(
                "SELECT count(*) FROM job_runs WHERE state = 'running'"
            ).fetchone() or (0,)
            peak = max(peak, running)
            time.sleep(0.05)
        held = states(dsn)
        blocker.commit()
    # Claimed and not committed: never past the bound, though the handlers had all returned.
    assert 0 < peak <= bound, (peak, held)
    assert held.get("completed", 0) < RUNS - bound
    eventually(lambda: states(dsn) == {"completed": RUNS}, what="every run to finish")
