"""Fixtures for trigger-loop tests: a fresh database per test, cloned from a migrated template
(the same scheme as the store's tests), and a ManualClock so minutes of schedule take no
time."""

from __future__ import annotations

import pytest

from sundial.scheduling import clock
from support.trigger import START


@pytest.fixture
def manual_clock() -> clock.ManualClock:
    return clock.ManualClock(START)
