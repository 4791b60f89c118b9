"""Quarantine after quarantineAfter consecutive failed runs, until cleared."""

from __future__ import annotations

import pytest

from sundial.scheduling import errors, quarantine
from sundial.scheduling.quarantine import QuarantineState


def fail_times(
    count: int, threshold: int | None, state: QuarantineState | None = None
) -> QuarantineState:
    state = state or QuarantineState()
    for _ in range(count):
        state = quarantine.record_failure(state, threshold)
    return state


def test_quarantines_exactly_at_the_threshold() -> None:
    almost = fail_times(2, threshold=3)
    assert not almost.quarantined
    reached = quarantine.record_failure(almost, 3)
    assert reached.quarantined
    assert quarantine.newly_quarantined(almost, reached)
    assert reached.message == (
        "suspended after 3 consecutive failed runs (quarantineAfter: 3); "
        "fix the job, then clear the quarantine to resume"
    )


def test_a_success_resets_the_streak() -> None:
    state = quarantine.record_success(fail_times(2, threshold=3))
    assert fail_times(2, threshold=3, state=state).quarantined is False


def test_the_quarantine_event_fires_once() -> None:
    quarantined = fail_times(3, threshold=3)
    later = quarantine.record_failure(quarantined, 3)
    assert later.quarantined
    assert not quarantine.newly_quarantined(quarantined, later)
    assert later.consecutive_failures == 4


def test_a_late_success_does_not_lift_the_quarantine_only_clear_does() -> None:
    quarantined = fail_times(3, threshold=3)
    assert quarantine.record_success(quarantined).quarantined
    assert quarantine.clear(quarantined) == QuarantineState()


@pytest.mark.parametrize("disabled", [None, 0])
def test_no_threshold_never_quarantines(disabled: int | None) -> None:
    assert not fail_times(50, threshold=disabled).quarantined


@pytest.mark.parametrize("bad", [-1, 1001, True])
def test_bad_threshold_names_the_field(bad: int) -> None:
    with pytest.raises(errors.InvalidPolicyError, match=r"^quarantineAfter: "):
        quarantine.record_failure(QuarantineState(), bad)
