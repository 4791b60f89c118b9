"""Why an attempt failed, and what each reason does to the run.

One table (``RULES``) decides, for every failure class, whether the run is retried, whether
the retry spends the job's ``maxRetries`` budget, and which terminal state the run ends in
when it is not retried. Infrastructure failures (an evicted Pod, a drained node) are not the
job's fault, so they draw on a separate, larger budget (``INFRASTRUCTURE_RETRY_LIMIT``) —
still bounded, so that nothing retries forever.

A class that is never retried ends the run at once in its ``terminal_state``; a retried class
ends it there once its budget is spent. That is ``dead_lettered`` (visible, replayable) for
every retried class but one: a run whose last attempt timed out ends ``timed_out`` (DESIGN.md
section 6; ADR 0001, decision 7). The store reads any other ``terminal_state`` of a retried
class as ``dead_lettered`` (migration 0050), so a poison run never ends plain ``failed``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "INFRASTRUCTURE_RETRY_LIMIT",
    "RULES",
    "FailureClass",
    "FailureRule",
    "rule_for",
]

# Evictions and preemptions retried without spending maxRetries, at most this many per run.
INFRASTRUCTURE_RETRY_LIMIT = 10


class FailureClass(enum.StrEnum):
    ERROR = "error"  # the handler raised or exited non-zero
    TIMEOUT = "timeout"  # the per-job timeout elapsed
    CRASH = "crash"  # the executing process died (segfault, BrokenProcessPool)
    OOM = "oom"  # OOMKilled
    INFRASTRUCTURE = "infrastructure"  # evicted, preempted, node lost
    LEASE_EXPIRED = "lease_expired"  # the worker stopped heartbeating; found by the reaper
    START_FAILURE = "start_failure"  # a Pod never started: image pull, config, unschedulable
    PERMANENT = "permanent"  # failurePolicy said Fail, or the handler said not to retry
    CANCELLED = "cancelled"  # a person or a Replace policy cancelled it
    UPSTREAM_FAILED = "upstream_failed"  # a run it depends on did not complete


@dataclass(frozen=True)
class FailureRule:
    retryable: bool
    counts_against_max_retries: bool
    terminal_state: str  # the run's state when this class ends it: at once, or retries spent


RULES: dict[FailureClass, FailureRule] = {
    FailureClass.ERROR: FailureRule(True, True, "dead_lettered"),
    FailureClass.TIMEOUT: FailureRule(True, True, "timed_out"),
    FailureClass.CRASH: FailureRule(True, True, "dead_lettered"),
    FailureClass.OOM: FailureRule(True, True, "dead_lettered"),
    FailureClass.INFRASTRUCTURE: FailureRule(True, False, "dead_lettered"),
    # A handler that kills its worker every time must not loop forever, so this counts.
    FailureClass.LEASE_EXPIRED: FailureRule(True, True, "dead_lettered"),
    FailureClass.START_FAILURE: FailureRule(False, True, "failed"),
    FailureClass.PERMANENT: FailureRule(False, True, "failed"),
    FailureClass.CANCELLED: FailureRule(False, False, "cancelled"),
    FailureClass.UPSTREAM_FAILED: FailureRule(False, False, "failed"),
}


def rule_for(failure: FailureClass | str) -> FailureRule:
    """The rule of a failure class; an unknown name raises ``ValueError`` listing the valid ones."""
    try:
        return RULES[FailureClass(failure)]
    except ValueError:
        valid = ", ".join(c.value for c in FailureClass)
        raise ValueError(f"unknown failure class {failure!r}: use one of {valid}") from None
