"""DST through the database path: the fire times the trigger stores around transitions.

The pure layer has exhaustive DST tests (tests/unit/scheduling/test_cron_dst.py); these prove
the loop stores those instants: a wall time skipped by spring-forward fires at the transition,
a wall time repeated by fall-back fires once, at its first occurrence (docs/design.md,
"Scheduling").
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from sundial.scheduler import trigger
from sundial.scheduling import clock
from sundial.store import pool, schedules
from support.trigger import UNPACED, add_schedule, fire_times, spec


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


CASES = [
    # zone, cron, simulation start (UTC), expected fire times (UTC) over three days
    pytest.param(
        "America/New_York",
        "30 2 * * *",
        "2026-03-07 00:00",
        ["2026-03-07 07:30", "2026-03-08 07:00", "2026-03-09 06:30"],  # 02:30 EST; 03:00 EDT
        id="new-york-spring-forward",
    ),
    pytest.param(
        "America/New_York",
        "30 1 * * *",
        "2026-10-31 00:00",
        ["2026-10-31 05:30", "2026-11-01 05:30", "2026-11-02 06:30"],  # 01:30 EDT once, not EST
        id="new-york-fall-back",
    ),
    pytest.param(
        "Europe/Berlin",
        "30 2 * * *",
        "2026-03-28 00:00",
        ["2026-03-28 01:30", "2026-03-29 01:00", "2026-03-30 00:30"],
        id="berlin-spring-forward",
    ),
    pytest.param(
        "Europe/Berlin",
        "30 2 * * *",
        "2026-10-24 00:00",
        ["2026-10-24 00:30", "2026-10-25 00:30", "2026-10-26 01:30"],
        id="berlin-fall-back",
    ),
    pytest.param(
        # Lord Howe moves by 30 minutes: 02:00 LHST -> 02:30 LHDT on 2026-10-04.
        "Australia/Lord_Howe",
        "15 2 * * *",
        "2026-10-02 00:00",
        ["2026-10-02 15:45", "2026-10-03 15:30", "2026-10-04 15:15"],
        id="lord-howe-spring-forward",
    ),
    pytest.param(
        # 02:00 LHDT -> 01:30 LHST on 2026-04-05: 01:45 happens twice and fires once.
        "Australia/Lord_Howe",
        "45 1 * * *",
        "2026-04-03 00:00",
        ["2026-04-03 14:45", "2026-04-04 14:45", "2026-04-05 15:15"],
        id="lord-howe-fall-back",
    ),
]


# The half-hourly neighbour's longest gap: 30 minutes unless fall-back repeats wall times.
LONGEST_GAP_MINUTES = {
    ("America/New_York", "2026-03-07 00:00"): 30,
    ("America/New_York", "2026-10-31 00:00"): 90,
    ("Europe/Berlin", "2026-03-28 00:00"): 30,
    ("Europe/Berlin", "2026-10-24 00:00"): 90,
    ("Australia/Lord_Howe", "2026-10-02 00:00"): 30,
    ("Australia/Lord_Howe", "2026-04-03 00:00"): 60,  # a 30-minute shift
}


@pytest.mark.parametrize(("zone", "schedule", "start", "expected"), CASES)
async def test_dst_transitions_fire_as_documented(
    pool: pool.Pool, store_dsn: str, zone: str, schedule: str, start: str, expected: list[str]
) -> None:
    begin = utc(start)
    uid = await add_schedule(pool, begin, schedule, time_zone=zone, concurrency_policy="Allow")
    half_hourly = await add_schedule(  # a neighbour in the same zone fires through the change
        pool, begin, "*/30 * * * *", time_zone=zone, concurrency_policy="Allow"
    )
    simulated = clock.ManualClock(begin)
    loop = trigger.TriggerLoop(pool, clock=simulated, settings=UNPACED)
    step = timedelta(minutes=15)
    while simulated.now() < begin + timedelta(days=3):
        simulated.advance(step)
        await loop.tick()

    assert fire_times(store_dsn, uid) == [utc(text) for text in expected]
    neighbour = fire_times(store_dsn, half_hourly)
    # Skipped wall times fold into the transition instant (never two fires closer than 30
    # minutes); repeated ones fire once (a gap of up to 90 minutes across a 1-hour fall-back).
    gaps = {later - earlier for earlier, later in itertools.pairwise(neighbour)}
    assert min(gaps) == timedelta(minutes=30)
    assert max(gaps) <= timedelta(minutes=90)
    assert max(gaps) == timedelta(minutes=LONGEST_GAP_MINUTES[(zone, start)])


POLICY_CASES = [
    # policy, simulation start (UTC), expected fires of "30 1,2 * * *" in New York, two days
    pytest.param(
        {"skipped_time": "Skip"},
        "2026-03-07 12:00",
        ["2026-03-08 06:30", "2026-03-09 05:30", "2026-03-09 06:30"],  # no 02:30 on March 8
        id="skip-the-skipped-time",
    ),
    pytest.param(
        {"repeated_time": "Second"},
        "2026-10-31 12:00",
        ["2026-11-01 06:30", "2026-11-01 07:30", "2026-11-02 06:30", "2026-11-02 07:30"],
        id="repeated-time-at-its-second",
    ),
    pytest.param(
        {"repeated_time": "Both"},
        "2026-10-31 12:00",
        [
            "2026-11-01 05:30",
            "2026-11-01 06:30",
            "2026-11-01 07:30",
            "2026-11-02 06:30",
            "2026-11-02 07:30",
        ],
        id="repeated-time-twice",
    ),
]


async def run_two_days(pool: pool.Pool, begin: datetime) -> None:
    simulated = clock.ManualClock(begin)
    loop = trigger.TriggerLoop(pool, clock=simulated, settings=UNPACED)
    while simulated.now() < begin + timedelta(days=2):
        simulated.advance(timedelta(minutes=15))
        await loop.tick()


@pytest.mark.parametrize(("policy", "start", "expected"), POLICY_CASES)
async def test_a_dst_policy_is_stored_and_fired_by_the_trigger(
    pool: pool.Pool, store_dsn: str, policy: dict[str, str], start: str, expected: list[str]
) -> None:
    begin = utc(start)
    uid = await add_schedule(
        pool,
        begin,
        "30 1,2 * * *",
        time_zone="America/New_York",
        concurrency_policy="Allow",
        dst_policy=policy,
    )
    await run_two_days(pool, begin)
    assert fire_times(store_dsn, uid) == [utc(text) for text in expected]


async def test_changing_the_dst_policy_recomputes_the_next_fire(pool: pool.Pool) -> None:
    """A policy change is a change of when the schedule fires: the stored next fire time
    follows it, as it does for a new cron expression or zone."""
    begin = utc("2026-11-01 05:45")  # 01:45 EDT, in the first pass of the repeated hour
    zone = "America/New_York"
    uid = await add_schedule(pool, begin, "30 1 * * *", name="policy", time_zone=zone)
    stored = await schedules.get(pool, uid)
    assert stored is not None and stored.next_fire_time == utc("2026-11-02 06:30")
    second = spec("30 1 * * *", time_zone=zone, dst_policy={"repeated_time": "Second"})
    result = await schedules.upsert(
        pool, uid=uid, namespace="default", name="policy", generation=2, spec=second, now=begin
    )
    assert result.next_fire_time == utc("2026-11-01 06:30")  # 01:30 EST, still ahead
