"""The failure table: what retries, what spends maxRetries, where a run ends."""

from __future__ import annotations

import pytest

from sundial.scheduling import failures
from sundial.scheduling.failures import FailureClass


def test_every_failure_class_has_a_rule() -> None:
    assert set(failures.RULES) == set(FailureClass)


def test_infrastructure_failures_do_not_spend_max_retries_but_are_bounded() -> None:
    rule = failures.rule_for("infrastructure")
    assert rule.retryable and not rule.counts_against_max_retries
    assert failures.INFRASTRUCTURE_RETRY_LIMIT > 0


@pytest.mark.parametrize(
    ("failure", "finished_state"),
    [("error", "dead_lettered"), ("timeout", "timed_out"), ("crash", "dead_lettered")],
)  # fmt: skip
def test_job_faults_are_retried_and_counted(failure: str, finished_state: str) -> None:
    rule = failures.rule_for(failure)
    assert rule.retryable and rule.counts_against_max_retries
    assert rule.budget is failures.Budget.MAX_RETRIES
    assert rule.finished_state == finished_state


def test_lost_leases_spend_their_own_budget_not_max_retries() -> None:
    rule = failures.rule_for("lease_expired")
    assert rule.retryable and not rule.counts_against_max_retries
    assert rule.budget is failures.Budget.LOST_LEASES
    assert rule.finished_state == "dead_lettered"


def test_oom_kills_spend_their_own_budget_and_end_dead_lettered() -> None:
    rule = failures.rule_for("oom")
    assert rule.retryable and not rule.counts_against_max_retries
    assert rule.budget is failures.Budget.OOM
    assert rule.finished_state == "dead_lettered"


def test_only_retried_classes_have_a_budget() -> None:
    for failure, rule in failures.RULES.items():
        assert (rule.budget is failures.Budget.NONE) == (not rule.retryable), failure


def test_retried_classes_end_dead_lettered_or_timed_out_once_their_budget_is_spent() -> None:
    # The store (migration 0050) reads any other final state of a retried class as
    # dead_lettered, so a value outside these two here would be silently overridden.
    ends = {rule.finished_state for rule in failures.RULES.values() if rule.retryable}
    assert ends == {"dead_lettered", "timed_out"}


@pytest.mark.parametrize("failure", ["cancelled", "upstream_failed", "start_failure", "permanent"])
def test_final_failures_are_never_retried(failure: str) -> None:
    assert not failures.rule_for(failure).retryable


def test_an_unknown_class_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="use one of error, timeout"):
        failures.rule_for("gremlins")
