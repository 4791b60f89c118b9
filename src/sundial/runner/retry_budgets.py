"""The retry budget of each dependency in this runner: a failure's retry is spent from it, or
deferred when it is used up.

Only failures that speak about a dependency are budgeted (a handler error, a timeout of a
handler that declares ``dependency``), and only when the run will be retried at all. Over
budget, the retry is deferred (never dropped): its delay grows to when the window has room
again plus a random share of one window, so deferred runs do not all return at once; the run's
``last_error`` says so, ``sundial_retries_deferred_total`` counts it and
``sundial_retry_budget_remaining`` shows what is left. ``breaker.RetryBudget`` explains why a
job's retry is deferred where an RPC client's would be dropped.
"""

from __future__ import annotations

import logging
import random

from sundial.api import error_text
from sundial.observability import metrics
from sundial.runner import breaker
from sundial.scheduling import failures, waiting
from sundial.store import claims

log = logging.getLogger("sundial.runner")


class RetryBudgets:
    """One ``breaker.RetryBudget`` per dependency, made on its first budgeted failure."""

    def __init__(
        self, max_retries: int, window_seconds: float, runner_metrics: metrics.RunnerMetrics
    ) -> None:
        self.max_retries = max_retries
        self.window_seconds = window_seconds
        self.metrics = runner_metrics
        self.budgets: dict[str, breaker.RetryBudget] = {}

    def spend(
        self, dependency: str, run: claims.ClaimedRun, result: claims.Outcome
    ) -> claims.Outcome:
        """``result`` as it is if its retry fits ``dependency``'s budget (or it ends the run:
        no retry to budget), else with the retry deferred and the deferral in its error."""
        if result.failure is None:
            return result
        rule = failures.rule_for(result.failure)
        if not rule.retryable or (
            rule.counts_against_max_retries and run.retries_used >= run.max_retries
        ):
            return result  # this failure ends the run: no retry to budget
        budget = self.budgets.get(dependency)
        if budget is None:
            budget = self.budgets[dependency] = breaker.RetryBudget(
                self.max_retries, self.window_seconds
            )
        remaining = self.metrics.retry_budget_remaining.labels(dependency=dependency)
        if budget.try_spend():
            remaining.set(budget.remaining())
            return result
        remaining.set(0)
        window = budget.window_seconds
        delay = max(
            result.retry_delay_seconds,
            # Spread over one window so deferred runs do not come back all at once.
            budget.retry_after_seconds() + random.uniform(0.0, window),
        )
        self.metrics.retries_deferred.labels(dependency=dependency).inc()
        note = "\n" + waiting.retry_budget_note(delay, dependency, budget.max_retries, window)
        log.info(
            "retry deferred: retry budget spent",
            extra={
                "run_id": run.id,
                "attempt": run.attempt,
                "handler": run.handler,
                "dependency": dependency,
                "delay_seconds": round(delay, 3),
            },
        )
        error = error_text.truncate((result.error or "") + note)
        return result._replace(error=error, retry_delay_seconds=delay)
