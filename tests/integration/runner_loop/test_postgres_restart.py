"""PostgreSQL restarts under working runners: they reconnect and every run still completes."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from sundial.localdev import postgres
from sundial.store import migrate
from support.runner_loop import Runners, create_job, eventually, states, submit


@pytest.fixture
def own_server() -> Iterator[postgres.ThrowawayPostgres]:
    """A server of this test's own, so restarting it disturbs no other test."""
    if os.environ.get("SUNDIAL_TEST_DSN"):
        pytest.skip("restarting PostgreSQL needs the throwaway server, not SUNDIAL_TEST_DSN")
    server = postgres.ThrowawayPostgres(max_connections=50).start()
    try:
        yield server
    finally:
        server.stop()


def test_runners_reconnect_after_a_postgres_restart_and_finish_every_run(
    own_server: postgres.ThrowawayPostgres, runners: Runners
) -> None:
    dsn = own_server.dsn
    migrate.migrate(dsn)
    job = create_job(dsn, "loop.sleep")
    submit(dsn, job, 300, {"seconds": 0.05})
    options = ("--lease-seconds", "10", "--maintenance-seconds", "0.3", "--concurrency", "async=5")
    first = runners.start(dsn, *options)
    second = runners.start(dsn, *options)
    # Both connected before the restart: on a loaded machine a runner can take seconds to
    # start, and one that first connects after the restart has no outage to recover from.
    for runner in (first, second):
        eventually(
            lambda runner=runner: runner.logged("connected to PostgreSQL"),
            what=f"{runner.worker_id} to connect",
        )
    eventually(lambda: states(dsn).get("completed", 0) >= 30, what="some runs to complete")

    own_server.restart(mode="fast")

    eventually(lambda: states(dsn) == {"completed": 300}, what="every run to complete")
    for runner in (first, second):
        # Connected at start, and again after the outage.
        assert len(runner.logged("connected to PostgreSQL")) >= 2, "no outage was seen"
        assert runner.terminate_and_wait() == 0
