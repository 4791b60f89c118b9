"""``sundial quotas`` shows each quota beside what the next run is checked against and the
namespace's runs now: a run that ended shows as room before the maintenance pass returns it."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable

from click.testing import CliRunner

from sundial import cli
from sundial.store import pool as store_pool
from sundial.store import quotas, runs


def _quotas(dsn: str, *args: str) -> list[str]:
    result = CliRunner().invoke(cli.main, ["quotas", "--dsn", dsn, *args])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_no_quota_says_how_to_set_one(store_dsn: str) -> None:
    [line] = _quotas(store_dsn)
    assert "--namespace-active-runs" in line and "--active-runs-per-namespace" in line


def test_the_table_shows_counted_and_active_runs_and_where_each_quota_comes_from(
    store_dsn: str, make_job: Callable[..., uuid.UUID]
) -> None:
    team_a = make_job("a", namespace="team-a")
    team_b = make_job("b", namespace="team-b")

    async def load() -> None:
        pool = await store_pool.open_pool(store_dsn, min_size=1, max_size=2)
        try:
            await quotas.configure(pool, per_namespace={"team-a": 5}, default=3)
            made = await runs.submit_many(
                pool, team_a, [runs.BatchItem(args={"n": n}) for n in range(4)]
            )
            await runs.submit(pool, team_b, args={})  # team-b's row is made from the default
            await runs.cancel(pool, made[0].run_id)
        finally:
            await pool.close()

    asyncio.run(load())
    header, default, first, second = _quotas(store_dsn)
    assert header.split() == ["NAMESPACE", "QUOTA", "COUNTED", "ACTIVE", "LAST", "COUNT", "FROM"]
    assert default.startswith("* (every other namespace)") and default.split()[-1] == "default"
    # Four counted in, one cancelled: the count keeps it until the next maintenance pass.
    assert first.split()[:4] == ["team-a", "5", "4", "3"] and first.split()[-1] == "named"
    assert second.split()[:4] == ["team-b", "3", "1", "1"] and second.split()[-1] == "default"

    rows = [json.loads(line) for line in _quotas(store_dsn, "-o", "json")]
    assert [r["namespace"] for r in rows] == ["*", "team-a", "team-b"]
    assert rows[1] | {"lastCount": None} == {
        "namespace": "team-a",
        "maxActiveRuns": 5,
        "counted": 4,
        "activeNow": 3,
        "lastCount": None,
        "from": "named",
    }
    assert rows[1]["lastCount"] is not None  # configure counted when it stored the quota
