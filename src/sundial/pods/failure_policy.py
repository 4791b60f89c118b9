"""A failed Pod attempt, its job's ``failurePolicy`` rules, and what the store is told (pure).

Rules are read as stored in ``job_definitions.failure_policy`` (the API's camelCase JSON) and
evaluated in order; the first that matches decides. They apply to attempts that ended FAILED,
OOM_KILLED or DISRUPTED (what a Kubernetes Job's ``podFailurePolicy`` sees). Matchers:

* ``onExitCodes`` ``{containerName?, operator: In|NotIn, values}``: over the containers that
  terminated with a non-zero code (only the named one when given), ``In`` matches when one
  code is in ``values``, ``NotIn`` when one is not (Kubernetes' semantics; 0 never matches).
* ``onPodConditions`` ``[{type, status}]``: one of them is on the Pod.
* ``onOOMKilled: true``: the attempt was OOMKilled (the runtime's reason; exit 137 alone is a
  SIGKILL, which is an error, or a deletion when the Pod was being deleted).

Actions, as failure classes of ``sundial.scheduling.failures``:

* ``Retry`` -> retried with backoff, counted against ``maxRetries`` (``error``); an OOMKilled
  attempt stays ``oom``, so it spends the job's ``oom.maxRetries`` and the memory bump applies.
* ``Ignore`` -> retried without counting against ``maxRetries``: Kubernetes Job's meaning
  ("do not count towards backoffLimit; create a replacement"), NOT "treat as success". It
  uses the ``infrastructure`` class, whose separate budget is capped, so an always-ignored
  failure still ends (dead-lettered) instead of looping.
* ``Fail`` -> ``permanent``: the run fails now, no retry.
* ``Quarantine`` -> ``permanent``, and the launcher quarantines the run's schedule.

No rule matched: the default of the failure table (docs/design.md) - a non-zero exit is
``error``, OOMKilled ``oom`` (its own budget, ``oom.maxRetries``), a disruption
``infrastructure``, a Pod that never started ``start_failure``, a deadline ``timeout``.

A Pod deleted by someone else before it ended (``GONE``) is not a failure of the workload, so
``failurePolicy`` rules do not see it (nor does a Kubernetes Job's ``podFailurePolicy``); the
job's ``podDeletionPolicy`` decides instead: ``Retry`` (the default) -> ``crash``, retried and
counted (a person deleting a Pod is read as "try again", and a Pod deleted every time still
ends dead-lettered); ``Cancel`` -> ``cancelled``: the run ends as if cancelled on request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sundial.pods.outcomes import PodOutcome, PodState
from sundial.scheduling.failures import FailureClass

__all__ = ["DEFAULT_CLASSES", "POD_DELETION_POLICIES", "Verdict", "decide", "matching_rule"]

DEFAULT_CLASSES: dict[PodState, FailureClass] = {
    PodState.FAILED: FailureClass.ERROR,
    PodState.OOM_KILLED: FailureClass.OOM,
    PodState.DISRUPTED: FailureClass.INFRASTRUCTURE,
    PodState.NEVER_STARTED: FailureClass.START_FAILURE,
    PodState.DEADLINE_EXCEEDED: FailureClass.TIMEOUT,
    PodState.GONE: FailureClass.CRASH,
}
_POLICY_APPLIES = frozenset({PodState.FAILED, PodState.OOM_KILLED, PodState.DISRUPTED})
#: podDeletionPolicy -> the class of an attempt whose Pod someone else deleted.
POD_DELETION_POLICIES: dict[str, FailureClass] = {
    "Retry": FailureClass.CRASH,
    "Cancel": FailureClass.CANCELLED,
}


@dataclass(frozen=True)
class Verdict:
    """What to record: ``failure`` None means the attempt succeeded."""

    failure: FailureClass | None
    #: The matching rule's action, or ``podDeletionPolicy``'s for a deleted Pod (``Cancel``);
    #: None when no rule matched and the default applied.
    action: str | None = None
    quarantine: bool = False


def matching_rule(
    rules: Sequence[Mapping[str, Any]], outcome: PodOutcome
) -> Mapping[str, Any] | None:
    """The first rule that matches ``outcome``, or None."""
    if outcome.state not in _POLICY_APPLIES:
        return None
    for rule in rules:
        if _matches(rule, outcome):
            return rule
    return None


def decide(
    rules: Sequence[Mapping[str, Any]],
    outcome: PodOutcome,
    *,
    pod_deletion_policy: str = "Retry",
) -> Verdict:
    """The store's failure class for a terminal ``outcome``; see the module docstring."""
    if outcome.state is PodState.SUCCEEDED:
        return Verdict(None)
    if not outcome.state.ended:
        raise ValueError(f"a {outcome.state} Pod has not ended; classify it again later")
    if outcome.state is PodState.GONE:
        try:
            failure = POD_DELETION_POLICIES[pod_deletion_policy]
        except KeyError:
            raise ValueError(
                f"unknown podDeletionPolicy {pod_deletion_policy!r}: use Retry or Cancel"
            ) from None
        return Verdict(failure, "Cancel" if failure is FailureClass.CANCELLED else None)
    rule = matching_rule(rules, outcome)
    if rule is None:
        return Verdict(DEFAULT_CLASSES[outcome.state])
    action = str(rule.get("action"))
    if action == "Retry":
        oom = outcome.state is PodState.OOM_KILLED
        return Verdict(FailureClass.OOM if oom else FailureClass.ERROR, action)
    if action == "Ignore":
        return Verdict(FailureClass.INFRASTRUCTURE, action)
    if action == "Fail":
        return Verdict(FailureClass.PERMANENT, action)
    if action == "Quarantine":
        return Verdict(FailureClass.PERMANENT, action, quarantine=True)
    raise ValueError(
        f"unknown failurePolicy action {action!r}: use Retry, Ignore, Fail or Quarantine"
    )


def _matches(rule: Mapping[str, Any], outcome: PodOutcome) -> bool:
    if rule.get("onOOMKilled"):
        return outcome.state is PodState.OOM_KILLED
    exit_rule = rule.get("onExitCodes")
    if exit_rule:
        container = exit_rule.get("containerName")
        values = {int(v) for v in exit_rule.get("values") or []}
        codes = [
            code
            for name, code in outcome.exit_codes
            if code != 0 and (container is None or name == container)
        ]
        if exit_rule.get("operator") == "NotIn":
            return any(code not in values for code in codes)
        return any(code in values for code in codes)
    wanted = rule.get("onPodConditions") or []
    present = set(outcome.conditions)
    return any((str(c.get("type")), str(c.get("status", "True"))) in present for c in wanted)
