"""Spread: a deterministic per-job offset so a popular minute is not one thundering second."""

from __future__ import annotations

import collections
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.scheduling import errors, spread
from sundial.scheduling.clock import ManualClock
from sundial.scheduling.fire_budget import FireCalendar

TOP_OF_HOUR = datetime(2026, 6, 1, 10, tzinfo=UTC)
JOBS = 10_000


def job_uids(count: int) -> list[uuid.UUID]:
    # Stable, realistic identities: the set is fixed by the names, not tuned to pass.
    return [uuid.uuid5(uuid.NAMESPACE_URL, f"sundial.dev/default/report-{i}") for i in range(count)]


def test_offset_is_pinned_so_an_upgrade_cannot_silently_move_every_job() -> None:
    # Also proves the offset does not come from hash(), which is salted per process.
    uid = "6f1c1a8e-7f0b-4a52-9d8e-1b2c3d4e5f60"
    assert spread.offset_for(uid, 60) == timedelta(seconds=25, milliseconds=935)


def test_uid_as_text_or_uuid_gives_the_same_offset() -> None:
    uid = uuid.UUID("6f1c1a8e-7f0b-4a52-9d8e-1b2c3d4e5f60")
    assert spread.offset_for(uid, 60) == spread.offset_for(str(uid), 60)


def test_zero_spread_is_the_exact_fire_time() -> None:
    for uid in job_uids(50):
        assert spread.run_at(TOP_OF_HOUR, uid, 0) == TOP_OF_HOUR


@settings(max_examples=60, deadline=None)
@given(identity=st.text(min_size=1, max_size=64), spread_seconds=st.integers(1, 3600))
def test_offset_lies_in_the_window_and_is_deterministic(identity: str, spread_seconds: int) -> None:
    offset = spread.offset_for(identity, spread_seconds)
    assert timedelta(0) <= offset < timedelta(seconds=spread_seconds)
    assert offset == spread.offset_for(identity, spread_seconds)


def test_fire_time_stays_logical_and_only_run_at_moves() -> None:
    uid = job_uids(1)[0]
    run_at = spread.run_at(TOP_OF_HOUR, uid, 60)
    assert run_at - TOP_OF_HOUR == spread.offset_for(uid, 60)


def test_ten_thousand_hourly_jobs_spread_over_sixty_seconds() -> None:
    per_second = collections.Counter(
        int(spread.offset_for(uid, 60).total_seconds()) for uid in job_uids(JOBS)
    )
    assert set(per_second) == set(range(60))
    # Spread alone: each second a uniform-like sample (mean 1.67 %); see the budget test below
    # for the guarantee independent of which uids the cluster happens to have.
    assert max(per_second.values()) <= JOBS * 0.02


def test_spread_and_fire_budget_keep_every_second_under_two_percent() -> None:
    run_ats = [spread.run_at(TOP_OF_HOUR, uid, 60) for uid in job_uids(JOBS)]
    # 180 a second, under the 2 % (200) this uid set reaches by spread alone in some seconds.
    budget = FireCalendar(fires_per_second=180, clock=ManualClock(TOP_OF_HOUR))
    placed = [budget.place(run_at, "default") for run_at in run_ats]
    per_second = collections.Counter(int((at - TOP_OF_HOUR).total_seconds()) for at in placed)
    assert max(per_second.values()) <= JOBS * 0.02
    assert max(placed) - TOP_OF_HOUR < timedelta(seconds=65)
    # The budget only moved runs out of the seconds the hash crowded.
    moved = sum(1 for before, after in zip(run_ats, placed, strict=True) if after != before)
    assert 0 < moved < JOBS // 10


@pytest.mark.parametrize("bad", [-1, 3601, 1.5, True])
def test_bad_spread_seconds_names_the_field(bad: object) -> None:
    with pytest.raises(errors.InvalidPolicyError, match=r"^spreadSeconds: .* must be an integer"):
        spread.offset_for("job", bad)  # type: ignore[arg-type]
