"""The maintainer deletes the rows of runners that died without withdrawing (long expired
announcements, and their circuit states with them), in bounded batches; live runners and
recently expired ones keep theirs."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from sundial.scheduler import maintainer, trigger
from sundial.store import leases, runners
from sundial.store import pool as store_pool
from support.maintainer import HOLDER


def insert_runner(dsn: str, worker: str, expired_ago: str, *, circuit: bool = False) -> None:
    """A runners row whose announcement expired ``expired_ago`` (an interval; negative: still
    valid), optionally with one circuit state."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO runners (worker_id, queues, handlers, expires_at)"
            " VALUES (%s, ARRAY['default'], '{}'::jsonb, now() - %s::interval)",
            (worker, expired_ago),
        )
        if circuit:
            conn.execute(
                "INSERT INTO circuits (worker_id, dependency, state, since)"
                " VALUES (%s, 'payments-api', 'open', now())",
                (worker,),
            )


def rows(dsn: str, table: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        query = sql.SQL("SELECT worker_id FROM {}").format(sql.Identifier(table))
        found = conn.execute(query).fetchall()
    return {worker for (worker,) in found}


async def test_the_maintainer_purges_long_dead_runners_in_bounded_batches(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    dead = {f"dead-{i}" for i in range(5)}
    for worker in sorted(dead):
        insert_runner(store_dsn, worker, "2 hours", circuit=True)
    insert_runner(store_dsn, "alive", "-30 seconds", circuit=True)
    insert_runner(store_dsn, "just-expired", "10 minutes", circuit=True)
    settings = maintainer.MaintainerSettings(
        archive_retention=None, runners_batch=2, max_batches_per_pass=2
    )
    keeper = maintainer.Maintainer(pool, holder=HOLDER, settings=settings)
    assert not (await keeper.step()).leading  # no lease, no purge
    assert dead <= rows(store_dsn, "runners")

    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=60) is not None
    first = await keeper.step()
    # Two batches of two: one dead runner left, so the task is due again at once.
    assert first.runners_purged == 4 and "runners" in first.ran
    second = await keeper.step()
    assert second.runners_purged == 1
    assert "runners" not in (await keeper.step()).ran  # nothing left: due after its interval

    kept = {"alive", "just-expired"}
    assert rows(store_dsn, "runners") == kept
    assert rows(store_dsn, "circuits") == kept  # the dead runners' circuit states went too


@pytest.mark.parametrize("bad", [{"older_than_seconds": -1.0}, {"limit": 0}])
async def test_purge_expired_refuses_nonsense(pool: store_pool.Pool, bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="older_than_seconds must be >= 0 and limit >= 1"):
        await runners.purge_expired(pool, **bad)  # type: ignore[arg-type]
