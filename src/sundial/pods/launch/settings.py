"""What a host gives the pod launcher and hears back from it. The operator hosts it with hooks
(owner references, Events); ``sundial pod-launcher`` runs it alone, without."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sundial.pods import manifests, outcomes
from sundial.pods.outcomes import PodOutcome
from sundial.store import claims

__all__ = ["OWNER_DELETED", "AttemptEnd", "LaunchHooks", "LauncherSettings"]

#: The reason recorded for a Pod that went with its deleted owner (``deleted_with_owner``).
OWNER_DELETED = "OwnerDeleted"


@dataclass(frozen=True)
class LauncherSettings:
    worker: str
    queues: Sequence[str] = ("default",)
    #: Where the launcher looks for its Pods; None: every namespace (a cluster-wide LIST).
    namespaces: Sequence[str] | None = None
    lease_seconds: float = claims.DEFAULT_LEASE_SECONDS
    poll_interval_seconds: float = 1.0
    #: Attempts held at once (Pods live or starting).
    max_pods: int = 200
    #: Attempts held at once in one namespace (None: only ``max_pods``), so one tenant whose
    #: Pods run long cannot hold every Pod slot.
    max_pods_per_namespace: int | None = None
    #: Per namespace, its share of the Pods claimed against the others' while several have
    #: pod runs waiting (a namespace not named weighs 1), as a runner's ``--namespace-weight``.
    namespace_weights: Mapping[str, float] = field(default_factory=dict)
    #: Of ``max_pods`` (``claims.RESERVE_FROM_SLOTS`` or more), the Pods that only a namespace
    #: behind the one this launcher holds most of may take, where it serves several: beside
    #: another namespace's flood of long Pods, a quieter namespace's Pod starts at once
    #: instead of waiting for one of them to end (``claims.claim``'s ``reserved``).
    reserved_pods: int = 1
    claim_batch: int = 50
    #: Used when the job sets no startTimeoutSeconds.
    default_start_timeout_seconds: float = 300.0
    delete_grace_seconds: int = 5
    #: Our clock's timeout fires this long after activeDeadlineSeconds should have.
    timeout_slack_seconds: float = 5.0
    #: How long past a deleted Pod's grace period the kubelet's final status is waited for
    #: (then the Pod is GONE, reason PodDeleted, with no exit code). A loaded node reports late:
    #: 20 Pods deleted at once at a load of 20-30 reported 2.7-10.8 s after the delete.
    deletion_slack_seconds: float = outcomes.DELETION_SLACK.total_seconds()
    manifest: manifests.ManifestSettings = field(default_factory=manifests.ManifestSettings)
    #: How long a namespace's Pod Security label and allowed ServiceAccounts are trusted.
    namespace_ttl_seconds: float = 30.0
    #: Follow the tracked Pods with a watch that wakes the loop (off: poll only).
    watch: bool = True
    #: Steps woken by the watch are at least this far apart, so a burst of Pod events costs a
    #: few relists, not one per event.
    min_step_interval_seconds: float = 0.1
    #: Finalizer releases in flight at once.
    release_concurrency: int = 16


@dataclass(frozen=True)
class AttemptEnd:
    """An attempt whose Pod ended (or never started), after its finish committed."""

    run_id: int
    attempt: int
    job_id: str
    namespace: str
    job_name: str
    pod_name: str
    outcome: PodOutcome
    #: The run's state after the finish: ``pending``/``retry_wait`` (retried), ``completed``,
    #: ``failed``, ``dead_lettered`` ...; None if the store did not say.
    run_state: str | None
    #: The run's idempotency key (per run; a user JobRun's run is found by it).
    idempotency_key: str | None = None


class LaunchHooks(Protocol):
    """What a host adds to the launcher (see the module docstring)."""

    async def owner(
        self, namespace: str, job_name: str, job_id: str, idempotency_key: str
    ) -> Mapping[str, Any] | None:
        """The ownerReference for the Pods of the run with ``idempotency_key`` of the job, or
        None for none."""

    async def former_owner(
        self, namespace: str, job_name: str, job_id: str, idempotency_key: str
    ) -> Mapping[str, Any] | None:
        """The ownerReference a Pod deleted while no launcher ran most likely had, looked up
        afresh (it went with the Pod): the run's user JobRun even while it is being deleted,
        else as ``owner``. Asked once per such Pod, after a restart, so it may LIST."""

    async def deleted_with_owner(self, namespace: str, owner: Mapping[str, Any]) -> str | None:
        """For a Pod that is gone and had the ownerReference ``owner``: the reason its run is
        cancelled if the Pod went because its owner was deleted (the owner is gone or being
        deleted), else None (the job's ``podDeletionPolicy`` applies)."""

    async def ended(self, end: AttemptEnd) -> None:
        """Called once per committed end of an attempt this launcher observed; never raises."""

    async def forged(self, pod: Mapping[str, Any], run_id: int, attempt: int) -> None:
        """Called once per Pod that carries the labels of an attempt this launcher holds but is
        not that attempt's Pod (another namespace, another name, another UID): it changed
        nothing, and the host reports it (a Warning Event on it); never raises."""
