"""failurePolicy rules: first match wins, and each action's failure class."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.pods import failure_policy
from sundial.pods.outcomes import PodOutcome, PodState
from sundial.scheduling import failures
from sundial.scheduling.failures import FailureClass


def exited(*codes: tuple[str, int]) -> PodOutcome:
    first = next((c for c in codes if c[1] != 0), codes[0])
    return PodOutcome(
        PodState.FAILED, "Error", exit_code=first[1], container=first[0], exit_codes=codes
    )


OOM = PodOutcome(PodState.OOM_KILLED, "OOMKilled", exit_code=137, exit_codes=(("main", 137),))
EVICTED = PodOutcome(
    PodState.DISRUPTED,
    "Evicted",
    exit_codes=(("main", 137),),
    conditions=(("DisruptionTarget", "True"),),
)


def rule(action: str, **matcher: Any) -> dict[str, Any]:
    return {"action": action, **matcher}


def test_no_rules_means_the_failure_table_defaults() -> None:
    expected = {
        exited(("main", 1)): FailureClass.ERROR,
        OOM: FailureClass.OOM,
        EVICTED: FailureClass.INFRASTRUCTURE,
        PodOutcome(PodState.NEVER_STARTED, "ImagePullBackOff"): FailureClass.START_FAILURE,
        PodOutcome(PodState.DEADLINE_EXCEEDED, "DeadlineExceeded"): FailureClass.TIMEOUT,
        PodOutcome(PodState.GONE, "PodDeleted"): FailureClass.CRASH,
    }
    for outcome, failure in expected.items():
        assert failure_policy.decide([], outcome) == failure_policy.Verdict(failure)
    assert failure_policy.decide([], PodOutcome(PodState.SUCCEEDED, "Completed")).failure is None


def test_defaults_follow_the_store_rules_for_retry_and_budget() -> None:
    assert not failures.rule_for(FailureClass.START_FAILURE).retryable
    assert not failures.rule_for(FailureClass.INFRASTRUCTURE).counts_against_max_retries
    assert failures.rule_for(FailureClass.OOM).retryable


def test_a_running_pod_cannot_be_decided() -> None:
    with pytest.raises(ValueError, match="has not ended"):
        failure_policy.decide([], PodOutcome(PodState.RUNNING, "Running"))


def test_exit_code_in_and_not_in() -> None:
    rules = [
        rule("Fail", onExitCodes={"operator": "In", "values": [42]}),
        rule("Ignore", onExitCodes={"operator": "NotIn", "values": [1, 2]}),
    ]
    assert failure_policy.decide(rules, exited(("main", 42))).failure is FailureClass.PERMANENT
    assert failure_policy.decide(rules, exited(("main", 7))).failure is FailureClass.INFRASTRUCTURE
    assert failure_policy.decide(rules, exited(("main", 1))) == failure_policy.Verdict(
        FailureClass.ERROR
    )


def test_first_matching_rule_wins() -> None:
    rules = [
        rule("Retry", onExitCodes={"operator": "In", "values": [3]}),
        rule("Fail", onExitCodes={"operator": "In", "values": [3]}),
    ]
    verdict = failure_policy.decide(rules, exited(("main", 3)))
    assert (verdict.failure, verdict.action) == (FailureClass.ERROR, "Retry")


def test_container_name_restricts_the_exit_code_rule() -> None:
    rules = [
        rule("Fail", onExitCodes={"containerName": "sidecar", "operator": "In", "values": [3]})
    ]
    assert failure_policy.decide(rules, exited(("main", 3))).failure is FailureClass.ERROR
    both = exited(("main", 1), ("sidecar", 3))
    assert failure_policy.decide(rules, both).failure is FailureClass.PERMANENT


def test_not_in_ignores_containers_that_succeeded() -> None:
    rules = [rule("Fail", onExitCodes={"operator": "NotIn", "values": [5]})]
    assert failure_policy.decide(rules, exited(("sidecar", 0), ("main", 5))).failure is (
        FailureClass.ERROR
    )


def test_oom_rule_and_retry_keeps_the_oom_class() -> None:
    assert failure_policy.decide([rule("Fail", onOOMKilled=True)], OOM).failure is (
        FailureClass.PERMANENT
    )
    assert failure_policy.decide([rule("Retry", onOOMKilled=True)], OOM).failure is FailureClass.OOM
    assert failure_policy.decide([rule("Fail", onOOMKilled=True)], exited(("main", 1))).failure is (
        FailureClass.ERROR
    )


def test_pod_condition_rule() -> None:
    rules = [rule("Fail", onPodConditions=[{"type": "DisruptionTarget", "status": "True"}])]
    assert failure_policy.decide(rules, EVICTED).failure is FailureClass.PERMANENT
    not_true = [rule("Fail", onPodConditions=[{"type": "DisruptionTarget", "status": "False"}])]
    assert failure_policy.decide(not_true, EVICTED).failure is FailureClass.INFRASTRUCTURE


def test_quarantine_fails_and_asks_for_quarantine() -> None:
    verdict = failure_policy.decide(
        [rule("Quarantine", onExitCodes={"operator": "In", "values": [9]})], exited(("main", 9))
    )
    assert verdict == failure_policy.Verdict(FailureClass.PERMANENT, "Quarantine", quarantine=True)


def test_rules_do_not_apply_to_pods_that_never_started_or_timed_out() -> None:
    rules = [rule("Ignore", onExitCodes={"operator": "NotIn", "values": [1]})]
    never = PodOutcome(PodState.NEVER_STARTED, "ImagePullBackOff")
    assert failure_policy.decide(rules, never).failure is FailureClass.START_FAILURE


def test_rules_written_by_the_api_model_are_read() -> None:
    from sundial.api import common

    policy = common.FailurePolicy.model_validate(
        {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [75]}}]}
    )
    stored = [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in policy.rules]
    assert (
        failure_policy.decide(stored, exited(("main", 75))).failure is FailureClass.INFRASTRUCTURE
    )


GONE = PodOutcome(PodState.GONE, "PodDeleted", message="the Pod was deleted before it ended")


def test_a_deleted_pod_is_retried_as_a_crash_by_default_and_cancelled_on_request() -> None:
    assert failure_policy.decide([], GONE) == failure_policy.Verdict(FailureClass.CRASH)
    retried = failure_policy.decide([], GONE, pod_deletion_policy="Retry")
    assert retried == failure_policy.Verdict(FailureClass.CRASH)
    cancelled = failure_policy.decide([], GONE, pod_deletion_policy="Cancel")
    assert cancelled == failure_policy.Verdict(FailureClass.CANCELLED, "Cancel")
    assert failures.rule_for(cancelled.failure).finished_state == "cancelled"


def test_the_pod_deletion_policy_applies_only_to_deleted_pods() -> None:
    assert failure_policy.decide([], OOM, pod_deletion_policy="Cancel").failure is (
        FailureClass.OOM
    )
    assert failure_policy.decide([], EVICTED, pod_deletion_policy="Cancel").failure is (
        FailureClass.INFRASTRUCTURE
    )


def test_failure_policy_rules_never_see_a_deleted_pod() -> None:
    # A rule matching every non-zero exit must not turn a deletion into a permanent failure.
    rules = [rule("Fail", onExitCodes={"operator": "NotIn", "values": [0]})]
    assert failure_policy.decide(rules, GONE).failure is FailureClass.CRASH


def test_an_unknown_pod_deletion_policy_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="use Retry or Cancel"):
        failure_policy.decide([], GONE, pod_deletion_policy="Ignore")


def test_an_oom_kill_matched_by_retry_spends_the_oom_budget_not_max_retries() -> None:
    verdict = failure_policy.decide([rule("Retry", onOOMKilled=True)], OOM)
    assert failures.rule_for(verdict.failure).budget is failures.Budget.OOM
