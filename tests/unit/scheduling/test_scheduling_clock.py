"""The injected clocks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from sundial.scheduling.clock import Clock, ManualClock, SystemClock

START = datetime(2026, 6, 1, 10, tzinfo=UTC)


def test_manual_clock_moves_only_when_told() -> None:
    clock = ManualClock(START)
    assert clock.now() == clock.now() == START
    assert clock.advance(timedelta(seconds=90)) == START + timedelta(seconds=90)


def test_manual_clock_converts_to_utc() -> None:
    clock = ManualClock(datetime(2026, 6, 1, 12, tzinfo=timezone(timedelta(hours=2))))
    assert clock.now() == START
    assert clock.now().tzinfo is UTC


def test_manual_clock_refuses_naive_times_and_negative_advances() -> None:
    with pytest.raises(ValueError, match="must be timezone-aware"):
        ManualClock(datetime(2026, 6, 1))
    with pytest.raises(ValueError, match="only moves forward"):
        ManualClock(START).advance(timedelta(seconds=-1))


def test_both_clocks_satisfy_the_protocol_and_the_system_clock_is_utc() -> None:
    assert isinstance(ManualClock(START), Clock)
    assert isinstance(SystemClock(), Clock)
    assert SystemClock().now().tzinfo is UTC
