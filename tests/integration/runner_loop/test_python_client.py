"""The integrator's path end to end, with no Kubernetes: a job defined with ``sundial.client``,
runs submitted with it, a real ``sundial runner`` that registers the handler runs them, and the
client sees each one finish, failures with their error."""

from __future__ import annotations

import pathlib

from sundial.client import Client
from support.runner_loop import Runners


async def test_runs_submitted_from_python_are_run_and_seen_to_finish(
    dsn: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    runners.start(dsn)
    ledger = tmp_path / "ledger"
    async with Client(dsn) as client:
        await client.define_job("integrator", "record", handler="loop.record")
        await client.define_job("integrator", "explode", handler="loop.raise", max_retries=0)
        recorded = await client.submit_many("integrator/record", [{"path": str(ledger)}] * 3)
        exploded = await client.submit("integrator/explode")
        done = [await client.wait(r.run_id, within=60) for r in recorded]
        failed = await client.wait(exploded.run_id, within=60)
    assert [run.state for run in done] == ["completed"] * 3
    assert sorted(ledger.read_text().split("\n")[:-1]) == sorted(f"{run.id} 1" for run in done)
    assert failed.state == "dead_lettered", failed
    assert failed.last_error is not None and "attempt 1 exploded" in failed.last_error
