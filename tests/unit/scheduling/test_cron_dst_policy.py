"""Every DST policy against the brute-force oracle, at every offset change of 2025-2028.

``dstPolicy`` chooses what a cron schedule does with the wall-clock times a DST change skips
(fire at the transition, or skip them) and repeats (fire at the first occurrence, the second,
or both). The oracle's daemon (``support.cron_oracle``) reads the wall clock minute by minute
and applies the policy as the docs state it; Sundial's ``next_fire_after``,
``previous_fire_at_or_before`` and ``fire_times`` must agree with it on every combination, in
zones whose clocks move by 30 minutes (Lord Howe), at 02:45 (Chatham), backwards in winter
(Dublin's negative DST), four times a year (Casablanca) and by two hours (Troll).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.scheduling import cron, errors, fire_preview
from support import cron_oracle

ZONES = [
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Europe/Dublin",
    "Africa/Casablanca",
    "America/New_York",
    "Antarctica/Troll",
]
POLICIES = [
    cron.DstPolicy(skipped, repeated)
    for skipped, repeated in itertools.product(
        cron.SKIPPED_TIME_CHOICES, cron.REPEATED_TIME_CHOICES
    )
]
#: Every quarter hour, every 7 minutes, on the hour, half past and Chatham's 02:45: every kind
#: of wall minute a 30-, 60- or 120-minute change touches.
SCHEDULES = ["*/15 * * * *", "0 * * * *", "*/7 * * * *", "30 0-4 * * *", "45 2 * * *"]
TRANSITIONS = [
    (zone, instant) for zone in ZONES for instant in cron_oracle.transitions(zone, 2025, 2028)
]
#: Every schedule here fires at least once a day, whatever the policy.
DAY_AND_A_HALF = timedelta(hours=36)


def oracle_fires(
    expression: str, zone: str, policy: cron.DstPolicy, start: datetime, end: datetime
) -> list[datetime]:
    return cron_oracle.fires_between(
        expression,
        zone,
        start,
        end,
        skipped_time=policy.skipped_time,
        repeated_time=policy.repeated_time,
    )


@pytest.mark.parametrize("zone", ZONES)
def test_every_policy_fires_as_the_oracle_does_around_every_offset_change(zone: str) -> None:
    checked = 0
    for transition in cron_oracle.transitions(zone, 2025, 2028):
        start, end = transition - timedelta(hours=3), transition + timedelta(hours=3)
        for expression, policy in itertools.product(SCHEDULES, POLICIES):
            schedule = cron.parse_schedule(expression, zone, policy)
            expected = oracle_fires(expression, zone, policy, start, end)
            where = f"{expression} in {zone} around {transition.isoformat()} with {policy}"
            assert list(cron.fire_times(schedule, start, end)) == expected, where
            checked += 1
    assert checked >= 4 * len(SCHEDULES) * len(POLICIES)


@pytest.mark.parametrize("zone", ZONES)
def test_the_previous_fire_is_the_oracles_latest_at_every_minute_near_a_change(
    zone: str,
) -> None:
    transition = cron_oracle.transitions(zone, 2025, 2028)[0]
    for expression, policy in itertools.product(["*/15 * * * *", "30 0-4 * * *"], POLICIES):
        schedule = cron.parse_schedule(expression, zone, policy)
        start, end = transition - timedelta(hours=3), transition + timedelta(hours=3)
        fires = oracle_fires(expression, zone, policy, start - DAY_AND_A_HALF, end)
        at = start
        while at <= end:
            expected = max(fire for fire in fires if fire <= at)
            assert schedule.previous_fire_at_or_before(at) == expected, (expression, policy, at)
            at += timedelta(minutes=7, seconds=13)


def test_the_policies_differ_where_they_should() -> None:
    """New York, 2026: 02:30 does not exist on March 8 and happens twice on November 1."""
    zone = "America/New_York"

    def fires(policy: cron.DstPolicy, day: datetime) -> list[str]:
        schedule = cron.parse_schedule("30 1,2 * * *", zone, policy)
        found = cron.fire_times(schedule, day, day + timedelta(days=1))
        return [f"{fire:%H:%M}Z" for fire in found]

    spring, autumn = datetime(2026, 3, 8, 4, tzinfo=UTC), datetime(2026, 11, 1, 4, tzinfo=UTC)
    assert fires(cron.DstPolicy(), spring) == ["06:30Z", "07:00Z"]  # 02:30 fires at 03:00 EDT
    assert fires(cron.DstPolicy(skipped_time="Skip"), spring) == ["06:30Z"]
    # 01:30 happens at 05:30Z (EDT) and 06:30Z (EST); 02:30 once, at 07:30Z.
    assert fires(cron.DstPolicy(), autumn) == ["05:30Z", "07:30Z"]
    assert fires(cron.DstPolicy(repeated_time="Second"), autumn) == ["06:30Z", "07:30Z"]
    assert fires(cron.DstPolicy(repeated_time="Both"), autumn) == ["05:30Z", "06:30Z", "07:30Z"]


def test_a_skipped_time_under_skip_waits_for_its_next_day() -> None:
    schedule = cron.parse_schedule("30 2 * * *", "America/New_York", cron.DstPolicy("Skip"))
    before = datetime(2026, 3, 8, 6, tzinfo=UTC)  # 01:00 EST, an hour before the gap
    assert schedule.next_fire_after(before) == datetime(2026, 3, 9, 6, 30, tzinfo=UTC)
    assert schedule.previous_fire_at_or_before(datetime(2026, 3, 9, 6, tzinfo=UTC)) == datetime(
        2026, 3, 7, 7, 30, tzinfo=UTC
    )


def test_an_interval_has_no_dst_and_ignores_the_policy() -> None:
    both = cron.parse_schedule("@every 90m", "America/New_York", cron.DstPolicy("Skip", "Both"))
    plain = cron.parse_schedule("@every 90m", "America/New_York")
    after = datetime(2026, 11, 1, 4, tzinfo=UTC)
    assert list(cron.fire_times(both, after, after + timedelta(hours=6))) == list(
        cron.fire_times(plain, after, after + timedelta(hours=6))
    )


@pytest.mark.parametrize(
    ("skipped", "repeated", "field"),
    [
        ("AtTransiton", "First", "dstPolicy.skippedTime"),
        ("AtTransition", "Twice", "dstPolicy.repeatedTime"),
        ("skip", "First", "dstPolicy.skippedTime"),
    ],
)
def test_an_unknown_policy_names_the_field_and_the_choices(
    skipped: str, repeated: str, field: str
) -> None:
    with pytest.raises(errors.InvalidPolicyError) as raised:
        cron.DstPolicy(skipped, repeated)
    assert raised.value.field == field
    assert "must be one of" in str(raised.value)


# A schedule firing at least daily, so the oracle's window is bounded.
minutes = st.sampled_from(["0", "*/5", "*/15", "15,45", "30", "0-10/3", "*", "59"])
hours = st.sampled_from(["*", "0-4", "1", "2", "1,2,3", "*/2", "23,0,1", "2-3"])


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    minute=minutes,
    hour=hours,
    near=st.sampled_from(TRANSITIONS),
    shift=st.integers(-4 * 3600, 4 * 3600).map(lambda seconds: timedelta(seconds=seconds)),
    policy=st.sampled_from(POLICIES),
)
def test_next_and_previous_fire_agree_with_the_oracle_near_changes(
    minute: str,
    hour: str,
    near: tuple[str, datetime],
    shift: timedelta,
    policy: cron.DstPolicy,
) -> None:
    zone, transition = near
    instant = transition + shift
    expression = f"{minute} {hour} * * *"
    schedule = cron.parse_schedule(expression, zone, policy)
    later = oracle_fires(expression, zone, policy, instant, instant + DAY_AND_A_HALF)
    earlier = oracle_fires(expression, zone, policy, instant - DAY_AND_A_HALF, instant)
    assert schedule.next_fire_after(instant) == later[0]
    assert schedule.previous_fire_at_or_before(instant) == earlier[-1]


def test_the_preview_says_what_each_policy_did() -> None:
    zone = "America/New_York"

    def preview(policy: cron.DstPolicy, after: datetime) -> list[tuple[str, str | None]]:
        schedule = cron.parse_schedule("30 1,2 * * *", zone, policy)
        assert isinstance(schedule, cron.CronSchedule)
        fires = fire_preview.preview(schedule, after, 3)
        return [(f"{fire.fire_time:%m-%d %H:%M}Z", fire.note) for fire in fires]

    spring, autumn = datetime(2026, 3, 8, 4, tzinfo=UTC), datetime(2026, 11, 1, 4, tzinfo=UTC)
    assert preview(cron.DstPolicy(skipped_time="Skip"), spring) == [
        ("03-08 06:30Z", None),
        (
            "03-09 05:30Z",
            "02:30 does not exist on 2026-03-08 (clocks spring forward): "
            "not fired (skippedTime Skip)",
        ),
        ("03-09 06:30Z", None),
    ]
    twice = "01:30 happens twice on 2026-11-01 (clocks fall back): "
    assert preview(cron.DstPolicy(repeated_time="Second"), autumn) == [
        ("11-01 06:30Z", twice + "fires once, at the second; the first does not fire"),
        ("11-01 07:30Z", None),
        ("11-02 06:30Z", None),
    ]
    assert preview(cron.DstPolicy(repeated_time="Both"), autumn) == [
        ("11-01 05:30Z", twice + "fires at both; this is the first"),
        ("11-01 06:30Z", twice + "fires at both; this is the second"),
        ("11-01 07:30Z", None),
    ]
