"""Quarantine: a job that keeps failing stops firing until someone looks at it.

After ``quarantineAfter`` consecutive failed runs the schedule suspends itself: the state turns
``quarantined`` with a message for the ``Quarantined`` condition and event. It stays so until
``clear`` is called (by a user action); a success of a run that was already in flight resets
the failure count but does not lift the quarantine, because nobody has looked yet.

Only the outcomes a run ends with count: succeeded resets the streak; failed, timed out and
dead-lettered extend it. Cancelled runs (including those Replace cancels) are neither and
should not be recorded. ``quarantineAfter`` of ``None`` (or 0) disables quarantine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sundial.scheduling import errors

QUARANTINED = "Quarantined"
MAX_QUARANTINE_AFTER = 1000


@dataclass(frozen=True)
class QuarantineState:
    """The schedule's failure streak and whether it is quarantined (and why)."""

    consecutive_failures: int = 0
    quarantined: bool = False
    message: str | None = None


def validate_quarantine_after(quarantine_after: int | None) -> int | None:
    """Return the field, ``None`` when disabled; raise ``InvalidPolicyError`` when invalid."""
    if quarantine_after is None or quarantine_after == 0:
        return None
    if (
        isinstance(quarantine_after, bool)
        or not isinstance(quarantine_after, int)
        or not 1 <= quarantine_after <= MAX_QUARANTINE_AFTER
    ):
        raise errors.InvalidPolicyError(
            "quarantineAfter",
            quarantine_after,
            f"must be an integer from 1 to {MAX_QUARANTINE_AFTER}, or 0 to disable",
        )
    return quarantine_after


def record_success(state: QuarantineState) -> QuarantineState:
    """A run of the job succeeded: the streak ends (an existing quarantine stays)."""
    return replace(state, consecutive_failures=0)


def record_failure(state: QuarantineState, quarantine_after: int | None) -> QuarantineState:
    """A run of the job failed; quarantine when the streak reaches ``quarantine_after``.

    ``newly_quarantined(before, after)`` tells the caller to emit the event once.
    """
    threshold = validate_quarantine_after(quarantine_after)
    failures = state.consecutive_failures + 1
    if state.quarantined or threshold is None or failures < threshold:
        return replace(state, consecutive_failures=failures)
    return QuarantineState(
        consecutive_failures=failures,
        quarantined=True,
        message=(
            f"suspended after {failures} consecutive failed runs (quarantineAfter: {threshold}); "
            "fix the job, then clear the quarantine to resume"
        ),
    )


def clear(state: QuarantineState) -> QuarantineState:
    """Lift the quarantine and forget the streak."""
    return QuarantineState()


def newly_quarantined(before: QuarantineState, after: QuarantineState) -> bool:
    """True exactly on the transition into quarantine."""
    return after.quarantined and not before.quarantined
