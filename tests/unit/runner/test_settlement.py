"""The outcome-to-finish table of ``runner.settlement``: each outcome's failure class, detail
and retry decision, the retry budget of a dependency, and the crash count behind quarantine."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry

from sundial.observability import metrics
from sundial.runner import crash_quarantine, in_flight, outcomes, registry, settlement
from sundial.runner import retry_budgets as budgets
from sundial.scheduling import failures
from sundial.store import claims
from support.invocations import invoke

NOW = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
Detail = outcomes.FailureDetail
Class = failures.FailureClass


def attempt(handler: str = "jobs.sync", *, retries_used: int = 0) -> in_flight.Attempt:
    run = claims.ClaimedRun(
        id=7, attempt=2, job_id=uuid.uuid4(), queue="default", handler=handler,
        execution_model=None, args={}, timeout_seconds=None, schedule_id=None, fire_time=None,
        idempotency_key="run:7", lease_until=NOW, priority=1, run_at=NOW, max_retries=3,
        retries_used=retries_used, backoff_base_seconds=1.0, backoff_cap_seconds=1.0,
        cancel_requested=False,
    )  # fmt: skip
    return in_flight.Attempt(run, invoke(handler), registry.ExecutionModel.ASYNC, 0.0)


def translator(
    *, budget: int = 100, dependencies: dict[str, str | None] | None = None
) -> settlement.Settlement:
    runner_metrics = metrics.RunnerMetrics()
    return settlement.Settlement(
        dependencies=dependencies or {},
        budgets=budgets.RetryBudgets(budget, 60.0, runner_metrics),
        quarantine=crash_quarantine.CrashQuarantine(
            None, after_crashes=3, worker_id="w", registry=CollectorRegistry()
        ),
        runner_metrics=runner_metrics,
    )


@pytest.mark.parametrize(
    ("outcome", "failure", "detail"),
    [
        (outcomes.Succeeded(), None, None),
        (outcomes.Failed("boom"), Class.ERROR, Detail.HANDLER_ERROR),
        (outcomes.Failed("bad", Detail.BAD_ARGS), Class.PERMANENT, Detail.BAD_ARGS),
        (outcomes.Failed("who", Detail.UNKNOWN_HANDLER), Class.PERMANENT, Detail.UNKNOWN_HANDLER),
        (outcomes.TimedOut("slow", 5.0), Class.TIMEOUT, Detail.TIMEOUT),
        (outcomes.Crashed("killed"), Class.CRASH, Detail.PROCESS_CRASHED),
        (outcomes.Cancelled(), Class.CANCELLED, None),
    ],
)
def test_each_outcome_is_finished_with_its_failure_class_and_detail(
    outcome: outcomes.Outcome, failure: failures.FailureClass | None, detail: str | None
) -> None:
    result = translator().finish_for(attempt(), outcome)

    assert result is not None
    assert (result.run_id, result.attempt) == (7, 2)  # the fence
    assert (result.failure, result.detail) == (failure, detail)


def test_a_crash_the_handler_did_not_cause_is_released_not_finished() -> None:
    restarted = outcomes.Crashed("pool restarted", Detail.POOL_RESTARTED)

    assert translator().finish_for(attempt(), restarted) is None


@pytest.mark.parametrize(
    "outcome", [outcomes.Failed("boom"), outcomes.TimedOut("slow", 5.0)], ids=["error", "timeout"]
)
def test_a_retry_over_its_dependencys_budget_is_deferred(outcome: outcomes.Outcome) -> None:
    translate = translator(budget=1, dependencies={"jobs.sync": "billing-api"})

    first = translate.finish_for(attempt(), outcome)
    second = translate.finish_for(attempt(), outcome)

    assert first is not None and second is not None
    assert "retry deferred" not in (first.error or "")
    assert "the retry budget of dependency 'billing-api'" in (second.error or "")
    assert second.retry_delay_seconds > first.retry_delay_seconds


def test_no_budget_is_spent_without_a_dependency_or_without_a_retry() -> None:
    translate = translator(budget=1, dependencies={"jobs.sync": "billing-api"})
    free = translator(budget=0)

    last = translate.finish_for(attempt(retries_used=3), outcomes.Failed("boom"))  # ends the run
    again = translate.finish_for(attempt(), outcomes.Failed("boom"))
    unbudgeted = free.finish_for(attempt(), outcomes.Failed("boom"))

    for result in (last, again, unbudgeted):
        assert result is not None and "retry deferred" not in (result.error or "")
