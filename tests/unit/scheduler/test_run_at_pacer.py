"""The fire budget on the run_at timeline (scheduler.trigger.RunAtPacer), without a database."""

from __future__ import annotations

import collections
import random
from datetime import UTC, datetime, timedelta

from sundial.scheduler import trigger

HOUR = datetime(2026, 6, 1, 10, tzinfo=UTC)


def test_runs_in_an_uncrowded_second_keep_their_run_at() -> None:
    pacer = trigger.RunAtPacer(fires_per_second=10, burst=10)
    run_ats = [HOUR + timedelta(milliseconds=250 * k) for k in range(40)]  # 4 a second
    assert [pacer(run_at) for run_at in run_ats] == run_ats


def test_a_crowded_second_spills_later_and_never_earlier() -> None:
    pacer = trigger.RunAtPacer(fires_per_second=100, burst=20)
    run_ats = [HOUR] * 1000  # spread 0: everything on the hour
    paced = [pacer(run_at) for run_at in run_ats]
    assert all(later >= earlier for earlier, later in zip(run_ats, paced, strict=True))
    assert paced == sorted(paced)
    per_second = collections.Counter(int((at - HOUR).total_seconds()) for at in paced)
    assert max(per_second.values()) <= 20 + 100
    assert max(per_second) <= 10  # 1000 runs at 100/s after a burst of 20


def test_no_second_exceeds_burst_plus_rate_for_uniform_spread() -> None:
    rng = random.Random(7)
    run_ats = sorted(HOUR + timedelta(milliseconds=rng.randrange(60_000)) for _ in range(10_000))
    pacer = trigger.RunAtPacer(fires_per_second=180, burst=20)
    paced = [pacer(run_at) for run_at in run_ats]
    per_second = collections.Counter(int((at - HOUR).total_seconds()) for at in paced)
    assert max(per_second.values()) <= 200
    unpaced = collections.Counter(int((at - HOUR).total_seconds()) for at in run_ats)
    moved = sum(1 for before, after in zip(run_ats, paced, strict=True) if after != before)
    assert moved < len(run_ats) // 2 and max(unpaced.values()) >= max(per_second.values())
