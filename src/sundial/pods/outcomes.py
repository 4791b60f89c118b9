"""What a Pod's status says about its attempt, on the failure table of docs/design.md (pure).

``classify`` reads only the fields a kubelet (or kwok's stages, which copy them) writes:
``status.phase``, ``status.reason``, ``status.conditions`` and the containers'
``state.terminated`` / ``state.waiting``. It takes the Pod as the apiserver's JSON (a dict in
camelCase) or as a ``kubernetes.client.V1Pod``. The order of the checks is the contract:

1. ``Succeeded`` -> SUCCEEDED.
2. ``Failed``, in this order:

   ===================================================== =================== ==============
   what the Pod says                                     state               class (default)
   ===================================================== =================== ==============
   reason ``DeadlineExceeded``                           DEADLINE_EXCEEDED   timeout
   a container terminated with reason ``OOMKilled``      OOM_KILLED          oom
   ``DisruptionTarget=True``, or a pod reason of         DISRUPTED           infrastructure
   eviction, preemption or node loss
   ``deletionTimestamp`` set and its containers ended    GONE                podDeletionPolicy
   after the delete request (SIGTERM, or SIGKILL after
   the grace period: 143 or 137 ``Error``)
   any other non-zero exit, 137 included                 FAILED              error
   ===================================================== =================== ==============

   Only the runtime says what an OOM kill is: containerd and CRI-O set ``OOMKilled`` from the
   kernel's OOM event. Exit 137 alone means SIGKILL from anyone: the kubelet after a deleted
   Pod's grace period, an eviction, the process itself, a ``kill -9``; reading it as OOM (as
   this module once did) spent a deleted run's OOM budget and bumped its memory. Disruptions
   are checked before deletion because an evicted Pod is also deleted; deletion is checked
   before exit codes because a deleted Pod's container is killed. The delete request is
   ``deletionTimestamp`` minus ``deletionGracePeriodSeconds``: a container that finished
   before it failed on its own, and its exit code decides.

   The kubelet overwrites that record (docs/adr/0033-many-pods-ending-at-once.md): once the
   containers of a deleted Pod have stopped it writes the final status and deletes the Pod
   again with a grace period of 0, which the outcome finalizer turns into an update of
   ``deletionTimestamp`` to that moment and ``deletionGracePeriodSeconds`` to 0. Read after
   it, the container seems to have ended before the Pod was deleted. So the caller passes
   the earliest delete request it saw (``delete_requested_at``: the launcher remembers it
   from the step that first saw the Pod being deleted), and with a grace of 0 and nothing
   earlier known, a container stopped by a signal (exit 143 or 137) is taken to have been
   stopped by the deletion.
3. Not yet ended but being deleted (a ``deletionTimestamp``; the outcome finalizer keeps the
   object, docs/adr/0023-pod-outcome-finalizer.md): ``DisruptionTarget=True`` (an eviction
   through the Eviction API, a preemption) -> DISRUPTED at once; otherwise the kubelet's final
   status is waited for until ``deletion_slack`` after the deletion's grace period ended (the
   kubelet gives a container at least ``KUBELET_MINIMUM_GRACE``, whatever the Pod asks), then
   GONE (deleted by someone else, reason PodDeleted). A kubelet that reports in time gives the
   real end instead (a container that finished its work within the grace period SUCCEEDED).
4. Not yet ended: a container waiting for a reason that never heals by itself (image pull,
   config error) -> NEVER_STARTED at once; still ``Pending`` past ``start_timeout`` ->
   NEVER_STARTED (``Unschedulable`` when the scheduler said so); else RUNNING or PENDING.

A Pod that no longer exists is ``GONE`` (``classify(None)``): someone else deleted it (or
removed the outcome finalizer), so how it ended cannot be read any more.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubernetes import client

__all__ = [
    "DELETION_SLACK",
    "DISRUPTION_REASONS",
    "KUBELET_MINIMUM_GRACE",
    "NEVER_START_REASONS",
    "OOM_EXIT_CODE",
    "SIGKILL_EXIT_CODE",
    "SIGNAL_EXIT_CODES",
    "PodOutcome",
    "PodState",
    "as_dict",
    "classify",
    "latest_delete_request",
    "started_at",
]

#: 128 + SIGKILL. Not an OOM kill by itself: only the runtime's ``OOMKilled`` reason is.
SIGKILL_EXIT_CODE = 137
OOM_EXIT_CODE = SIGKILL_EXIT_CODE  # what an OOMKilled container exits with
#: How a container stopped by the kubelet exits: 128 + SIGTERM, 128 + SIGKILL.
SIGNAL_EXIT_CODES = frozenset({143, SIGKILL_EXIT_CODE})
#: How long past a deletion's grace period the kubelet's final status is waited for.
DELETION_SLACK = timedelta(seconds=5)
#: The kubelet stops a container no sooner than this after the delete request, even for a Pod
#: deleted with a grace period of 1 s (``minimumGracePeriodInSeconds`` in its runtime manager).
KUBELET_MINIMUM_GRACE = timedelta(seconds=2)
#: Waiting reasons a container does not recover from without a change to the Pod.
NEVER_START_REASONS = frozenset(
    {
        "ImagePullBackOff",
        "ErrImagePull",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
    }
)
#: Pod-level reasons for ending a Pod that are not the job's fault.
DISRUPTION_REASONS = frozenset(
    {"Evicted", "Preempting", "Preempted", "NodeLost", "NodeShutdown", "Shutdown", "Terminated"}
)


class PodState(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # a container exited non-zero
    OOM_KILLED = "oom_killed"
    DISRUPTED = "disrupted"  # evicted, preempted, node lost: not the job's fault
    NEVER_STARTED = "never_started"  # image pull, config error, unschedulable too long
    DEADLINE_EXCEEDED = "deadline_exceeded"  # activeDeadlineSeconds
    GONE = "gone"  # deleted by someone else before it ended

    @property
    def ended(self) -> bool:
        """The Pod will not run again: it succeeded, failed or is gone."""
        return self not in (PodState.PENDING, PodState.RUNNING)


@dataclass(frozen=True)
class PodOutcome:
    state: PodState
    #: The reason a person greps for: OOMKilled, Evicted, ImagePullBackOff, Error, Completed …
    reason: str
    exit_code: int | None = None
    container: str | None = None  # whose exit code or waiting reason this is
    message: str = ""
    #: (container, exit code) of every terminated container, for failurePolicy onExitCodes.
    exit_codes: tuple[tuple[str, int], ...] = ()
    #: (type, status) of every Pod condition, for failurePolicy onPodConditions.
    conditions: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """One line for last_error: what ended the attempt."""
        parts = [self.reason]
        if self.exit_code is not None:
            parts.append(f"exit code {self.exit_code}")
        if self.container:
            parts.append(f"container {self.container}")
        text = ", ".join(parts)
        return f"{text}: {self.message}" if self.message else text


_serializer = client.ApiClient.__new__(client.ApiClient)  # only its pure serialiser is used


def as_dict(pod: Mapping[str, Any] | Any) -> dict[str, Any]:
    """The Pod as the apiserver's JSON, whether given as a dict or a ``V1Pod``."""
    if isinstance(pod, Mapping):
        return dict(pod)
    serialized: dict[str, Any] = client.ApiClient.sanitize_for_serialization(  # type: ignore[no-untyped-call]
        _serializer, pod
    )
    return serialized


def classify(
    pod: Mapping[str, Any] | Any | None,
    *,
    now: datetime | None = None,
    start_timeout: timedelta | None = None,
    deletion_slack: timedelta = DELETION_SLACK,
    delete_requested_at: datetime | None = None,
) -> PodOutcome:
    """Where the Pod's attempt stands; see the module docstring for the order of the checks.

    ``delete_requested_at``: the earliest delete request of this Pod the caller saw (the
    ``latest_delete_request`` of an earlier read), because the kubelet's last delete
    overwrites the Pod's own record of it."""
    if pod is None:
        return PodOutcome(
            PodState.GONE, "PodDeleted", message="the Pod was deleted before it ended"
        )
    data = as_dict(pod)
    status = data.get("status") or {}
    phase = status.get("phase") or "Pending"
    pod_reason = status.get("reason") or ""
    conditions = tuple(
        (str(c.get("type")), str(c.get("status"))) for c in status.get("conditions") or []
    )
    statuses = list(status.get("initContainerStatuses") or []) + list(
        status.get("containerStatuses") or []
    )
    terminated = [
        (str(s.get("name")), s["state"]["terminated"])
        for s in statuses
        if (s.get("state") or {}).get("terminated")
    ]
    exit_codes = tuple((name, int(t.get("exitCode", 0))) for name, t in terminated)

    def outcome(state: PodState, reason: str, **details: Any) -> PodOutcome:
        return PodOutcome(state, reason, exit_codes=exit_codes, conditions=conditions, **details)

    if phase == "Succeeded":
        return outcome(PodState.SUCCEEDED, "Completed", exit_code=0)
    if phase == "Failed":
        message = str(status.get("message") or "")
        if pod_reason == "DeadlineExceeded":
            return outcome(PodState.DEADLINE_EXCEEDED, pod_reason, message=message)
        for name, term in terminated:
            if term.get("reason") == "OOMKilled":
                return outcome(
                    PodState.OOM_KILLED,
                    "OOMKilled",
                    exit_code=int(term.get("exitCode", OOM_EXIT_CODE)),
                    container=name,
                )
        if ("DisruptionTarget", "True") in conditions or pod_reason in DISRUPTION_REASONS:
            reason = pod_reason or _condition_reason(status, "DisruptionTarget") or "Disrupted"
            return outcome(PodState.DISRUPTED, reason, message=message)
        metadata = data.get("metadata") or {}
        deleted_at = _earliest(latest_delete_request(metadata), delete_requested_at)
        if deleted_at is not None:
            # A grace of 0 is a later delete's record (the kubelet's own, once the containers
            # stopped), unless the caller saw an earlier one the container outlived.
            overwritten = int(metadata.get("deletionGracePeriodSeconds") or 0) == 0
            for name, term in terminated:
                code = int(term.get("exitCode", 0))
                finished = _timestamp(term.get("finishedAt"))
                if code != 0 and (
                    finished is None
                    or finished >= deleted_at
                    or (overwritten and code in SIGNAL_EXIT_CODES)
                ):
                    killed = (
                        " and SIGKILLed after its grace period" if code == SIGKILL_EXIT_CODE else ""
                    )
                    return outcome(
                        PodState.GONE,
                        "PodDeleted",
                        exit_code=code,
                        container=name,
                        message=f"the Pod was deleted while it ran{killed}",
                    )
        for name, term in terminated:
            code = int(term.get("exitCode", 0))
            if code != 0:
                return outcome(
                    PodState.FAILED,
                    str(term.get("reason") or "Error"),
                    exit_code=code,
                    container=name,
                    message=str(term.get("message") or ""),
                )
        return outcome(PodState.FAILED, pod_reason or "Failed", message=message)

    metadata = data.get("metadata") or {}
    deleting = _timestamp(metadata.get("deletionTimestamp"))
    if deleting is not None:
        if ("DisruptionTarget", "True") in conditions:
            reason = _condition_reason(status, "DisruptionTarget") or "Disrupted"
            message = str((_condition(status, "DisruptionTarget") or {}).get("message") or "")
            return outcome(PodState.DISRUPTED, reason, message=message)
        requested = _earliest(latest_delete_request(metadata), delete_requested_at) or deleting
        killed_by = max(deleting, requested + KUBELET_MINIMUM_GRACE)
        if now is not None and now > killed_by + deletion_slack:
            return outcome(
                PodState.GONE, "PodDeleted", message="the Pod was deleted before it ended"
            )
        return outcome(PodState.RUNNING, "Terminating")

    for container_status in statuses:
        waiting = (container_status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in NEVER_START_REASONS:
            return outcome(
                PodState.NEVER_STARTED,
                str(waiting["reason"]),
                container=str(container_status.get("name")),
                message=str(waiting.get("message") or ""),
            )
    if phase == "Running":
        return outcome(PodState.RUNNING, "Running")
    created = _timestamp(data.get("metadata", {}).get("creationTimestamp"))
    if _past(created, now, start_timeout):
        unschedulable = _condition(status, "PodScheduled")
        if unschedulable and unschedulable.get("reason") == "Unschedulable":
            return outcome(
                PodState.NEVER_STARTED,
                "Unschedulable",
                message=str(unschedulable.get("message") or ""),
            )
        seconds = int(start_timeout.total_seconds()) if start_timeout else 0
        return outcome(
            PodState.NEVER_STARTED,
            "StartTimeout",
            message=f"the Pod did not start within {seconds} s (startTimeoutSeconds)",
        )
    return outcome(PodState.PENDING, pod_reason or "Pending")


def _past(created: datetime | None, now: datetime | None, limit: timedelta | None) -> bool:
    if created is None or now is None or limit is None:
        return False
    return now - created > limit


def started_at(pod: Mapping[str, Any] | Any | None) -> datetime | None:
    """When the kubelet took the Pod on (``status.startTime``, before its image pulls), the
    moment ``activeDeadlineSeconds`` counts from; None while it has not (Pending unscheduled,
    or gone)."""
    if pod is None:
        return None
    return _timestamp((as_dict(pod).get("status") or {}).get("startTime"))


def latest_delete_request(metadata: Mapping[str, Any]) -> datetime | None:
    """When the Pod's latest delete was asked for, by its ``metadata``, or None when it is not
    being deleted: ``deletionTimestamp`` is that moment plus the grace period, the time the
    kubelet SIGKILLs what is still running. The earliest delete's moment is lost once a
    shorter one (the kubelet's own, grace 0) comes after the grace period: a reader that
    needs it keeps the first value it read (see ``classify``)."""
    deadline = _timestamp(metadata.get("deletionTimestamp"))
    if deadline is None:
        return None
    return deadline - timedelta(seconds=int(metadata.get("deletionGracePeriodSeconds") or 0))


def _earliest(*moments: datetime | None) -> datetime | None:
    known = [moment for moment in moments if moment is not None]
    return min(known) if known else None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            found: Mapping[str, Any] = condition
            return found
    return None


def _condition_reason(status: Mapping[str, Any], kind: str) -> str | None:
    condition = _condition(status, kind)
    return None if condition is None else condition.get("reason")


def _timestamp(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
