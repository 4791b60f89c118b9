"""The maintainer says in its log when the server's autovacuum settings would let the hot
table's dead rows pile up, and says nothing when they are what ``store.server`` recommends.

Two real servers: the tests' own (started with ``store.server.RECOMMENDED``, as the chart's
bundled PostgreSQL is) and a throwaway one with PostgreSQL's defaults (a one-minute naptime),
as a managed PostgreSQL nobody tuned would be.
"""

from __future__ import annotations

import logging

import psycopg
import pytest

from sundial.localdev import postgres
from sundial.scheduler import maintainer, trigger
from sundial.store import leases, migrate, server
from sundial.store import pool as store_pool
from support.maintainer import HOLDER

SETTINGS = maintainer.MaintainerSettings(archive_retention=None)


async def _warnings(dsn: str, caplog: pytest.LogCaptureFixture) -> list[str]:
    caplog.clear()
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=2)
    try:
        assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=60)
        report = await maintainer.Maintainer(pool, holder=HOLDER, settings=SETTINGS).step()
    finally:
        await pool.close()
    assert "settings" in report.ran and report.failed == ()
    return [
        getattr(record, "problem", "")
        for record in caplog.records
        if record.getMessage() == "PostgreSQL settings need a change"
    ]


async def test_the_recommended_server_draws_no_warning(
    store_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="sundial.scheduler.maintainer")
    assert await _warnings(store_dsn, caplog) == []


async def test_a_server_with_the_default_naptime_is_named_with_the_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="sundial.scheduler.maintainer")
    with postgres.throwaway_postgres(extra_settings={"autovacuum_naptime": "1min"}) as untuned:
        with psycopg.connect(untuned.dsn, autocommit=True) as conn:
            conn.execute("CREATE DATABASE untuned")
        dsn = untuned.dsn_for("untuned")
        migrate.migrate(dsn)
        [problem] = await _warnings(dsn, caplog)
    assert "autovacuum_naptime is 60s" in problem
    assert f"set autovacuum_naptime = {server.RECOMMENDED['autovacuum_naptime']}" in problem


@pytest.mark.parametrize(
    ("seconds", "autovacuum", "named"),
    [
        (10, True, None),
        (1, True, None),
        (11, True, "autovacuum_naptime is 11s"),
        (600, True, "autovacuum_naptime is 600s"),
        (10, False, "autovacuum is off"),
    ],
)
def test_which_settings_are_named(seconds: float, autovacuum: bool, named: str | None) -> None:
    problem = server.naptime_problem(seconds, autovacuum)
    assert (problem is None) == (named is None)
    if named is not None:
        assert problem is not None and named in problem and "docs/operations.md" in problem
