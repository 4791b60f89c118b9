"""A ScheduledJob whose timeZone is a host file (localtime, posixrules) is stored stalled."""

from __future__ import annotations

import datetime
import uuid

import pytest

from sundial.api import common, scheduled_job
from sundial.store import pool as store_pool
from sundial.store import schedules

NOW = datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.UTC)


@pytest.mark.parametrize("zone", ["localtime", "posixrules", "Factory"])
async def test_a_host_file_as_time_zone_stalls_the_schedule(
    pool: store_pool.Pool, zone: str
) -> None:
    uid = uuid.uuid4()
    spec = scheduled_job.ScheduledJobSpec(
        schedule="0 9 * * *", time_zone=zone, handler=common.HandlerSpec(name="h")
    )
    result = await schedules.upsert(
        pool,
        uid=uid,
        namespace="default",
        name=f"tz-{zone.lower()}",
        generation=1,
        spec=spec,
        now=NOW,
    )
    assert result.stalled is not None and result.stalled.reason == "UnknownTimeZone"
    assert str(result.stalled).startswith(f"timeZone: {zone!r} is not an IANA time zone name")
    stored = await schedules.get(pool, uid)
    assert stored is not None and stored.stalled_reason == "UnknownTimeZone"
