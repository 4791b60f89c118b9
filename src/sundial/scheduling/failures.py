"""Why an attempt failed, and what each reason does to the run.

One table (``RULES``) decides, for every failure class, whether the run is retried, whether
the retry spends the job's ``maxRetries`` budget, and which state the run ends in
when it is not retried. Two classes draw on budgets of their own instead (``FailureRule.budget``):

* Infrastructure failures (an evicted Pod, a drained node) are not the job's fault, so they
  draw on a separate, larger budget (``INFRASTRUCTURE_RETRY_LIMIT``) — still bounded, so that
  nothing retries forever.
* An OOMKilled attempt spends the job's ``oom.maxRetries`` (docs/design.md: "its own
  retry budget"), copied to the run at submit; the store picks that budget by the class name
  (migration 0060), so a job that runs out of memory cannot use up the retries meant for its
  errors, nor the other way round. ``oom`` never spends ``maxRetries``.

A class that is never retried ends the run at once in its ``finished_state``; a retried class
ends it there once its budget is spent. That is ``dead_lettered`` (visible, replayable) for
every retried class but one: a run whose last attempt timed out ends ``timed_out`` (docs/design.md;
ADR 0001, decision 7). The store reads any other ``finished_state`` of a retried
class as ``dead_lettered`` (migration 0050), so a poison run never ends plain ``failed``.

``FailureClass`` is the one word for how an attempt ended as far as its run is concerned; the
store keeps it in ``failure_reason``. What exactly happened is a detail beside it: the runner's
``outcomes.FailureDetail`` (BadArgs, UnknownHandler …) in ``failure_detail``, a Pod's own
reason (OOMKilled, Evicted …) in ``pod_reason`` (ADR 0020).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sundial.scheduling.run_state import RunState

__all__ = [
    "INFRASTRUCTURE_RETRY_LIMIT",
    "RULES",
    "Budget",
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


class Budget(enum.StrEnum):
    """Which retry budget a retried failure spends."""

    MAX_RETRIES = "maxRetries"  # the job's retry.maxRetries (job_runs.retries_used)
    INFRASTRUCTURE = "infrastructure"  # INFRASTRUCTURE_RETRY_LIMIT (infra_retries_used)
    OOM = "oom"  # the job's oom.maxRetries (oom_retries_used)
    LOST_LEASES = "lostLeases"  # the run's max_lost_leases (lease_expiries); ADR 0016
    NONE = "none"  # not retried


@dataclass(frozen=True)
class FailureRule:
    retryable: bool
    budget: Budget  # what a retry spends; NONE for a class that is never retried
    finished_state: RunState  # the run's state when this class ends it: at once, or retries spent

    @property
    def counts_against_max_retries(self) -> bool:
        """What the store's finish is told (``p_counts``); the OOM budget it chooses by the
        class name, and a class that is never retried spends nothing either way."""
        return self.budget is Budget.MAX_RETRIES


RULES: dict[FailureClass, FailureRule] = {
    FailureClass.ERROR: FailureRule(True, Budget.MAX_RETRIES, RunState.DEAD_LETTERED),
    FailureClass.TIMEOUT: FailureRule(True, Budget.MAX_RETRIES, RunState.TIMED_OUT),
    FailureClass.CRASH: FailureRule(True, Budget.MAX_RETRIES, RunState.DEAD_LETTERED),
    FailureClass.OOM: FailureRule(True, Budget.OOM, RunState.DEAD_LETTERED),
    FailureClass.INFRASTRUCTURE: FailureRule(True, Budget.INFRASTRUCTURE, RunState.DEAD_LETTERED),
    # The runner died or stalled, which says nothing about the job: not maxRetries. A handler
    # that kills its runner every time must not loop forever, so it spends a budget of its own
    # (the reaper applies it: store/queries/reap_expired_leases.sql, ADR 0016).
    FailureClass.LEASE_EXPIRED: FailureRule(True, Budget.LOST_LEASES, RunState.DEAD_LETTERED),
    FailureClass.START_FAILURE: FailureRule(False, Budget.NONE, RunState.FAILED),
    FailureClass.PERMANENT: FailureRule(False, Budget.NONE, RunState.FAILED),
    FailureClass.CANCELLED: FailureRule(False, Budget.NONE, RunState.CANCELLED),
    FailureClass.UPSTREAM_FAILED: FailureRule(False, Budget.NONE, RunState.FAILED),
}


def rule_for(failure: FailureClass | str) -> FailureRule:
    """The rule of a failure class; an unknown name raises ``ValueError`` listing the valid ones."""
    try:
        return RULES[FailureClass(failure)]
    except ValueError:
        valid = ", ".join(c.value for c in FailureClass)
        raise ValueError(f"unknown failure class {failure!r}: use one of {valid}") from None
