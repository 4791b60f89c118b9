"""The fire budget: a calendar of run_at seconds, in all and per namespace, on a manual clock."""

from __future__ import annotations

import collections
import itertools
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.scheduling import errors
from sundial.scheduling.clock import ManualClock
from sundial.scheduling.fire_budget import FireCalendar

HOUR = datetime(2026, 6, 1, 10, tzinfo=UTC)


def calendar(rate: float, per_namespace: float | None = None) -> FireCalendar:
    return FireCalendar(rate, ManualClock(HOUR), namespace_fires_per_second=per_namespace)


def seconds_after_hour(at: datetime) -> int:
    return int((at - HOUR) // timedelta(seconds=1))


def test_runs_in_an_uncrowded_second_keep_their_run_at() -> None:
    budget = calendar(10)
    run_ats = [HOUR + timedelta(milliseconds=250 * k) for k in range(40)]  # 4 a second
    assert [budget.place(at, "team-a") for at in run_ats] == run_ats


def test_a_crowded_second_spills_to_the_next_seconds_with_room_and_never_earlier() -> None:
    budget = calendar(100)
    placed = [budget.place(HOUR, "team-a") for _ in range(1000)]  # spread 0: all on the hour
    assert all(at >= HOUR for at in placed)
    per_second = collections.Counter(seconds_after_hour(at) for at in placed)
    assert per_second == {second: 100 for second in range(10)}
    # A run moved to a later second is due at that second's start.
    later = {HOUR + timedelta(seconds=s) for s in range(1, 10)}
    assert {at for at in placed if at != HOUR} == later


def test_a_namespace_flooding_one_second_leaves_its_neighbours_their_own_seconds() -> None:
    budget = calendar(1000, per_namespace=400)
    flood = [budget.place(HOUR, "team-b") for _ in range(5000)]
    # Placed after the whole flood, and still on time: the calendar kept room in each second.
    quiet_at = [HOUR + timedelta(seconds=s, milliseconds=500) for s in range(10) for _ in range(5)]
    quiet = [budget.place(at, "team-a") for at in quiet_at]
    assert quiet == quiet_at
    flood_per_second = collections.Counter(seconds_after_hour(at) for at in flood)
    assert max(flood_per_second.values()) == 400
    assert max(flood_per_second) == 12  # 5,000 at 400 a second: seconds 0 to 12
    assert budget.placed(HOUR + timedelta(seconds=3)) == 405
    assert budget.placed(HOUR + timedelta(seconds=3), "team-a") == 5


def test_without_a_namespace_rate_a_flood_delays_everyone_behind_it() -> None:
    # What the namespace rate is for: the global rate alone lets one namespace fill the seconds.
    budget = calendar(1000)
    for _ in range(5000):
        budget.place(HOUR, "team-b")
    assert budget.place(HOUR + timedelta(seconds=1), "team-a") == HOUR + timedelta(seconds=5)


def test_the_global_rate_bounds_every_second_whatever_the_namespaces() -> None:
    budget = calendar(300, per_namespace=200)
    placed = [budget.place(HOUR, f"team-{k % 5}") for k in range(3000)]
    per_second = collections.Counter(seconds_after_hour(at) for at in placed)
    assert max(per_second.values()) == 300 and max(per_second) == 9


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.sampled_from(["a", "b", "c"])), min_size=1, max_size=300
    ),
    st.randoms(use_true_random=False),
)
def test_each_second_holds_what_the_rates_allow_in_whatever_order_runs_come(
    requests: list[tuple[int, str]], rng: random.Random
) -> None:
    shuffled = list(requests)
    rng.shuffle(shuffled)
    budget = calendar(7, per_namespace=3)
    placed = [
        (budget.place(HOUR + timedelta(seconds=s), ns), s, ns) for s, ns in shuffled
    ]  # fmt: skip
    per_second = collections.Counter(seconds_after_hour(at) for at, _, _ in placed)
    per_namespace = collections.Counter((seconds_after_hour(at), ns) for at, _, ns in placed)
    assert max(per_second.values()) <= 7 and max(per_namespace.values()) <= 3
    assert all(seconds_after_hour(at) >= asked for at, asked, _ in placed)
    # No run waits while an earlier second it could have taken still has room for it.
    for at, asked, ns in placed:
        for second in range(asked, seconds_after_hour(at)):
            assert per_second[second] == 7 or per_namespace[second, ns] == 3


@given(st.lists(st.integers(0, 30), min_size=1, max_size=400), st.randoms(use_true_random=False))
def test_with_the_global_rate_alone_the_seconds_filled_do_not_depend_on_the_order(
    asked: list[int], rng: random.Random
) -> None:
    def fill(order: list[int]) -> collections.Counter[int]:
        budget = calendar(5)
        return collections.Counter(
            seconds_after_hour(budget.place(HOUR + timedelta(seconds=s), "a")) for s in order
        )

    shuffled = list(asked)
    rng.shuffle(shuffled)
    assert fill(sorted(asked)) == fill(shuffled)


def test_a_run_at_in_the_past_is_placed_from_now() -> None:
    clock = ManualClock(HOUR + timedelta(minutes=10))
    budget = FireCalendar(2, clock)
    old = HOUR  # a backfilled fire, ten minutes late
    placed = [budget.place(old, "team-a") for _ in range(5)]
    # The first two are due now either way and keep their run_at; the rest are paced from now.
    assert placed[:2] == [old, old]
    assert placed[2:] == [clock.now() + timedelta(seconds=s) for s in (1, 1, 2)]


def test_a_fractional_rate_holds_its_average() -> None:
    budget = calendar(0.5)
    placed = [budget.place(HOUR, "team-a") for _ in range(10)]
    assert {later - earlier for earlier, later in itertools.pairwise(placed)} == {
        timedelta(seconds=2)
    }
    assert placed[-1] - placed[0] == timedelta(seconds=18)  # ten runs at one per two seconds


def test_seconds_before_now_are_forgotten() -> None:
    clock = ManualClock(HOUR)
    budget = FireCalendar(10, clock, namespace_fires_per_second=5)
    for _ in range(30):
        budget.place(HOUR, "team-a")
    clock.advance(timedelta(seconds=4))
    budget.place(HOUR + timedelta(seconds=4), "team-b")
    assert budget.placed(HOUR) == 0 and budget.placed(HOUR, "team-a") == 0
    assert budget.placed(HOUR + timedelta(seconds=5), "team-a") == 5  # still ahead: kept


@pytest.mark.parametrize(
    ("rate", "per_namespace", "message"),
    [
        (0, None, "firesPerSecond: 0 must be a number greater than 0"),
        (-1, None, "firesPerSecond: -1 must be a number greater than 0"),
        (True, None, "firesPerSecond: True must be a number greater than 0"),
        (float("inf"), None, "firesPerSecond: inf must be a finite number"),
        (10, 0, "namespaceFiresPerSecond: 0 must be a number greater than 0"),
        (10, "5", "namespaceFiresPerSecond: '5' must be a number greater than 0"),
    ],
)
def test_bad_rates_name_the_field(rate: object, per_namespace: object, message: str) -> None:
    with pytest.raises(errors.InvalidPolicyError) as caught:
        calendar(rate, per_namespace)  # type: ignore[arg-type]
    assert str(caught.value) == message
