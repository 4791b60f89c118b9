"""What the pod launcher knows of one attempt it holds and its Pod; and how it tells that Pod
from one that only wears its labels."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sundial.api import common
from sundial.pods import outcomes, pod_api
from sundial.pods.outcomes import PodOutcome
from sundial.store import claims, pod_runs

__all__ = ["PodAttempt", "is_its_pod", "remember_delete_request", "timeout_seconds"]


@dataclass
class PodAttempt:
    """One attempt the launcher holds, from its claim until its finish commits. Not the
    runner's ``in_flight.Attempt``: what the two share is in ``sundial.attempt``."""

    run: claims.ClaimedRun
    context: pod_runs.LaunchContext
    pod_name: str
    namespace: str
    claimed_at: datetime
    created_at: datetime | None = None  # None until the Pod exists
    #: The UID of the Pod this launcher created (from the create's answer) or adopted (found
    #: under the attempt's own name in the run's namespace). Only that object's status is the
    #: attempt's outcome: labels alone can be written by anyone who may create a Pod anywhere.
    pod_uid: str | None = None
    #: The Pod's ``status.startTime`` once the kubelet has taken it on: our own timeout counts
    #: from it, as ``activeDeadlineSeconds`` does.
    started_at: datetime | None = None
    #: How the attempt ended, kept until its finish commits: a failed write is retried on the
    #: next step with the same outcome, even once the Pod has been deleted.
    ended: PodOutcome | None = None
    #: Look for existing Pods of the run before creating one: any retry (an older attempt's
    #: Pod may live), an adopted run, or a create that met a 409. A first attempt just claimed
    #: cannot have a Pod yet, which saves a LIST per launch.
    look_first: bool = True
    #: The ownerReference its Pod was created with (or adopted with), if any.
    owner: Mapping[str, Any] | None = None
    #: Set when the Pod went with its deleted owner: the attempt ends cancelled with this.
    cancel_reason: str | None = None
    #: An adopted attempt whose Pod the store says was created (its name is recorded): if it
    #: is not found, it was deleted, and is not created again.
    pod_recorded: bool = False
    #: The UID recorded with that name, when it was: only that object is the attempt's Pod.
    recorded_uid: str | None = None
    #: Taken over from a launcher with the same worker id (a restart), not claimed now.
    adopted: bool = False
    #: Annotated on the Pod this launcher creates (``manifests.ANNOTATION_LAUNCH_ID``).
    launch_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    #: The earliest delete request of its Pod seen on a step: the kubelet's own last delete
    #: overwrites the Pod's record of it (``outcomes.classify``, docs/adr/0033).
    delete_requested_at: datetime | None = None
    #: The launcher's clock (epoch seconds) when the claim or the last heartbeat that extended
    #: the lease was sent (``attempt.heartbeats``); an adopted attempt is due at once.
    extended_at: float = -math.inf

    @property
    def key(self) -> tuple[int, int]:
        return (self.run.id, self.run.attempt)


def is_its_pod(attempt: PodAttempt, pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` is the Pod this launcher made for ``attempt``: in the run's namespace,
    under the attempt's deterministic name, and (once known) with the UID the create returned
    or the adoption found. The Job controller matches its Pods the same way, by owner UID inside
    the Job's namespace, never by labels alone."""
    metadata = pod.get("metadata") or {}
    if metadata.get("namespace") != attempt.namespace or metadata.get("name") != attempt.pod_name:
        return False
    return attempt.pod_uid is None or pod_api.uid_of(pod) == attempt.pod_uid


def remember_delete_request(attempt: PodAttempt, pod: Mapping[str, Any] | None) -> None:
    """Keep the earliest delete request of the attempt's Pod read so far."""
    if pod is None:
        return
    requested = outcomes.latest_delete_request(pod.get("metadata") or {})
    if requested is not None and (
        attempt.delete_requested_at is None or requested < attempt.delete_requested_at
    ):
        attempt.delete_requested_at = requested


def timeout_seconds(run: claims.ClaimedRun) -> int:
    """The manifest's timeoutSeconds, else the default: a Pod's handler registration is not
    visible from here, so ``@sundial.job(timeout_seconds=...)`` does not apply to Pod runs."""
    if run.timeout_seconds is None:
        return common.DEFAULT_TIMEOUT_SECONDS
    return run.timeout_seconds
