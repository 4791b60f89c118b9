from __future__ import annotations

from sundial.runner import outcomes


def test_every_outcome_names_its_status() -> None:
    assert outcomes.Succeeded().status is outcomes.OutcomeStatus.SUCCEEDED
    assert outcomes.Failed("x").status is outcomes.OutcomeStatus.FAILED
    assert outcomes.TimedOut("x", 1.0).status is outcomes.OutcomeStatus.TIMED_OUT
    assert outcomes.Crashed("x").status is outcomes.OutcomeStatus.CRASHED
    assert outcomes.Cancelled().status is outcomes.OutcomeStatus.CANCELLED


def test_only_the_culprit_counts_a_crash_and_bad_input_is_not_retryable() -> None:
    assert outcomes.Crashed("x").counts_as_crash
    assert not outcomes.Crashed("x", outcomes.FailureDetail.POOL_RESTARTED).counts_as_crash
    assert outcomes.Failed("x").retryable
    assert not outcomes.Failed("x", outcomes.FailureDetail.BAD_ARGS).retryable
