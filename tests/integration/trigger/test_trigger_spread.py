"""Thundering cron: 10,000 schedules at ``0 * * * *`` with spreadSeconds 60."""

from __future__ import annotations

import collections
import uuid
from datetime import timedelta

import psycopg

from sundial.scheduler import trigger
from sundial.scheduling import clock, spread
from sundial.store import pool
from support.trigger import START, bulk_schedules

SCHEDULES = 10_000
LIMIT = SCHEDULES * 2 // 100  # no second of run_at may hold more than 2 % of the fires

# Fixed job ids whose spread alone puts 203 runs (2.03 %) in one second: the hash is uniform,
# not flat, and this set proves the budget is what keeps the bound.
CROWDED_IDS = [
    uuid.uuid5(uuid.NAMESPACE_URL, f"sundial-tests/spread/1/{i}") for i in range(SCHEDULES)
]


async def test_ten_thousand_hourly_fires_spread_so_no_second_holds_over_two_percent(
    pool: pool.Pool, store_dsn: str
) -> None:
    ids = bulk_schedules(
        store_dsn, SCHEDULES, "0 * * * *", now=START, spread_seconds=60, ids=CROWDED_IDS
    )
    fire = START + timedelta(hours=1)
    by_spread_alone = collections.Counter(
        spread.offset_for(uid, 60) // timedelta(seconds=1) for uid in ids
    )
    assert max(by_spread_alone.values()) > LIMIT  # the case the budget exists for
    simulated = clock.ManualClock(fire)
    # The budget bounds any second to 200 runs, whatever the hash does.
    settings = trigger.TriggerSettings(fires_per_second=LIMIT)

    report = await trigger.TriggerLoop(pool, clock=simulated, settings=settings).tick()

    assert report.created == SCHEDULES and report.schedules == SCHEDULES
    with psycopg.connect(store_dsn) as conn:
        rows = conn.execute("SELECT schedule_id, fire_time, run_at FROM job_runs").fetchall()
    assert len(rows) == SCHEDULES and {row[1] for row in rows} == {fire}
    per_second = collections.Counter(int((row[2] - fire).total_seconds()) for row in rows)
    assert max(per_second.values()) <= LIMIT, per_second.most_common(3)
    # Everything lands within the spread window, give or take what the budget moved.
    assert min(per_second) == 0 and max(per_second) < 75
    # The budget only moves runs later, and only where the hash crowded a second.
    spread_at = {uid: fire + spread.offset_for(uid, 60) for uid in ids}
    moved = [row for row in rows if row[2] != spread_at[row[0]]]
    assert all(row[2] > spread_at[row[0]] for row in moved)
    assert len(moved) < SCHEDULES // 2


async def test_spread_alone_keeps_run_at_at_the_hashed_offset(
    pool: pool.Pool, store_dsn: str
) -> None:
    ids = bulk_schedules(store_dsn, 500, "0 * * * *", now=START, spread_seconds=60)
    fire = START + timedelta(hours=1)
    settings = trigger.TriggerSettings(fires_per_second=None)
    await trigger.TriggerLoop(pool, clock=clock.ManualClock(fire), settings=settings).tick()
    with psycopg.connect(store_dsn) as conn:
        stored = dict(conn.execute("SELECT schedule_id, run_at FROM job_runs").fetchall())
    assert stored == {uid: fire + spread.offset_for(uid, 60) for uid in ids}


async def _flood_beside_a_quiet_namespace(
    pool: pool.Pool, store_dsn: str, settings: trigger.TriggerSettings
) -> tuple[dict[uuid.UUID, timedelta], dict[uuid.UUID, timedelta], list[uuid.UUID]]:
    """team-b: 3,000 schedules on the hour with no spread; team-a: 50 spread over 10 s. One
    tick in batches of 500, so most of team-a's runs are placed after team-b's. Returns each
    run's offset from the hour for both namespaces, and team-a's ids."""
    flood = bulk_schedules(store_dsn, 3000, "0 * * * *", now=START, namespace="team-b")
    quiet = bulk_schedules(
        store_dsn, 50, "0 * * * *", now=START, spread_seconds=10, namespace="team-a"
    )
    fire = START + timedelta(hours=1)
    loop = trigger.TriggerLoop(pool, clock=clock.ManualClock(fire), settings=settings)
    assert (await loop.tick()).created == 3050
    with psycopg.connect(store_dsn) as conn:
        rows = conn.execute("SELECT schedule_id, run_at FROM job_runs").fetchall()
    offsets = {schedule_id: run_at - fire for schedule_id, run_at in rows}
    return (
        {uid: offsets[uid] for uid in flood},
        {uid: offsets[uid] for uid in quiet},
        quiet,
    )


async def test_a_namespace_flooding_the_hour_does_not_delay_its_neighbours_fires(
    pool: pool.Pool, store_dsn: str
) -> None:
    settings = trigger.TriggerSettings(
        batch_size=500, fires_per_second=1000, namespace_fires_per_second=400
    )
    flood, quiet, quiet_ids = await _flood_beside_a_quiet_namespace(pool, store_dsn, settings)

    assert quiet == {uid: spread.offset_for(uid, 10) for uid in quiet_ids}
    flood_per_second = collections.Counter(
        offset // timedelta(seconds=1) for offset in flood.values()
    )
    assert max(flood_per_second.values()) <= 400 and max(flood_per_second) == 7
    everyone = collections.Counter(
        offset // timedelta(seconds=1) for offset in [*flood.values(), *quiet.values()]
    )
    assert max(everyone.values()) <= 1000


async def test_with_the_global_budget_alone_a_flood_delays_its_neighbours(
    pool: pool.Pool, store_dsn: str
) -> None:
    # The contrast that shows what the namespace rate buys.
    settings = trigger.TriggerSettings(batch_size=500, fires_per_second=1000)
    _, quiet, quiet_ids = await _flood_beside_a_quiet_namespace(pool, store_dsn, settings)

    late = [uid for uid in quiet_ids if quiet[uid] > spread.offset_for(uid, 10)]
    assert late and all(quiet[uid] >= timedelta(seconds=1) for uid in late)
