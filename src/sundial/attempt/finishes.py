"""How an attempt ended, as the store's fenced finish (``claims.Finish``).

The store writes what it is told; the decisions are made here, once, for the runner and the
pod launcher alike:

* the **failure class** (``scheduling.failures``), which the retry rules key on;
* the **error text**, cut to the length the store keeps (``api.error_text``);
* the **retry delay**: exponential backoff with full jitter from the run's own
  ``backoffBaseSeconds``/``backoffCapSeconds`` (``scheduling.backoff``), used only if the
  failure's rule retries the run at all;
* a **timeout's detail**: ``Timeout`` unless told otherwise, whoever timed the attempt out (a
  runner's executor or the pod launcher's deadline), so `sundial runs` and the JobRun's
  reason say it timed out.
"""

from __future__ import annotations

from sundial.api import error_text
from sundial.scheduling import backoff, failures
from sundial.store import claims

__all__ = [
    "MAX_DETAIL_CHARS",
    "TIMEOUT_DETAIL",
    "cancelled",
    "crashed",
    "failed",
    "succeeded",
    "timed_out",
]

#: The ``failure_detail`` of an attempt that timed out (``runner.outcomes.FailureDetail.TIMEOUT``
#: is this string).
TIMEOUT_DETAIL = "Timeout"

#: The longest ``failure_detail`` the store keeps (its column's check).
MAX_DETAIL_CHARS = 64


def succeeded(run: claims.ClaimedRun) -> claims.Finish:
    return claims.Finish(run.id, run.attempt)


def failed(
    run: claims.ClaimedRun,
    error: str,
    failure: failures.FailureClass = failures.FailureClass.ERROR,
    *,
    detail: str | None = None,
    rng: backoff.RandomSource | None = None,
) -> claims.Finish:
    """A failed attempt of class ``failure``, with the delay its retry (if any) waits."""
    if detail is None and failure == failures.FailureClass.TIMEOUT:
        detail = TIMEOUT_DETAIL
    delay = backoff.delay_seconds(
        run.retries_used + 1,
        base_seconds=run.backoff_base_seconds,
        cap_seconds=run.backoff_cap_seconds,
        rng=rng,
    )
    return claims.Finish(
        run.id,
        run.attempt,
        failures.FailureClass(failure),
        error_text.truncate(error),
        delay,
        detail,
    )


def timed_out(
    run: claims.ClaimedRun,
    detail: str | None = None,
    *,
    timeout_seconds: float | None = None,
    rng: backoff.RandomSource | None = None,
) -> claims.Finish:
    """Retried while maxRetries lasts; then the run ends ``timed_out`` (not dead-lettered).

    ``last_error`` names the attempt and the limit it exceeded (``timeout_seconds``, the one
    that applied; the run's own when not given), then ``detail`` (what the executor did about
    it), so a reader of the final state sees which timeout fired.
    """
    limit = run.timeout_seconds if timeout_seconds is None else timeout_seconds
    shown = "the default" if limit is None else f"{limit:g}"
    message = f"attempt {run.attempt} exceeded timeoutSeconds={shown}"
    if detail:
        message = f"{message}: {detail}"
    return failed(run, message, failures.FailureClass.TIMEOUT, rng=rng)


def crashed(
    run: claims.ClaimedRun,
    error: str,
    *,
    detail: str | None = None,
    rng: backoff.RandomSource | None = None,
) -> claims.Finish:
    return failed(run, error, failures.FailureClass.CRASH, detail=detail, rng=rng)


def cancelled(run: claims.ClaimedRun, reason: str = "cancelled on request") -> claims.Finish:
    return claims.Finish(run.id, run.attempt, failures.FailureClass.CANCELLED, reason)
