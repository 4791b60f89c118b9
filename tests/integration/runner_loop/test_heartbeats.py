"""Heartbeats extend only leases that need it: short runs are never heartbeated, long ones are."""

from __future__ import annotations

import time

from support.runner_loop import Runners, create_job, eventually, states, submit

# A 3 s lease: an attempt is extended once its lease was last set 1 s ago (a third of it).
LEASE = ("--lease-seconds", "3", "--maintenance-seconds", "0.2")


def test_runs_that_end_within_a_third_of_their_lease_are_never_heartbeated(
    dsn: str, runners: Runners
) -> None:
    # A 9 s lease: extended once it was last set 2.7 s ago (a third, less a tick of 0.3 s).
    # Runs of 1.5 s (1.2 s of slack for a loaded machine) in six waves at different phases: a
    # heartbeater that extended every in-flight lease every 3 s (as before ADR 0012) catches
    # about one wave in two, so it fails this test with a probability of about 98%.
    runner = runners.start(dsn, "--lease-seconds", "9")
    job = create_job(dsn, "loop.sleep")
    submit(dsn, create_job(dsn, "loop.noop"), 50)
    for wave in range(1, 7):
        submit(dsn, job, 3, args={"seconds": 1.5})
        eventually(
            lambda wave=wave: states(dsn) == {"completed": 50 + 3 * wave},  # type: ignore[misc]
            what=f"wave {wave} to complete",
        )
        time.sleep(0.7)
    assert runner.metric("sundial_lease_extensions_total") == 0


def test_a_run_longer_than_its_lease_is_kept_alive_by_heartbeats(
    dsn: str, runners: Runners
) -> None:
    runner = runners.start(dsn, *LEASE)
    (run_id,) = submit(dsn, create_job(dsn, "loop.sleep"), args={"seconds": 4.5})

    eventually(lambda: states(dsn) == {"completed": 1}, what="the long run to complete")
    extensions = runner.metric("sundial_lease_extensions_total")
    # Extended about every second over 4.5 s; without heartbeats the 3 s lease would have
    # lapsed and the reaper (every 0.2 s) would have taken the run back.
    assert extensions is not None and 3 <= extensions <= 6
    assert runner.metric("sundial_runs_total", handler="loop.sleep", outcome="succeeded") == 1
    assert run_id > 0
