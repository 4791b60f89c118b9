"""The retry budget of each dependency in this runner: a failure's retry is spent from it, or
deferred when it is used up.

Only failures that speak about a dependency are budgeted (a handler error, a timeout of a
handler that declares ``dependency``), and only when the run will be retried at all. Over
budget, the retry is deferred (never dropped): its delay grows to when the window has room
again plus a random share of one window, so deferred runs do not all return at once; the run's
``last_error`` says so, ``sundial_retries_deferred_total`` counts it and
``sundial_retry_budget_remaining`` shows what is left. ``RetryBudget`` explains why a
job's retry is deferred where an RPC client's would be dropped.
"""

from __future__ import annotations

import collections
import logging
import random
import time
from collections.abc import Callable

from sundial.api import error_text
from sundial.observability import metrics
from sundial.scheduling import failures, waiting
from sundial.store import claims

log = logging.getLogger("sundial.runner")

Clock = Callable[[], float]


class RetryBudget:
    """At most ``max_retries`` quick retries per sliding ``window_seconds``, per dependency.

    A wave of failures below the breaker's threshold can still multiply the load on a
    struggling downstream: every failed run comes back after its (short) backoff. The budget
    caps how many retries go back on their normal backoff per window, as Finagle's and
    Envoy's retry budgets cap retries per window.

    What happens past the budget: in an RPC client (Finagle, Envoy) a retry over budget is not
    made and the caller gets the failure, because a caller is waiting. A job has no caller
    waiting, and failing it for good would turn an outage into a pile of dead letters, so in
    Sundial a retry over budget is **deferred, not dropped**: the failed attempt is recorded
    and counted against ``maxRetries`` like any failure, but the run waits in ``RetryWait``
    until the window has room again (``retry_after_seconds()``), plus a random share of one
    window so that the deferred runs do not all come back at the same instant. A run whose
    retries are spent dead-letters as usual. The runner counts deferrals in
    ``sundial_retries_deferred_total{dependency}`` and says so in the run's ``last_error``.

    The budget is per runner process (like the breaker): N runners allow N times the budget.
    ``try_spend()`` is False when the budget is used up."""

    def __init__(
        self, max_retries: int, window_seconds: float, *, clock: Clock = time.monotonic
    ) -> None:
        if max_retries < 0 or window_seconds <= 0:
            raise ValueError("max_retries must be >= 0 and window_seconds > 0")
        self.max_retries = max_retries
        self.window_seconds = window_seconds
        self._clock = clock
        self._spent: collections.deque[float] = collections.deque()

    def try_spend(self) -> bool:
        now = self._clock()
        self._prune(now)
        if len(self._spent) >= self.max_retries:
            return False
        self._spent.append(now)
        return True

    def retry_after_seconds(self) -> float:
        """How long until a retry fits in the budget again (0 if one fits now)."""
        now = self._clock()
        self._prune(now)
        if len(self._spent) < self.max_retries:
            return 0.0
        if not self._spent:  # a budget of 0: never room; defer by a whole window
            return self.window_seconds
        # The oldest spend that must leave the window before one more fits.
        oldest = self._spent[len(self._spent) - self.max_retries]
        return max(oldest + self.window_seconds - now, 0.0)

    def remaining(self) -> int:
        self._prune(self._clock())
        return self.max_retries - len(self._spent)

    def _prune(self, now: float) -> None:
        while self._spent and self._spent[0] <= now - self.window_seconds:
            self._spent.popleft()


class RetryBudgets:
    """One ``RetryBudget`` per dependency, made on its first budgeted failure."""

    def __init__(
        self, max_retries: int, window_seconds: float, runner_metrics: metrics.RunnerMetrics
    ) -> None:
        self.max_retries = max_retries
        self.window_seconds = window_seconds
        self.metrics = runner_metrics
        self.budgets: dict[str, RetryBudget] = {}

    def spend(
        self, dependency: str, run: claims.ClaimedRun, result: claims.Finish
    ) -> claims.Finish:
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
            budget = self.budgets[dependency] = RetryBudget(self.max_retries, self.window_seconds)
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
