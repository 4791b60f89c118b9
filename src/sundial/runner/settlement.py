"""How an attempt's outcome becomes what the store is told: a fenced finish, or a release.

One ``match`` over ``outcomes.Outcome`` (mypy checks it covers every member):

=================================  =====================  ==============  ==================
outcome                            written as             failure class   retry
=================================  =====================  ==============  ==================
``Succeeded``                      completed              (none)          (none)
``Failed``, retryable              a failed attempt       ``error``       by the retry rules;
                                                                          a handler error's
                                                                          retry is budgeted
``Failed``, not retryable          a failed attempt       ``permanent``   never
``TimedOut``                       a timed-out attempt    ``timeout``     budgeted
``Crashed``, by the handler        a crashed attempt      ``crash``       with backoff; counts
                                                                          towards quarantine
``Crashed``, not by the handler    released (no retry     (none)          at once, attempt + 1
(the process pool restarted)       spent)
``Cancelled``                      cancelled              ``cancelled``   never
=================================  =====================  ==============  ==================

The failure class is the one word the retry rules key on (``scheduling.failures``); the
outcome's ``FailureDetail`` (BadArgs, UnknownHandler, ...) goes with it to ``failure_detail``.
Backoff comes from ``attempt.finishes`` (the run's own settings); the retry budget of the run's
dependency (``dependency_of``: its job's ``spec.dependency``, else its handler's) may defer it
(``retry_budgets``), and a crash feeds the runner's crash quarantine (``crash_quarantine``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from sundial.attempt import finishes
from sundial.observability import metrics
from sundial.runner import crash_quarantine, in_flight, outcomes, retry_budgets
from sundial.scheduling import failures
from sundial.store import claims

log = logging.getLogger("sundial.runner")


class Settlement:
    """Translates outcomes for one runner: its retry budgets, its quarantine, its metrics."""

    def __init__(
        self,
        *,
        dependencies: Mapping[str, str | None],
        budgets: retry_budgets.RetryBudgets,
        quarantine: crash_quarantine.CrashQuarantine,
        runner_metrics: metrics.RunnerMetrics,
    ) -> None:
        #: Handler name -> the dependency it declares (None: none).
        self.dependencies = dependencies
        self.budgets = budgets
        self.quarantine = quarantine
        self.metrics = runner_metrics

    def finish_for(
        self, attempt: in_flight.Attempt, outcome: outcomes.Outcome
    ) -> claims.Finish | None:
        """The fenced finish of ``attempt`` for ``outcome``; None: release the run instead
        (only for an ``outcomes.Crashed`` the handler did not cause: the attempt ended through
        no fault of the job's, so it spends no retry)."""
        run = attempt.run
        result: claims.Finish
        match outcome:
            case outcomes.Succeeded():
                result = claims.Finish(run.id, run.attempt)
            case outcomes.Failed():
                failure = failures.FailureClass.ERROR
                if not outcome.retryable:
                    failure = failures.FailureClass.PERMANENT
                result = finishes.failed(run, outcome.error, failure, detail=outcome.detail)
                if outcome.detail is outcomes.FailureDetail.HANDLER_ERROR:
                    result = self._budgeted(run, result)
                log.info(
                    "attempt failed",
                    extra={**attempt.log_fields(), "reason": outcome.detail.value},
                )
            case outcomes.TimedOut():
                result = finishes.timed_out(
                    run, outcome.error, timeout_seconds=outcome.timeout_seconds
                )
                result = self._budgeted(run, result)
            case outcomes.Crashed():
                if not outcome.counts_as_crash:
                    return None
                result = finishes.crashed(run, outcome.error, detail=outcome.detail)
                self.metrics.process_crashes.labels(handler=run.handler).inc()
                self.quarantine.crashed(run.handler)
            case outcomes.Cancelled():
                result = finishes.cancelled(run, outcome.error)
        return result

    def dependency_of(self, run: claims.ClaimedRun) -> str | None:
        """The dependency ``run`` calls: the one its job's manifest names (``spec.dependency``),
        else the one its handler registered, else None. The manifest's comes first because the
        operator marks a ScheduledJob Degraded by it: the breaker that makes runs wait and the
        condition that says why must use the same key."""
        return run.dependency or self.dependencies.get(run.handler)

    def _budgeted(self, run: claims.ClaimedRun, result: claims.Finish) -> claims.Finish:
        """Only failures that speak about a dependency come here (a handler error, a
        timeout); a handler without one has no budget to spend."""
        dependency = self.dependency_of(run)
        if dependency is None:
            return result
        return self.budgets.spend(dependency, run, result)
