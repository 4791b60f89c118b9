"""A runner with a backlog gathers free slots before it claims; a quiet one claims at once."""

from __future__ import annotations

import pytest

from sundial.runner.claim_gathering import GATHER_SECONDS, MAX_BATCH, ClaimGathering


def test_without_a_backlog_a_free_slot_is_claimed_for_at_once() -> None:
    gathering = ClaimGathering(slots=8)
    assert gathering.wait_seconds(free=1, now=0.0) == 0.0
    gathering.claimed(count=3, limit=8)  # the queue had fewer runs than slots
    assert gathering.wait_seconds(free=1, now=1.0) == 0.0


def test_with_a_backlog_it_waits_for_half_the_slots() -> None:
    gathering = ClaimGathering(slots=8)
    gathering.claimed(count=8, limit=8)
    assert gathering.wait_seconds(free=1, now=10.0) == pytest.approx(GATHER_SECONDS)
    assert gathering.wait_seconds(free=3, now=10.001) == pytest.approx(GATHER_SECONDS - 0.001)
    assert gathering.wait_seconds(free=4, now=10.0015) == 0.0


def test_a_free_slot_waits_no_longer_than_the_gathering_time() -> None:
    """Slots held by long jobs never keep a freed slot idle for more than GATHER_SECONDS."""
    gathering = ClaimGathering(slots=8)
    gathering.claimed(count=2, limit=2)
    assert gathering.wait_seconds(free=1, now=5.0) > 0.0
    assert gathering.wait_seconds(free=1, now=5.0 + GATHER_SECONDS * 1.001) == 0.0
    gathering.claimed(count=1, limit=1)  # the claim it then made was full again
    assert gathering.wait_seconds(free=1, now=6.0) == pytest.approx(GATHER_SECONDS)


@pytest.mark.parametrize(
    ("slots", "batch"), [(1, 1), (2, 1), (3, 2), (8, 4), (31, 16), (256, MAX_BATCH)]
)
def test_the_batch_is_half_the_slots_up_to_a_bound(slots: int, batch: int) -> None:
    gathering = ClaimGathering(slots=slots)
    gathering.claimed(count=1, limit=1)
    assert gathering.batch == batch
    assert gathering.wait_seconds(free=batch, now=0.0) == 0.0
    if batch > 1:
        assert gathering.wait_seconds(free=batch - 1, now=0.0) > 0.0


def test_a_runner_of_one_slot_never_waits() -> None:
    gathering = ClaimGathering(slots=1)
    gathering.claimed(count=1, limit=1)
    assert gathering.wait_seconds(free=1, now=0.0) == 0.0
