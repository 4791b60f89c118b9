"""After a complete LIST, the schedules whose ScheduledJob it did not return are deactivated:
only those stored before the LIST began, and only in the namespaces it covered."""

from __future__ import annotations

import uuid

from sundial.store import pool as store_pool
from sundial.store import schedules
from support.trigger import START, spec


async def _store(pool: store_pool.Pool, namespace: str, name: str) -> uuid.UUID:
    uid = uuid.uuid4()
    await schedules.upsert(
        pool, uid=uid, namespace=namespace, name=name, generation=1, spec=spec(), now=START
    )
    return uid


async def _active(pool: store_pool.Pool, uid: uuid.UUID) -> bool:
    info = await schedules.get(pool, uid)
    assert info is not None
    return info.active


async def test_only_schedules_the_list_could_have_returned_are_deactivated(
    pool: store_pool.Pool,
) -> None:
    listed = await _store(pool, "team-a", "kept")
    gone = await _store(pool, "team-a", "gone")
    elsewhere = await _store(pool, "team-z", "unwatched")
    listed_at = await schedules.database_now(pool)
    newer = await _store(pool, "team-a", "made-after-the-list")

    orphans = await schedules.deactivate_orphans(
        pool, kept=[listed], listed_at=listed_at, namespaces=["team-a"]
    )
    assert orphans == [(gone, "team-a", "gone")]
    assert [await _active(pool, uid) for uid in (listed, gone, elsewhere, newer)] == [
        True, False, True, True,
    ]  # fmt: skip

    # Its name is free: a new ScheduledJob under it is stored.
    await _store(pool, "team-a", "gone")
